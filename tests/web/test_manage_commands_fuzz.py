"""``manage.py`` commands against input they cannot use (the engine's command line has the same
contract in tests/engine/test_cli_fuzz.py): one line that says what is wrong (a ``CommandError``
whose message has no line break), and every file they were given byte for byte as it was.
``lab analyze`` reads a log directory and reports its damaged places as results, so it is fed
directories that are not log directories here; its Spark run on damaged logs is in tests/lab.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile

import pytest
from django.core.management import CommandError, call_command
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.lab.grid import AXES

FUZZ = settings(max_examples=25, deadline=None)


def tree_digest(root: str | os.PathLike) -> dict[str, str]:
    digest = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            digest[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = "dir"
        for name in filenames:
            path = os.path.join(dirpath, name)
            digest[os.path.relpath(path, root)] = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
    return digest


def refused(*argv: str) -> str:
    with pytest.raises(CommandError) as caught:
        call_command(*argv)
    message = str(caught.value)
    assert message and "\n" not in message.strip(), message
    return message


TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@FUZZ
@given(axis=TEXT, runs=st.integers(-(10 ** 12), 10 ** 12) | st.none())
def test_lab_sweep_refuses_a_grid_it_cannot_run_in_one_line(axis, runs):
    assume(axis.partition("=")[0].strip().lower() not in AXES)  # an unknown axis, or no NAME=VALUES at all
    with tempfile.TemporaryDirectory() as root:
        (pathlib.Path(root) / "logs").mkdir()
        before = tree_digest(root)
        argv = ["lab", "sweep", "--axis", axis, "--no-spark", "--quiet", "--out", os.path.join(root, "out")]
        if runs is not None:
            argv += ["--runs", str(runs)]
        refused(*argv)
        assert tree_digest(root) == before  # not even the output directory


@FUZZ
@given(runs=st.integers(200_001, 10 ** 30) | st.integers(-(10 ** 30), 0))
def test_lab_sweep_refuses_a_grid_too_large_or_empty_and_an_existing_out(runs):
    with tempfile.TemporaryDirectory() as root:
        before = tree_digest(root)
        refused("lab", "sweep", "--runs", str(runs), "--no-spark", "--quiet", "--out", os.path.join(root, "out"))
        assert tree_digest(root) == before
        (pathlib.Path(root) / "taken").mkdir()
        (pathlib.Path(root) / "taken" / "kept").write_bytes(b"mine")
        before = tree_digest(root)
        refused("lab", "sweep", "--runs", "1", "--no-spark", "--quiet", "--out", os.path.join(root, "taken"))
        assert tree_digest(root) == before


@FUZZ
@given(files=st.dictionaries(st.sampled_from(["a.log", "00000000000000000000.index", "x-y", "t-0.log", "notes"]),
                             st.binary(max_size=100), max_size=4))
def test_lab_analyze_refuses_a_directory_that_is_not_a_log_dir_and_leaves_it(files):
    with tempfile.TemporaryDirectory() as root:
        for name, blob in files.items():
            pathlib.Path(root, name).write_bytes(blob)
        before = tree_digest(root)
        assert "not a Kafka log directory" in refused("lab", "analyze", root, "--out", os.path.join(root, "out"))
        assert tree_digest(root) == before


@pytest.mark.django_db
@pytest.mark.parametrize("answers, message", [
    ([EOFError], "No password given"),
    (["Tr0ub4dor&3-horse", EOFError], "No password given"),
    (["\udcff\udcfe-Tr0ub4dor&3", "\udcff\udcfe-Tr0ub4dor&3"], "not UTF-8"),
    (["Tr0ub4dor&3-horse", "Tr0ub4dor&3-h0rse"], "differ"),
])
def test_createinstructor_refuses_a_password_it_cannot_use_in_one_line(monkeypatch, answers, message):
    from django.contrib.auth import get_user_model

    replies = iter(answers)

    def fake_getpass(prompt=""):
        reply = next(replies)
        if reply is EOFError:
            raise EOFError
        return reply
    monkeypatch.setattr("getpass.getpass", fake_getpass)
    assert message in refused("createinstructor", "carol")
    assert not get_user_model().objects.filter(username="carol").exists()


@pytest.mark.parametrize("argv, env, message", [
    (["--processes", "100000000"], {}, "between 1 and 64"),
    (["--processes", "0"], {}, "between 1 and 64"),
    (["--port", "70000"], {}, "below 65536"),
    ([], {"PORT": "abc"}, "must be integers"),
])
def test_serve_refuses_impossible_sizes_before_starting_anything(tmp_path, argv, env, message):
    import subprocess
    import sys

    from kafkaviz.serve import REPO
    state = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-m", "kafkaviz.serve", "--state-dir", str(state), *argv], cwd=REPO,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert "Traceback" not in proc.stderr and not state.exists()
