"""Scale out, for real: a standalone Spark master and one worker, started from the pyspark
package's own launcher (``bin/spark-class``) on loopback in a fresh directory, with no Python
named for them, run a small grid through ``manage.py lab sweep --master spark://… --env-archive``:
the executors run the packed Python of ``lab pack-env`` and the results equal the --no-spark run's.
The master's REST submission server (port 6066 by default, unauthenticated) is off. Both
processes are stopped by their process ids."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class():
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def wait_for_port(port, proc, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing listens on port {port} after {seconds} s")


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)     # the launcher execs java: same pid, own session
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# What the README's standalone-master command passes: no REST submission server.
MASTER_OPTS = "-Dspark.master.rest.enabled=false"


@pytest.fixture
def standalone(tmp_path):
    port, ui, wui, rest = free_port(), free_port(), free_port(), free_port()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHON", "VIRTUAL_ENV"))}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(tmp_path), SPARK_WORKER_DIR=str(tmp_path / "work"),
               SPARK_MASTER_OPTS=f"{MASTER_OPTS} -Dspark.master.rest.port={rest}")
    log = open(tmp_path / "daemons.log", "wb")
    master = subprocess.Popen([spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], cwd=fresh,
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    procs = [master]
    try:
        wait_for_port(port, master)
        worker = subprocess.Popen([spark_class(), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--cores", "2", "--memory", "1g", "--webui-port", str(wui),
                                   f"spark://127.0.0.1:{port}"], cwd=fresh,
                                  env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(worker)
        yield f"spark://127.0.0.1:{port}", master, worker, rest
    finally:
        for p in reversed(procs):
            stop(p)
        log.close()


def lab(*args, env=None):
    return subprocess.run([sys.executable, "manage.py", "lab", *args], cwd=REPO, capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=300)


def test_a_grid_runs_on_a_standalone_master_and_worker_from_a_packed_environment_with_the_same_results(
        standalone, tmp_path):
    url, master, worker, rest = standalone
    packed = lab("pack-env", "--out", str(tmp_path / "env.tar.gz"))
    assert packed.returncode == 0, packed.stderr[-2000:]
    args = ["sweep", "--axis", "truncation=hw,epoch", "--runs", "4", "--seed", "0", "--quiet"]
    on_cluster = lab(*args, "--master", url, "--env-archive", str(tmp_path / "env.tar.gz"),
                     "--out", str(tmp_path / "cluster"))
    assert on_cluster.returncode == 0, on_cluster.stderr[-2000:]
    plain = lab(*args, "--no-spark", "--out", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr[-2000:]
    summary = json.loads((tmp_path / "cluster" / "summary.json").read_text())
    assert summary["master"] == url and summary["engine"] == "spark"
    # The executors ran the packed interpreter, unpacked in their own working directory.
    assert summary["executor_python"]["executable"].endswith("/environment/bin/python3")
    assert str(tmp_path / "work") in summary["executor_python"]["executable"]
    assert summary["cells"] == json.loads((tmp_path / "plain" / "summary.json").read_text())["cells"]
    assert master.poll() is None and worker.poll() is None
    # No REST submission server: nothing listens on its port.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", rest)) != 0
