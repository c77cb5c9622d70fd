"""Production, started with one command (``make serve-prod``; README, "Production").

    python -m kafkaviz.serve [--processes 2] [--host 127.0.0.1] [--port 8000] [--state-dir DIR]

1. ``REDIS_URL`` unset: starts Debian's ``redis-server`` on a free loopback port.
   ``DATABASE_URL`` unset: creates a PostgreSQL cluster (``initdb``) in the state
   directory and starts it on a free loopback port (as the ``postgres`` user when run
   as root; PostgreSQL refuses to run as root).
2. ``DJANGO_SECRET_KEY`` unset: generates one for this run (all processes share it;
   a real deployment sets its own), and runs with ``DJANGO_DEBUG=0``.
3. ``manage.py migrate`` and ``collectstatic`` (WhiteNoise then serves hashed,
   compressed files: ``KAFKAVIZ_STATIC_MANIFEST=1``).
4. Starts ``--processes`` daphne processes on ports ``port .. port+N-1``, each with
   its own sandbox data directory, and waits; a process that dies is started again on
   its port. Ctrl-C / SIGTERM stops everything it started, by process id.

A sandbox's engine lives in one process, but its sockets may be in any: requests are
forwarded to the owner through Redis, and a dead owner's sandboxes are taken over from
their saved runs (kafkaviz/live/router.py; docs/web.md, "Several processes"). So a
load balancer needs no stickiness.
The helpers :func:`start_redis` and :func:`start_postgres` are also what the tests use.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
PG_BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen | None = None, what: str = "server") -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on port {port} within {timeout:g} s")
            time.sleep(0.05)


def stop_process(proc: subprocess.Popen, timeout: float = 10) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Service:
    """Something started for this run: its URL, its process id and how to stop it."""
    name: str
    url: str
    pid: int
    stop: Callable[[], None] = field(repr=False)


def start_redis(state_dir: Path) -> Service:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server), or set REDIS_URL")
    port = free_port()
    state_dir.mkdir(parents=True, exist_ok=True)
    log = open(state_dir / "redis.log", "wb")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(state_dir)], stdout=log, stderr=subprocess.STDOUT)
    wait_for_port(port, 10, proc, "redis-server")

    def stop() -> None:
        stop_process(proc)
        log.close()

    return Service("redis", f"redis://127.0.0.1:{port}/0", proc.pid, stop)


def _pg_binary(name: str) -> str:
    for directory in PG_BIN_DIRS:
        candidate = Path(directory) / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} was not found (looked in {', '.join(PG_BIN_DIRS)} and PATH); "
                           "install PostgreSQL 15 or set DATABASE_URL")
    return found


def start_postgres(state_dir: Path) -> Service:
    """A throwaway PostgreSQL cluster in ``state_dir/pg`` on a free loopback port, trust
    authentication on loopback only. Stopped with ``pg_ctl stop`` (then by pid)."""
    initdb, pg_ctl = _pg_binary("initdb"), _pg_binary("pg_ctl")
    prefix: list[str] = []
    cleanup: Path | None = None
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: run it as "postgres", in a directory of its
        # own (the state directory's parents may not be open to that user).
        user = pwd.getpwnam("postgres")
        cleanup = Path(tempfile.mkdtemp(prefix="kafkaviz-pg-"))
        os.chown(cleanup, user.pw_uid, user.pw_gid)
        state_dir.mkdir(parents=True, exist_ok=True)
        (state_dir / "where.txt").write_text(f"PostgreSQL runs in {cleanup} (as the postgres user)\n")
        state_dir = cleanup
        prefix = ["runuser", "-u", "postgres", "--"]
    data, sockets = state_dir / "pg", state_dir / "pg-socket"
    for path in (data, sockets):
        subprocess.run([*prefix, "mkdir", "-p", str(path)], check=True)
    done = subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                           "--no-sync"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr.strip()}")
    port = free_port()
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run([*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(data / "server.log"),
                    "-w", "-t", "30", "start"], check=True, stdout=subprocess.DEVNULL)
    pid = int((data / "postmaster.pid").read_text().split()[0])

    def stop() -> None:
        result = subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "-t", "20", "stop"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if result.returncode != 0:
            try:
                os.kill(pid, signal.SIGQUIT)
            except ProcessLookupError:
                pass
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)

    return Service("postgres", f"postgres://postgres@127.0.0.1:{port}/postgres", pid, stop)


def healthy(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer /healthz within {timeout:g} s")
        time.sleep(0.2)


def raise_open_files_limit(want: int = 65536) -> int:
    """An active lesson-2 sandbox keeps ~30 files open (segments and indexes of two
    partitions), so MAX_SANDBOXES=200 needs several thousand descriptors; many systems
    start processes with a soft limit of 1024. Raise the soft limit (for this process and
    the daphne processes it starts) towards the hard one; returns the new soft limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


#: More daphne processes than this on one machine is a typo, not a plan.
MAX_PROCESSES = 64


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", default=os.environ.get("PROCESSES", "2"), help=f"1 to {MAX_PROCESSES}")
    ap.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    ap.add_argument("--port", default=os.environ.get("PORT", "8000"), help="first port of the range")
    ap.add_argument("--state-dir", type=Path, default=None,
                    help="where Redis/PostgreSQL data, logs and sandboxes go (default: a new temp dir)")
    args = ap.parse_args(argv)
    # Checked before anything starts (the defaults come from PROCESSES / PORT, so not by argparse's type=).
    try:
        args.processes, args.port = int(args.processes), int(args.port)
    except ValueError:
        ap.error(f"--processes and --port (PROCESSES, PORT) must be integers, got {args.processes!r}, {args.port!r}")
    if not 1 <= args.processes <= MAX_PROCESSES:
        ap.error(f"--processes must be between 1 and {MAX_PROCESSES}, got {args.processes}")
    if not 1 <= args.port <= 65536 - args.processes:
        ap.error(f"--port must leave room for {args.processes} ports below 65536, got {args.port}")
    state = args.state_dir or Path(tempfile.mkdtemp(prefix="kafkaviz-prod-"))
    state.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("DJANGO_DEBUG", "0")
    if not env.get("DJANGO_SECRET_KEY"):
        env["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
        print("serve: DJANGO_SECRET_KEY is not set; generated one for this run (set your own in production)")
    env.setdefault("DJANGO_ALLOWED_HOSTS", f"{args.host},127.0.0.1,localhost")
    env["KAFKAVIZ_STATIC_MANIFEST"] = "1"
    data_root = Path(env.get("KAFKAVIZ_DATA_DIR") or state / "sandboxes")

    limit = raise_open_files_limit()
    if limit < 8192:
        print(f"serve: only {limit} open files allowed per process (ulimit -n); with many sandboxes raise it")
    started: list[Service] = []
    servers: list[subprocess.Popen] = []
    stopping = {"now": False}

    def on_signal(signum, frame) -> None:  # noqa: ARG001
        stopping["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if not env.get("REDIS_URL"):
            started.append(start_redis(state / "redis"))
            env["REDIS_URL"] = started[-1].url
        if not env.get("DATABASE_URL"):
            started.append(start_postgres(state / "postgres"))
            env["DATABASE_URL"] = started[-1].url
        for service in started:
            print(f"serve: {service.name} started (pid {service.pid}) at {service.url}")
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
        subprocess.run([*manage, "collectstatic", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
        # The lab results lessons link to: computed in the background at the first start, then kept
        # (KAFKAVIZ_LAB_DIR); it outlives this process on purpose, and ends by itself.
        # KAFKAVIZ_LAB_PRECOMPUTE=0 skips it (tests that start serve-prod: a Spark sweep outliving
        # the test would load the machine and could not be stopped by the test's process id).
        if env.get("KAFKAVIZ_LAB_PRECOMPUTE", "1") != "0":
            with open(state / "lab-precompute.log", "ab") as lab_log:
                subprocess.Popen([*manage, "lab", "precompute"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                 stdout=lab_log, stderr=subprocess.STDOUT, start_new_session=True)
        def start_daphne(port: int) -> subprocess.Popen:
            # The access log is ours, in JSON (kafkaviz/accesslog.py); daphne's text one is off.
            proc_env = {**env, "KAFKAVIZ_DATA_DIR": str(data_root / str(port)), "KAFKAVIZ_ACCESS_LOG": "1"}
            log = open(state / f"daphne-{port}.log", "ab")
            return subprocess.Popen([sys.executable, "-m", "daphne", "-v", "0", "-b", args.host, "-p", str(port),
                                     "kafkaviz.asgi:application"], cwd=REPO, env=proc_env,
                                    stdout=log, stderr=subprocess.STDOUT)

        def write_state() -> None:
            (state / "serve.json").write_text(json.dumps({
                "pid": os.getpid(), "urls": urls, "servers": [p.pid for p in servers],
                "services": {s.name: {"pid": s.pid, "url": s.url} for s in started}}, indent=2))

        ports = [args.port + i for i in range(args.processes)]
        servers.extend(start_daphne(port) for port in ports)
        urls = [f"http://{args.host}:{port}" for port in ports]
        for url in urls:
            healthy(url.replace(f"//{args.host}:", "//127.0.0.1:") if args.host in ("0.0.0.0", "::") else url, 30)
        write_state()
        print(f"serve: kafkaviz is up on {', '.join(urls)} (logs and data in {state}); Ctrl-C stops it", flush=True)
        while not stopping["now"]:
            for i, proc in enumerate(servers):
                if proc.poll() is not None and not stopping["now"]:
                    # A process died: start another on its port. Its sandboxes are taken over by the
                    # next request in a live process (kafkaviz/live/router.py), from their saved runs.
                    print(f"serve: daphne pid {proc.pid} on port {ports[i]} exited with {proc.returncode}; "
                          "starting it again", flush=True)
                    servers[i] = start_daphne(ports[i])
                    write_state()
            time.sleep(0.2)
        return 0
    finally:
        for proc in servers:
            stop_process(proc)
        for service in reversed(started):
            service.stop()
        print("serve: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
