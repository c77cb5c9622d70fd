"""Every ``python -m engine`` command against input it cannot use: garbage and cut segment
files, binary and deeply nested command logs, JSON nested past the limit, sizes past the caps.

The contract (engine/cli.py): such input gives exactly one line on stderr, ``… error: …``
naming what and where, a non-zero exit, never a traceback and never the last-resort
"internal error"; and every file the command was given is byte for byte as it was (each
test hashes the directory before and after). ``dump`` prints what it can read in
kafka-dump-log.sh's format first, so there the one-line error is the *last* line of stderr.
A damaged log is repaired only when asked: ``clean --recover`` cuts a torn tail as Kafka's
recovery at broker start does.

The commands run in-process (``engine.cli.main``) so that hypothesis can try many inputs;
``test_a_damaged_directory_in_a_subprocess`` checks the real entry point once.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.records import scan_valid

REPO = pathlib.Path(__file__).resolve().parents[2]
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SEGMENT = "00000000000000000000"


# ---- helpers -------------------------------------------------------------------------------

def run(*argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """``python -m engine *argv`` in-process: (exit status, stdout, stderr). An exception
    escaping ``main`` is a traceback the user would see, so it fails the test here."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def tree_digest(root: str | os.PathLike) -> dict[str, str]:
    """Every file and directory under ``root``: relative path -> SHA-256 of its bytes."""
    digest = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            digest[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = "dir"
        for name in filenames:
            path = os.path.join(dirpath, name)
            digest[os.path.relpath(path, root)] = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
    return digest


def assert_refused(code: int, err: str, *, last_line: bool = False) -> str:
    """A non-zero exit and one line on stderr that says what went wrong; returns that line."""
    lines = err.strip().splitlines()
    assert code != 0, err
    assert lines, "nothing on stderr"
    if not last_line:
        assert len(lines) == 1, err
    line = lines[-1]
    assert "error:" in line and "internal error" not in line and "Traceback" not in err, err
    return line


@pytest.fixture(scope="module")
def valid_dir(tmp_path_factory) -> pathlib.Path:
    """A data directory with a keyed partition t-0 of several segments (and leftovers of none)."""
    root = tmp_path_factory.mktemp("valid")
    code, _, err = run("produce", "--dir", str(root), "--topic", "t", "--count", "60", "--key-cardinality", "5",
                       "--segment-bytes", "2000", "--index-interval-bytes", "200")
    assert code == 0, err
    return root


def batch_starts(data: bytes) -> set[int]:
    return {pos for pos, _ in scan_valid(data).headers} | {len(data)}


@contextlib.contextmanager
def copy_of(root: pathlib.Path):
    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as tmp:
        dst = pathlib.Path(tmp) / "data"
        shutil.copytree(root, dst)
        yield dst


# ---- damage that recovery would repair -----------------------------------------------------

def _cut_log(part: pathlib.Path, draw_fraction: float) -> None:
    log = part / f"{SEGMENT}.log"
    data = log.read_bytes()
    cut = max(1, int(len(data) * draw_fraction))
    assume(cut not in batch_starts(data))  # a cut on a batch boundary leaves a shorter, valid log
    log.write_bytes(data[:cut])


def _garbage(part: pathlib.Path, blob: bytes) -> None:
    for suffix in (".log", ".index", ".timeindex"):
        (part / f"{SEGMENT}{suffix}").write_bytes(blob)
    assume(scan_valid(blob).valid_bytes < len(blob))


def _flip(part: pathlib.Path, where: float, bit: int) -> None:
    log = part / f"{SEGMENT}.log"
    data = bytearray(log.read_bytes())
    headers = scan_valid(bytes(data)).headers
    pos, header = headers[int(where * (len(headers) - 1))]
    # From the attributes on, a batch is under its CRC (offset, length, leader epoch and magic are not).
    at = pos + 21 + int(where * (header.batch_length + 12 - 22))
    data[at] ^= 1 << bit
    log.write_bytes(bytes(data))


def _cut_index(part: pathlib.Path, suffix: str, extra: int) -> None:
    index = part / f"{SEGMENT}{suffix}"
    data = index.read_bytes()
    size = 8 if suffix == ".index" else 12
    index.write_bytes(data + bytes(extra % size or 1))  # a length that is not a whole number of entries


def _leftover(part: pathlib.Path, name: str) -> None:
    (part / f"{SEGMENT}.log.{name}").write_bytes(b"x")


def _bad_checkpoint(part: pathlib.Path, text: bytes) -> None:
    (part / "leader-epoch-checkpoint").write_bytes(text)


def _bad_txn_index(part: pathlib.Path, blob: bytes) -> None:
    assume(len(blob) % 34 or blob[:2] != bytes(2))  # not whole 34-byte entries, or not version 0
    (part / f"{SEGMENT}.txnindex").write_bytes(blob)


#: Damage that Kafka's recovery does not repair either: refused even with --recover.
UNREPAIRABLE = {_bad_txn_index}


DAMAGE = st.one_of(
    st.builds(lambda f: (_cut_log, (f,)), st.floats(0.01, 0.99)),
    st.builds(lambda b: (_garbage, (b,)), st.binary(min_size=1, max_size=300)),
    st.builds(lambda w, b: (_flip, (w, b)), st.floats(0, 1), st.integers(0, 7)),
    st.builds(lambda s, n: (_cut_index, (s, n)), st.sampled_from([".index", ".timeindex"]), st.integers(1, 11)),
    st.builds(lambda n: (_leftover, (n,)), st.sampled_from(["deleted", "cleaned", "swap"])),
    st.builds(lambda t: (_bad_checkpoint, (t,)), st.sampled_from([b"\xff\xfe", b"0\n2\n0 0\n", b"1\n0\n",
                                                                  b"0\n1\n0 999999\n", b"0\n1\nx y\n"])),
    st.builds(lambda b: (_bad_txn_index, (b,)), st.binary(min_size=1, max_size=80)),
)


@FUZZ
@given(damage=DAMAGE)
def test_clean_refuses_a_damaged_log_and_leaves_it_byte_identical(valid_dir, damage):
    fn, args = damage
    with copy_of(valid_dir) as root:
        fn(root / "t-0", *args)
        before = tree_digest(root)
        code, out, err = run("clean", str(root / "t-0"), "--min-cleanable-dirty-ratio", "0")
        line = assert_refused(code, err)
        assert "nothing was changed" in line and out == ""
        assert tree_digest(root) == before
        if fn in UNREPAIRABLE:  # --recover would not help: it is refused before recovery writes anything
            assert "--recover" not in line
            assert_refused(*run("clean", str(root / "t-0"), "--recover")[::2])
            assert tree_digest(root) == before


@FUZZ
@given(damage=DAMAGE, partitions=st.integers(1, 3))
def test_produce_into_a_damaged_directory_refuses_and_writes_nothing(valid_dir, damage, partitions):
    fn, args = damage
    with copy_of(valid_dir) as root:
        fn(root / "t-0", *args)
        before = tree_digest(root)
        code, _, err = run("produce", "--dir", str(root), "--topic", "t", "--count", "5",
                           "--partitions", str(partitions))
        assert_refused(code, err)
        assert tree_digest(root) == before  # not even t-1 … t-(N-1) were created


@FUZZ
@given(damage=DAMAGE, flags=st.lists(st.sampled_from(["--deep-iteration", "--print-data-log",
                                                      "--verify-index-only"]), max_size=2, unique=True))
def test_dump_never_writes_and_ends_a_damaged_dump_with_one_error_line(valid_dir, damage, flags):
    fn, args = damage
    assume(fn not in (_leftover, _bad_checkpoint, _bad_txn_index))  # dump reads segment files only
    # (a .txnindex is dumped, but whole entries of any version are printed as they are)
    with copy_of(valid_dir) as root:
        fn(root / "t-0", *args)
        before = tree_digest(root)
        code, _, err = run("dump", str(root / "t-0"), *flags)
        line = assert_refused(code, err, last_line=True)
        assert SEGMENT in line
        assert tree_digest(root) == before


@FUZZ
@given(files=st.dictionaries(st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot"]),
                             st.binary(max_size=200), min_size=1))
def test_dump_of_any_bytes_never_writes_and_never_raises(files):
    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as root:
        for suffix, blob in files.items():
            pathlib.Path(root, f"{SEGMENT}{suffix}").write_bytes(blob)
        before = tree_digest(root)
        code, _, err = run("dump", root, "--deep-iteration")
        assert code in (0, 1) and "Traceback" not in err
        if code:
            assert_refused(code, err, last_line=True)
        assert tree_digest(root) == before


def _overwrite(part: pathlib.Path, edits) -> None:
    for suffix, where, blob in edits:
        path = part / f"{SEGMENT}{suffix}"
        data = bytearray(path.read_bytes())
        at = int(where * len(data))
        data[at:at + len(blob)] = blob
        path.write_bytes(bytes(data))


EDITS = st.lists(st.tuples(st.sampled_from([".log", ".index", ".timeindex"]), st.floats(0, 1),
                           st.binary(min_size=1, max_size=8)), min_size=1, max_size=4)


@FUZZ
@given(edits=EDITS, flags=st.sampled_from([[], ["--deep-iteration"], ["--print-data-log"], ["--verify-index-only"]]))
def test_dump_of_overwritten_segment_files_never_writes_and_never_raises(valid_dir, edits, flags):
    with copy_of(valid_dir) as root:
        _overwrite(root / "t-0", edits)
        before = tree_digest(root)
        code, _, err = run("dump", str(root / "t-0"), *flags)
        assert code in (0, 1) and "internal error" not in err, err
        if code:
            assert_refused(code, err, last_line=True)
        assert tree_digest(root) == before


@FUZZ
@given(edits=EDITS, recover=st.booleans())
def test_clean_of_overwritten_segment_files_cleans_or_refuses_untouched(valid_dir, edits, recover):
    """Bytes overwritten anywhere: either the log still reads (a flip outside the CRC, as in
    docs/what-kafka-cannot-detect.md) and is cleaned, or it is refused with nothing changed."""
    with copy_of(valid_dir) as root:
        _overwrite(root / "t-0", edits)
        before = tree_digest(root)
        code, _, err = run("clean", str(root / "t-0"), "--min-cleanable-dirty-ratio", "0",
                           *(["--recover"] if recover else []))
        if code:
            assert_refused(code, err)
            assert tree_digest(root) == before
        else:
            assert err == "", err


def test_clean_on_the_issues_garbage_directory_truncates_nothing(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        (part / f"{SEGMENT}{suffix}").write_bytes(b"garbage " * 50)
    before = tree_digest(tmp_path)
    code, out, err = run("clean", str(part))
    line = assert_refused(code, err)
    assert f"t-0/{SEGMENT}.log" in line and "position 0" in line and out == ""
    assert tree_digest(tmp_path) == before


@FUZZ
@given(text=st.binary(min_size=1, max_size=60))
def test_clean_refuses_a_cleaner_checkpoint_it_cannot_read(valid_dir, text):
    from engine.errors import CorruptCheckpointError
    from engine.log.checkpoint import CheckpointFile
    from engine.disk import Disk
    with copy_of(valid_dir) as root:
        (root / "cleaner-offset-checkpoint").write_bytes(text)
        try:
            CheckpointFile(Disk(root), "cleaner-offset-checkpoint", (str, int, int)).read()
            assume(False)  # it parses: not what this test is about
        except CorruptCheckpointError:
            pass
        before = tree_digest(root)
        line = assert_refused(*run("clean", str(root / "t-0"), "--min-cleanable-dirty-ratio", "0")[::2])
        assert "cleaner-offset-checkpoint" in line and "--recover" in line
        assert tree_digest(root) == before
        code, _, err = run("clean", str(root / "t-0"), "--min-cleanable-dirty-ratio", "0", "--recover")
        assert code == 0, err  # as Kafka: the cleaner points start over


def test_clean_of_a_directory_without_segments_creates_none(tmp_path):
    (tmp_path / "t-0").mkdir()
    code, _, err = run("clean", str(tmp_path / "t-0"))
    assert "no segment" in assert_refused(code, err)
    assert os.listdir(tmp_path / "t-0") == []


def test_clean_recover_cuts_a_torn_tail_as_a_broker_start_would(valid_dir):
    with copy_of(valid_dir) as root:
        log = root / "t-0" / f"{SEGMENT}.log"
        data = log.read_bytes()
        starts = sorted(batch_starts(data))
        cut = starts[-2] + 7  # seven bytes into the last batch: a torn write
        log.write_bytes(data[:cut])
        code, _, err = run("clean", str(root / "t-0"))
        assert code == 1 and log.stat().st_size == cut
        code, out, err = run("clean", str(root / "t-0"), "--recover", "--json")
        assert code == 0, err
        assert log.read_bytes() == data[:starts[-2]]  # the torn batch is gone, every whole one kept
        assert json.loads(out)["directory"] == "t-0"
        code, _, err = run("clean", str(root / "t-0"))  # now whole again: no --recover needed
        assert code == 0, err


def test_produce_recover_repairs_then_appends(valid_dir):
    with copy_of(valid_dir) as root:
        log = root / "t-0" / f"{SEGMENT}.log"
        data = log.read_bytes()
        log.write_bytes(data[:-3])
        code, _, err = run("produce", "--dir", str(root), "--topic", "t", "--count", "2", "--recover")
        assert code == 0, err
        code, out, err = run("dump", str(root / "t-0"))
        assert code == 0, err


def test_storage_experiment_leaves_an_existing_directory_alone(valid_dir):
    with copy_of(valid_dir) as root:
        (root / "test-0").mkdir()
        (root / "test-0" / f"{SEGMENT}.log").write_bytes(b"\x00garbage")
        before = tree_digest(root)
        assert_refused(*run("storage-experiment", "--dir", str(root))[::2])
        assert tree_digest(root) == before


# ---- command logs: binary, nested, huge ------------------------------------------------------

def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


COMMAND_LOGS = st.one_of(
    st.binary(min_size=1, max_size=200).filter(lambda b: _not_utf8(b)),
    st.integers(33, 5000).map(lambda d: nested(d).encode()),
    st.integers(33, 5000).map(lambda d: ('{"cmd": "produce", "topic": "t", "values": ' + nested(d, '"v"') + "}").encode()),
    st.builds(lambda cmd, field, n: json.dumps({"cmd": cmd, field: n}).encode(),
              st.sampled_from(["create_topic", "produce", "advance", "jump", "consume"]),
              st.sampled_from(["partitions", "count", "ms", "to_ms", "max_records", "replication_factor"]),
              st.integers(10 ** 9, 10 ** 30) | st.integers(-(10 ** 30), -1)),
)


def _not_utf8(blob: bytes) -> bool:
    try:
        blob.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


@FUZZ
@given(log=COMMAND_LOGS, via_stdin=st.booleans())
def test_run_refuses_a_command_log_it_cannot_use_in_one_line(log, via_stdin):
    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as root:
        path = pathlib.Path(root, "commands.jsonl")
        path.write_bytes(log)
        data = pathlib.Path(root, "data")
        before = tree_digest(root)
        argv = ["run", "--commands", "-" if via_stdin else str(path), "--data-dir", str(data)]
        code, _, err = run(*argv, stdin=log if via_stdin else None)
        line = assert_refused(code, err)
        if line.startswith("error: command "):
            # Refused while running (a jump past the limit from the time reached): the run had begun
            # in the fresh --data-dir it was given, which keeps what the brokers wrote until then.
            after = {k: v for k, v in tree_digest(root).items() if not k.startswith("data/")}
            assert after == before
        else:  # refused while reading the command log: nothing was created
            assert tree_digest(root) == before


def _vocabulary():
    import dataclasses

    from engine.cluster.commands import COMMANDS
    fields = sorted({f.name for c in COMMANDS.values() if dataclasses.is_dataclass(c) for f in dataclasses.fields(c)})
    values = st.one_of(st.integers(-3, 5), st.integers(-(2 ** 70), 2 ** 70), st.booleans(), st.none(),
                       st.sampled_from(["orders", "t", "", "all", "hw", "c1"]), st.floats(allow_nan=False),
                       st.lists(st.integers(-1, 3), max_size=3), st.just([["in", 0, 1]]),
                       st.just({"min.insync.replicas": 2}))
    return st.builds(lambda name, kv: {"cmd": name, **kv}, st.sampled_from(sorted(COMMANDS)),
                     st.dictionaries(st.sampled_from(fields), values, max_size=4))


@FUZZ
@given(commands=st.lists(_vocabulary(), min_size=1, max_size=4))
def test_run_of_any_commands_of_the_vocabulary_ends_in_a_summary_or_one_line(commands):
    log = "\n".join(['{"cmd": "create_topic", "topic": "orders", "partitions": 1, "replication_factor": 3}',
                     '{"cmd": "produce", "topic": "orders", "acks": "all", "values": ["m1", "m2"]}',
                     *map(json.dumps, commands)]) + "\n"
    code, out, err = run("run", "--commands", "-", stdin=log.encode())
    if code:
        assert_refused(code, err)
    else:
        assert "checker" in out and err == "", err


@pytest.mark.parametrize("argv", [["run", "--commands", "{commands}"], ["scenario", "run", "kip101-data-loss"]])
def test_a_run_into_a_data_directory_in_use_changes_nothing(valid_dir, argv):
    with copy_of(valid_dir) as root:
        commands = root.parent / "c.jsonl"
        commands.write_text('{"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3}\n')
        before = tree_digest(root)
        argv = [a.replace("{commands}", str(commands)) for a in argv] + ["--data-dir", str(root)]
        assert "not empty" in assert_refused(*run(*argv)[::2])
        assert tree_digest(root) == before


JSON_ARGS = st.one_of(
    st.integers(33, 5000).map(nested),
    st.integers(33, 5000).map(lambda d: '{"c1": ' + nested(d, '"t"') + "}"),
    st.binary(max_size=50).map(lambda b: b.decode("latin-1")),
    st.sampled_from(['["c1"]', "3", "null", '{"c1": "t"}', '{"c1": [1]}', '{"c1": [""]}']),
)


@FUZZ
@given(members=JSON_ARGS, strategy=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]))
def test_assign_refuses_members_it_cannot_read_in_one_line(members, strategy):
    assume("\x00" not in members)  # argv cannot carry NUL
    assert_refused(*run("assign", "--strategy", strategy, "--members", members, "--partitions", '{"t": 3}')[::2])


TOPICS = st.sampled_from(["a", "b", "c"])


@FUZZ
@given(members=st.dictionaries(st.sampled_from(["c1", "c2", "c3", ""]), st.lists(TOPICS, max_size=3), max_size=3),
       partitions=st.dictionaries(TOPICS, st.integers(-1, 6), max_size=3),
       previous=st.none() | st.dictionaries(st.sampled_from(["c1", "c2", "c4"]),
                                            st.lists(st.tuples(TOPICS, st.integers(-2, 7)).map(list), max_size=4),
                                            max_size=3),
       strategy=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]))
def test_assign_of_any_group_prints_an_assignment_or_one_line(members, partitions, previous, strategy):
    argv = ["assign", "--strategy", strategy, "--members", json.dumps(members), "--partitions", json.dumps(partitions)]
    code, out, err = run(*argv, *(["--previous", json.dumps(previous)] if previous is not None else []))
    if code:
        assert_refused(code, err)
    else:
        assert set(json.loads(out)) == set(members)


@FUZZ
@given(count=st.integers(100_001, 10 ** 20), members=st.integers(1, 3),
       strategy=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]))
def test_assign_caps_the_partition_count_with_a_clear_message(count, members, strategy):
    group = json.dumps({f"c{i}": ["t"] for i in range(members)})
    code, _, err = run("assign", "--strategy", strategy, "--members", group, "--partitions", json.dumps({"t": count}))
    assert "at most 100000" in assert_refused(code, err)


def test_assign_caps_the_member_count():
    group = json.dumps({f"c{i}": ["t"] for i in range(10_001)})
    code, _, err = run("assign", "--strategy", "range", "--members", group, "--partitions", '{"t": 1}')
    assert "at most 10000" in assert_refused(code, err)


@pytest.mark.parametrize("argv", [
    ["produce", "--dir", "{tmp}", "--topic", "t", "--count", "100000000000"],
    ["produce", "--dir", "{tmp}", "--topic", "t", "--count", "1", "--value-bytes", "1000000000"],
    ["produce", "--dir", "{tmp}", "--topic", "t", "--count", "1", "--partitions", "100000000"],
    ["produce", "--dir", "{tmp}", "--topic", "t", "--count", "10000000", "--ms-per-record", "604800000"],
    ["storage-experiment", "--dir", "{tmp}", "--messages", "1000000000"],
    ["run", "--commands", "-", "--brokers", "100000000"],
    ["scenario", "run", "no-such-scenario"],
    ["clean", "{tmp}/t-0", "--min-cleanable-dirty-ratio", "nan"],
])
def test_huge_or_impossible_sizes_are_one_line_errors(tmp_path, argv):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / f"{SEGMENT}.log").write_bytes(b"")
    before = tree_digest(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert_refused(*run(*argv, stdin=b'{"cmd": "advance", "ms": 1}\n')[::2])
    assert tree_digest(tmp_path) == before


def test_run_caps_the_size_of_a_command_log(tmp_path):
    from engine.cluster.cli import MAX_COMMANDS
    many = tmp_path / "many.jsonl"
    many.write_text('{"cmd": "advance", "ms": 1}\n' * (MAX_COMMANDS + 1))
    assert f"at most {MAX_COMMANDS}" in assert_refused(*run("run", "--commands", str(many))[::2])
    assert "larger than 64 MiB" in assert_refused(*run("run", "--commands", "-", stdin=b"#" * (65 << 20))[::2])


def test_a_damaged_directory_in_a_subprocess(valid_dir):
    """The real entry point: one line, exit 1, no traceback, the files as they were."""
    with copy_of(valid_dir) as root:
        log = root / "t-0" / f"{SEGMENT}.log"
        log.write_bytes(log.read_bytes()[:-5])
        before = tree_digest(root)
        for argv in (["clean", str(root / "t-0")], ["dump", str(root / "t-0")],
                     ["produce", "--dir", str(root), "--topic", "t", "--count", "1"]):
            proc = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, capture_output=True,
                                  text=True, timeout=120)
            assert_refused(proc.returncode, proc.stderr, last_line=argv[0] == "dump")
            assert tree_digest(root) == before


# ---- the same, longer (make test-slow) ---------------------------------------------------------

LONG = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@LONG
@given(damage=DAMAGE)
def test_clean_refuses_damage_long(valid_dir, damage):
    test_clean_refuses_a_damaged_log_and_leaves_it_byte_identical.hypothesis.inner_test(valid_dir, damage)


@pytest.mark.slow
@LONG
@given(damage=DAMAGE, partitions=st.integers(1, 3))
def test_produce_refuses_damage_long(valid_dir, damage, partitions):
    test_produce_into_a_damaged_directory_refuses_and_writes_nothing.hypothesis.inner_test(valid_dir, damage,
                                                                                          partitions)


@pytest.mark.slow
@LONG
@given(log=COMMAND_LOGS, via_stdin=st.booleans())
def test_run_refuses_command_logs_long(log, via_stdin):
    test_run_refuses_a_command_log_it_cannot_use_in_one_line.hypothesis.inner_test(log, via_stdin)


# ---- any arguments at all -------------------------------------------------------------------------

NUMBERS = ["-1", "0", "1", "3", "2147483648", "1" + "0" * 30, "-" + "9" * 25, "nan", "inf", "1e308", "x", ""]
FLAGS = {
    "produce": ["--partitions", "--count", "--value-bytes", "--key-cardinality", "--segment-bytes",
                "--index-interval-bytes", "--retention-bytes", "--retention-ms", "--seed", "--batch-size",
                "--ms-per-record"],
    "clean": ["--min-cleanable-dirty-ratio", "--delete-retention-ms", "--segment-bytes", "--now-ms"],
    "storage-experiment": ["--messages"],
    "run": ["--brokers", "--seed"],
    "scenario": ["--seed"],
    "assign": [],
    "dump": [],
}


@st.composite
def command_lines(draw, root: str):
    command = draw(st.sampled_from(sorted(FLAGS)))
    argv = {"produce": ["produce", "--dir", root, "--topic", draw(st.sampled_from(["t", "", "..", "a/b", "x" * 300]))],
            "clean": ["clean", os.path.join(root, draw(st.sampled_from(["t-0", "t-x", "missing-0", "garbage.jsonl"])))],
            "storage-experiment": ["storage-experiment", "--dir", os.path.join(root, "exp")],
            "run": ["run", "--commands", os.path.join(root, draw(st.sampled_from(["garbage.jsonl", "t-0",
                                                                                  "missing.jsonl"])))],
            "scenario": ["scenario", "run", draw(st.sampled_from(["", "nope", "kip101-data-loss"]))],
            "assign": ["assign", "--strategy", draw(st.sampled_from(["range", "sticky", "fair"])),
                       "--members", draw(JSON_ARGS), "--partitions", draw(st.sampled_from(['{"t": 2}', "[]", "{"]))],
            "dump": ["dump", os.path.join(root, draw(st.sampled_from(["t-0", "garbage.jsonl", "missing.log"])))],
            }[command]
    for flag in draw(st.lists(st.sampled_from(FLAGS[command]), max_size=3, unique=True)) if FLAGS[command] else []:
        argv += [flag, draw(st.sampled_from(NUMBERS))]
    if command == "produce":
        argv += ["--count", draw(st.sampled_from(["3", "-1", "1" + "0" * 30, "x"]))]
    return argv


@FUZZ
@given(data=st.data())
def test_any_command_line_ends_in_a_result_or_one_line_never_a_traceback(valid_dir, data):
    with copy_of(valid_dir) as root:
        (root / "garbage.jsonl").write_bytes(b"\x00\xff{[" * 20)
        argv = data.draw(command_lines(str(root)))
        assume(all("\x00" not in a for a in argv))
        code, _, err = run(*argv)
        if code:
            assert_refused(code, err, last_line=argv[0] == "dump")
        else:
            assert "error" not in err.lower() or argv[0] == "dump", err
