"""Every shell command that README.md and docs/*.md show runs as written.

Which text is a command (the rule, also in docs/web.md, "Documented commands"):

1. In a fenced block tagged ``sh``, ``shell``, ``bash`` or ``console``, every line that is not
   blank or a ``#`` comment; a line ending in ``\\`` continues on the next; a leading ``$ `` is
   a prompt and dropped. In an untagged block, only lines that start with ``$ `` (so file
   layouts, diagrams and JSON stay out).
2. An inline code span whose first word, after any ``NAME=value`` assignments, is ``python``,
   ``python3``, ``.venv/bin/python`` or ``make``, followed by at least one more word (a span may
   wrap onto the next line; a program named alone, `python3`, is not a command).

How each command runs: in a fresh copy of the repository (its tracked files, with the project's
``.venv`` linked in and the copy migrated, as ``make run`` does first), with no ``DJANGO_*`` or
``KAFKAVIZ_*`` variable unless the command sets it, ``.venv/bin`` first on ``PATH`` (``python`` is
the project's), through ``bash -c``; it must exit 0 within its time limit. The exceptions are
tables below, each entry keyed by the command's exact text, so the test fails when a new
command does not run, and when an entry names a command the docs no longer show:

* ``FILES``: files a command names that the reader is expected to have (a command log); the
  test writes them. ``PLACEHOLDERS``: capitalised words that stand for the reader's values.
* ``SERVERS``: commands that serve until stopped pass when they answer HTTP on their address
  (given a free port through the ``PORT`` variable the Makefile reads), then are stopped.
* ``REFERENCES``: spans that name a command in prose (``python -m engine run``) run with
  ``--help``.
* ``SLOW``: Spark jobs (about a minute each on two cores) run as written only in the ``slow``
  variant; the fast test checks their arguments with a stand-in (``--no-spark --runs 1``).
* ``NOT_RUN``: never run, each with its reason.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
SHELL_TAGS = {"sh", "shell", "bash", "console"}
PROGRAMS = {"python", "python3", ".venv/bin/python", "make"}

# ---- the exceptions --------------------------------------------------------------------------

NOT_RUN = {
    "make test": "the whole test suite, this test included (and apt-get for system packages)",
    "make bench": "every benchmark: minutes of CPU, against the goals in bench/README.md",
    "make serve-prod": "starts Redis, PostgreSQL and two daphne processes; tests/web/test_serve_prod.py "
                       "(slow) starts it and drives it",
    "make serve-prod PROCESSES=4 HOST=0.0.0.0 PORT=9000": "the same as make serve-prod, with four processes",
    'SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false" $SPARK/bin/spark-class '
    'org.apache.spark.deploy.master.Master --host 10.0.0.5 --port 7077 &':
        "starts a Spark master on 10.0.0.5, another machine; tests/lab/test_standalone_cluster.py starts "
        "one on this machine",
    "$SPARK/bin/spark-class org.apache.spark.deploy.worker.Worker --cores 8 spark://10.0.0.5:7077 &":
        "a Spark worker of that master, on each worker machine",
    "SPARK_DRIVER_HOST=10.0.0.9 .venv/bin/python manage.py lab sweep --preset full --runs 200 "
    "--master spark://10.0.0.5:7077 --env-archive lab-env.tar.gz": "needs that Spark cluster",
    "SPARK_MASTER_URL=spark://10.0.0.5:7077 KAFKAVIZ_LAB_ENV_ARCHIVE=$PWD/lab-env.tar.gz make run":
        "its lab sweeps (and make run's precompute) would connect to that Spark cluster on another machine",
    "python manage.py lab sweep --preset full --runs 200 --master spark://10.0.0.5:7077 --out /data/lab/full-1":
        "needs that Spark cluster",
}

SERVERS = {
    "make run",
    "HOST=0.0.0.0 DJANGO_ALLOWED_HOSTS=192.168.1.20 make run",
}

REFERENCES = {
    "python -m engine run": "python -m engine run --help",
    "python -m engine scenario run": "python -m engine scenario run --help",
    "python manage.py lab sweep": "python manage.py lab sweep --help",
    "python manage.py lab sweep|analyze": "python manage.py lab --help",
}

# A command log a reader would write: three brokers, acknowledged records, the leader crashes.
CRASH_LEADER = "\n".join([
    '{"cmd": "create_topic", "topic": "orders", "partitions": 1, "replication_factor": 3}',
    '{"cmd": "produce", "topic": "orders", "acks": "all", "values": ["m1", "m2"]}',
    '{"cmd": "advance", "ms": 500}',
    '{"cmd": "crash", "broker": 0}',
    '{"cmd": "advance", "ms": 30000}',
]) + "\n"
FILES = {"crash-leader.jsonl": CRASH_LEADER, "commands.jsonl": CRASH_LEADER}
PLACEHOLDERS = {
    "FILE": "commands.jsonl",
    "LOGDIR": "logdir",          # written by `python -m engine produce` in the copy
    "NAME": "teacher",
}
STDIN = {".venv/bin/python manage.py createinstructor NAME": "Tr0ub4dor&3-horse\nTr0ub4dor&3-horse\n"}

SLOW = {
    "python manage.py lab sweep --preset acks": "python manage.py lab sweep --preset acks --no-spark --runs 1",
    "python manage.py lab precompute": "python manage.py lab precompute --help",
    "python manage.py lab sweep --preset truncation --axis rf=2,3 --seed 1000":
        "python manage.py lab sweep --preset truncation --axis rf=2,3 --seed 1000 --no-spark --runs 1",
    "python manage.py lab sweep --axis schedule=random,scenario:kip101-data-loss --axis truncation=hw,epoch":
        "python manage.py lab sweep --axis schedule=random,scenario:kip101-data-loss --axis truncation=hw,epoch "
        "--no-spark --runs 1",
    "python manage.py lab analyze LOGDIR": "python manage.py lab analyze --help",
}
TIMEOUT_S = 180
SLOW_TIMEOUT_S = 600


# ---- finding the commands ------------------------------------------------------------------

@dataclass(frozen=True)
class DocCommand:
    text: str
    where: str   # file:line

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).strip()


def commands_in(path: str, text: str) -> list[DocCommand]:
    found: list[DocCommand] = []
    lines = text.splitlines()
    in_block, tag, prose = False, "", []
    pending, pending_line = "", 0
    for n, line in enumerate(lines, 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            in_block, tag = not in_block, fence.group(1).lower()
            continue
        if not in_block:
            prose.append((n, line))
            continue
        if tag not in SHELL_TAGS and not line.startswith("$ ") and not pending:
            continue
        body = line[2:] if line.startswith("$ ") else line
        if not pending:
            pending_line = n
        if body.rstrip().endswith("\\"):
            pending += body.rstrip()[:-1].strip() + " "
            continue
        command = _strip_comment(pending + body.strip()) if not body.lstrip().startswith("#") else ""
        pending = ""
        if command:
            found.append(DocCommand(command, f"{path}:{pending_line}"))
    # Inline spans, over the prose with its line breaks (a span may wrap); code blocks left out.
    joined = "\n".join(line for _, line in prose)
    line_of = [n for n, line in prose for _ in range(len(line) + 1)]
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", joined):
        span = " ".join(m.group(1).replace("\\|", "|").split())
        words = span.split()
        i = 0
        while i < len(words) and re.match(r"^[A-Z_][A-Z0-9_]*=\S*$", words[i]):
            i += 1
        if i + 1 < len(words) and words[i] in PROGRAMS:  # a program alone (`python3`) is a name
            found.append(DocCommand(span, f"{path}:{line_of[m.start()]}"))
    return found


def all_commands() -> list[DocCommand]:
    out = []
    for doc in DOCS:
        out += commands_in(doc, (REPO / doc).read_text(encoding="utf-8"))
    return out


def unique_commands() -> list[DocCommand]:
    seen: dict[str, DocCommand] = {}
    for c in all_commands():
        seen.setdefault(c.text, c)
    return list(seen.values())


# ---- a fresh environment -------------------------------------------------------------------

def fresh_env(root: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_", "PYTEST_"))}
    env.pop("PORT", None)
    env.pop("HOST", None)
    env["PATH"] = f"{root / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # Temporary files (the lab's default output directory among them) stay inside the copy.
    (root / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(root / "tmp")
    return env


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> pathlib.Path:
    """The repository's tracked files (as they are in the working tree) with the venv linked in,
    migrated, with the files the docs expect the reader to have."""
    root = tmp_path_factory.mktemp("checkout") / "kafkaviz"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if tracked.returncode == 0 and tracked.stdout:
        for name in filter(None, tracked.stdout.decode().split("\0")):
            src = REPO / name
            if src.is_file():
                dst = root / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    else:  # not a git checkout (an unpacked archive): everything but the venv and what runs leave
        shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "db.sqlite3", "staticfiles"))
    venv = (REPO / ".venv").resolve()
    (root / ".venv").symlink_to(venv)
    env = fresh_env(root)
    for argv in (["python", "manage.py", "migrate", "--noinput"],
                 ["python", "-m", "engine", "produce", "--dir", "logdir", "--topic", "orders", "--count", "50",
                  "--key-cardinality", "5", "--segment-bytes", "2000"]):
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def as_run(text: str) -> str:
    for word, value in PLACEHOLDERS.items():
        text = re.sub(rf"\b{word}\b", value, text)
    return text


def run_shell(root: pathlib.Path, text: str, *, timeout: float, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", text], cwd=root, env=fresh_env(root), capture_output=True, text=True,
                          timeout=timeout, input=stdin if stdin is not None else "", start_new_session=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_and_stop(root: pathlib.Path, text: str) -> str:
    """Start a server command, wait until it answers HTTP on its port, stop it. Returns its output."""
    port = free_port()
    # make run's background lab precompute would outlive the server it came with.
    env = fresh_env(root) | {"PORT": str(port), "KAFKAVIZ_LAB_PRECOMPUTE": "0"}
    host = re.search(r"DJANGO_ALLOWED_HOSTS=(\S+)", text)
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(["bash", "-c", text], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            status = None
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz")
                    if host:
                        request.add_header("Host", host.group(1).split(",")[0])
                    with urllib.request.urlopen(request, timeout=5) as response:
                        status = response.status
                        break
                except OSError:
                    time.sleep(0.5)
            log.seek(0)
            output = log.read()
            assert status == 200, f"{text!r} did not answer on port {port} (exit {proc.poll()}):\n{output[-3000:]}"
            return output
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


# ---- the tests -----------------------------------------------------------------------------

def test_the_rule_finds_the_commands_the_docs_show():
    texts = {c.text for c in all_commands()}
    # One of each kind: a fenced sh line, a continued line, a $-prompt line, inline spans (one wrapped).
    assert "make run" in texts and "python -m engine scenario list" in texts
    assert "python manage.py lab sweep --preset acks --no-spark" in texts
    assert any(t.startswith("SPARK_DRIVER_HOST=") and t.endswith("--env-archive lab-env.tar.gz") for t in texts)
    assert ".venv/bin/python manage.py createinstructor NAME" in texts
    # Not commands: JSON, file layouts, variables alone.
    assert not any(t.startswith(("{", "DJANGO_SECRET_KEY")) for t in texts)


def test_every_exception_names_a_command_the_docs_show():
    texts = {c.text for c in all_commands()}
    for table in (NOT_RUN, SERVERS, REFERENCES, SLOW, STDIN):
        stale = sorted(set(table) - texts)
        assert not stale, f"no longer in the docs, remove from the test: {stale}"
    assert len(NOT_RUN) <= 10, "keep the list of commands not run short"


FAST = [c for c in unique_commands() if c.text not in NOT_RUN]

# A command that names a Spark master or a host on another machine would send traffic off this
# one if run: the docs may show such commands only as NOT_RUN entries.
ELSEWHERE = re.compile(r"spark://(?!127\.|localhost)|--host (?!127\.|localhost)")


def test_no_command_that_reaches_another_machine_is_run():
    assert not [str(c) for c in FAST if ELSEWHERE.search(c.text)]


@pytest.mark.parametrize("command", FAST, ids=[c.text[:60] for c in FAST])
def test_documented_command_runs_as_written(checkout, command):
    text = command.text
    if text in SERVERS:
        serve_and_stop(checkout, as_run(text))
        return
    text = REFERENCES.get(text, SLOW.get(text, text))
    proc = run_shell(checkout, as_run(text), timeout=TIMEOUT_S, stdin=STDIN.get(command.text))
    assert proc.returncode == 0, f"{command} (ran: {as_run(text)}) exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


SLOW_COMMANDS = [c for c in unique_commands() if c.text in SLOW]


@pytest.mark.slow
@pytest.mark.parametrize("command", SLOW_COMMANDS, ids=[c.text[:60] for c in SLOW_COMMANDS])
def test_documented_spark_command_runs_as_written(checkout, command):
    proc = run_shell(checkout, as_run(command.text), timeout=SLOW_TIMEOUT_S)
    assert proc.returncode == 0, f"{command} exit {proc.returncode}:\n{proc.stderr[-3000:]}"


def test_a_command_that_does_not_run_fails_the_test(checkout):
    """The check itself: a doc line with a wrong flag is caught."""
    [bad] = commands_in("example.md", "```sh\npython -m engine scenario list --no-such-flag\n```\n")
    proc = run_shell(checkout, as_run(bad.text), timeout=TIMEOUT_S)
    assert proc.returncode != 0 and "--no-such-flag" in proc.stderr
