"""The engine needs nothing but itself: a Spark executor's packed environment (``lab pack-env``)
carries the engine, not kafka-python, whose request definitions only the wire listener reads.
A KRaft cluster (metadata records through engine/protocol) must build and run with the
``kafka`` package unimportable."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import builtins, importlib, sys
    def refuse(name):
        if name == "kafka" or name.startswith("kafka."):
            raise ModuleNotFoundError("No module named 'kafka'")
    real_import, real_import_module = builtins.__import__, importlib.import_module
    def guarded_import(name, *args, **kwargs):
        refuse(name)
        return real_import(name, *args, **kwargs)
    def guarded_import_module(name, package=None):
        refuse(name)
        return real_import_module(name, package)
    builtins.__import__, importlib.import_module = guarded_import, guarded_import_module
    from engine.cluster.run import Run, make_config
    run = Run(0, make_config({"controllers": 3}), sys.argv[1])
    run.apply({"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3})
    run.apply({"cmd": "advance", "ms": 1000})
    assert run.cluster.controller.active is not None
    print("ok")
""")


def test_a_kraft_cluster_runs_without_kafka_python(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "run")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
