"""Browser-test fixtures: a real daphne server in a subprocess (temp data dir, temp
SQLite) and Playwright on Debian's chromium (never a downloaded browser)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("KAFKAVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def daphne_server(tmp: Path, extra_env: dict[str, str], ready_path: str = "/healthz"):
    """Run daphne on a free loopback port with a temp data dir and SQLite; yield its URL once
    ``ready_path`` answers 200; stop it by process id."""
    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "KAFKAVIZ_DATA_DIR": str(tmp / "data"),
           "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "DJANGO_DEBUG": "1", **extra_env}
    env.pop("REDIS_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    log = open(tmp / "daphne.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                             "kafkaviz.asgi:application"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + ready_path, timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {tmp / 'daphne.log'}")
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def live_server_url(tmp_path_factory):
    # Every page of the session comes from 127.0.0.1: the hosted demo's per-address caps
    # would refuse the later tests (tests/web/test_limits.py covers the caps).
    with daphne_server(tmp_path_factory.mktemp("kafkaviz-server"),
                       {"KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"}) as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}
