"""One run of the durability lab, and the figures of a cell of runs.

:func:`run_spec` plays one :class:`~engine.lab.grid.RunSpec` on a fresh replicated
cluster (``engine/cluster/run.py``) with the checker watching, and returns one flat row
of plain values. Spark executors and ``--no-spark`` call this same function, so a run's
row depends on its spec only (the event digest in the row proves it).

What a run does:

1. :func:`build_run` turns the cell into a seed, a cluster config and a command log: the
   seeded fault schedule of ``engine/cluster/scenarios.py`` (replication factor cut to
   ``rf``; ``random+slow`` adds a slow follower drawn from the same seed), or a named
   scenario with the grid's ``acks`` / ``min_isr`` / ``unclean`` applied when it varies them.
2. The commands are applied one by one. A ``consume`` or ``slow_follower`` refused because of
   the moment (no leader, broker down) is skipped, as ``run_schedule`` does, so the applied
   log replays exactly. With ``retries`` > 0, a produce request that failed is sent again
   with the same values (a producer without idempotence), up to that many times.
3. A consumer reads the whole partition; the checker's final check runs.

Row fields (:data:`ROW_FIELDS`): records acknowledged, acknowledged records the checker saw
lost (``lost``; ``lost_at_end``: not in the final leader's log), diverged-replica findings,
virtual time the partition could not take a write (:func:`unavailable_ms`), records the final
consumer saw more than once, and the run's applied command log.

Adding a figure: compute it in :func:`run_spec`, add its name and type to
:data:`ROW_FIELDS`, and, for a per-cell figure, a line in :data:`CELL_FIGURES`. Both the
Spark job and the plain-Python path read these tables.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
from collections import Counter
from typing import Any, Iterable

from ..cluster.run import Run, cluster_views, dump_command_log, make_config
from ..cluster.scenarios import FAULT_CONFIG, SCENARIOS, fault_schedule
from ..errors import BrokerNotAvailableError, KafkaError, LeaderNotAvailableError, OffsetOutOfRangeError
from .grid import AXES, NOT_APPLICABLE, SCENARIO_PREFIX, RunSpec, cell_id, cell_settings
from .schedules import steady_producer, targeted_schedule, window_of

__all__ = ["build_run", "run_spec", "run_many", "run_partition", "row_tuple", "client_unavailable_ms", "ROW_FIELDS",
           "CELL_FIGURES", "cell_figures", "worst_key", "schedule_kind", "TOPIC", "TARGETED_SHARE", "AXIS_TYPES",
           "typed_axes", "cell_axes", "worst_run_log", "run_indices", "FIGURE_DEFINITIONS"]

TOPIC = "t"
# Refused because of the moment the command came, not because it is wrong: skipped.
_MOMENTARY = (LeaderNotAvailableError, BrokerNotAvailableError, OffsetOutOfRangeError)
_SKIPPABLE = ("consume", "slow_follower")
SETTLE_MS = 1500
TARGETED_SHARE = 0.75     # of a "mixed" schedule's seeds: the rest are uniform random

# (name, type) of every row; types are Spark SQL type names. Axis columns come first.
# Axis columns are typed as the axis is (AXIS_TYPES): numbers as int, flags as boolean, the rest as
# strings; an axis a named scenario fixes itself is null.
AXIS_TYPES: dict = {"rf": "int", "acks": "string", "min_isr": "int", "unclean": "boolean", "truncation": "string",
                    "schedule": "string", "steps": "int", "retries": "int"}
ROW_FIELDS: tuple = tuple((a, AXIS_TYPES.get(a, "string")) for a in AXES) + (
    ("cell", "string"), ("run", "long"), ("seed", "long"),
    ("window", "string"), ("sent", "long"), ("missing_at_end", "long"),
    ("acked", "long"), ("lost", "long"), ("lost_at_end", "long"), ("diverged", "long"),
    ("hw_regressed", "long"), ("uncommitted_reads", "long"), ("unavailable_ms", "long"),
    ("duplicates", "long"), ("consumed", "long"), ("produce_requests", "long"), ("produce_failed", "long"),
    ("retries_sent", "long"), ("commands", "long"), ("time_ms", "long"), ("events", "long"),
    ("event_digest", "string"), ("first_loss_step", "long"),
)
# Not in a row: a run's command log is rebuilt from its spec when needed (the worst run of each
# cell), rather than carried through Spark and Parquet for every run.

# Per-cell figures: (name, how, row field). how: sum | max | mean | runs_positive (runs where field > 0).
CELL_FIGURES: tuple = (
    ("runs", "count", "run"),
    ("sent", "sum", "sent"),
    ("missing_at_end", "sum", "missing_at_end"),
    ("acked", "sum", "acked"),
    ("lost", "sum", "lost"),
    ("lost_at_end", "sum", "lost_at_end"),
    ("runs_with_loss", "runs_positive", "lost"),
    ("runs_diverged", "runs_positive", "diverged"),
    ("unavailable_ms_mean", "mean", "unavailable_ms"),
    ("unavailable_ms_max", "max", "unavailable_ms"),
    ("duplicates", "sum", "duplicates"),
    ("runs_with_duplicates", "runs_positive", "duplicates"),
    ("produce_failed", "sum", "produce_failed"),
)

# What each per-cell figure means and its unit (written into every summary.json).
FIGURE_DEFINITIONS: dict[str, dict[str, str]] = {
    "runs": {"unit": "runs", "definition": "runs in the cell (one seeded fault schedule each)"},
    "sent": {"unit": "records", "definition": "distinct records the client sent, whatever the answer"},
    "missing_at_end": {"unit": "records", "definition": "records sent that a consumer reading the whole partition "
                       "at the end did not find (acknowledged or not; the only loss figure acks=0 allows)"},
    "acked": {"unit": "records", "definition": "records the client was told were written (never with acks=0)"},
    "lost": {"unit": "records", "definition": "acknowledged records the checker found missing from the leader's "
             "log at some point of the run (check_acked_record_lost)"},
    "lost_at_end": {"unit": "records", "definition": "acknowledged records not in the final leader's log"},
    "runs_with_loss": {"unit": "runs", "definition": "runs in which at least one acknowledged record was lost"},
    "runs_diverged": {"unit": "runs", "definition": "runs whose live replicas held different records below "
                      "both high watermarks"},
    "unavailable_ms_mean": {"unit": "ms of virtual time per run", "definition": "time the client could not write: "
                            "from sending a request that failed or got no answer to sending the next one that "
                            "succeeded (or the end of the run), mean over runs"},
    "unavailable_ms_max": {"unit": "ms of virtual time", "definition": "the longest such time in one run"},
    "duplicates": {"unit": "records", "definition": "extra copies a final consumer read (a re-sent request that "
                   "had been written)"},
    "runs_with_duplicates": {"unit": "runs", "definition": "runs in which a consumer read a record twice"},
    "produce_failed": {"unit": "requests", "definition": "produce requests answered with an error or not at all"},
}

# The worst run of a cell: most records lost, then diverged, then unavailable, then
# duplicates; the lowest seed breaks ties. A row's key sorts ascending, worst first.
WORST_FIELDS = ("lost", "diverged", "unavailable_ms", "duplicates")


def worst_key(row: dict) -> tuple:
    return tuple(-row[f] for f in WORST_FIELDS) + (row["seed"],)


# ---- building a run -----------------------------------------------------------------------

def build_run(spec: RunSpec) -> tuple[int, dict, list[dict]]:
    """(seed, cluster config as Kafka names, command list) of one run."""
    s = cell_settings(spec.settings)
    config = dict(FAULT_CONFIG, truncation=s["truncation"])
    schedule = s["schedule"]
    if schedule.startswith(SCENARIO_PREFIX):
        scenario = SCENARIOS[schedule[len(SCENARIO_PREFIX):]]
        config = dict(scenario.config, truncation=s["truncation"])
        return spec.seed, config, _scenario_commands(scenario.commands(), s)
    kind = schedule_kind(schedule, spec.seed)
    if kind == "random":
        cmds = fault_schedule(spec.seed, acks=s["acks"], min_isr=s["min_isr"], unclean=s["unclean"],
                              steps=s["steps"], brokers=FAULT_CONFIG["brokers"])
    else:
        cmds = targeted_schedule(spec.seed, acks=s["acks"], min_isr=s["min_isr"], unclean=s["unclean"])
    if schedule in ("mixed", "targeted"):
        cmds = steady_producer(cmds, s["acks"])
    first = dict(cmds[0])
    first["assignment"] = [first["assignment"][0][:s["rf"]]]
    first["replication_factor"] = s["rf"]
    cmds[0] = first
    if schedule == "random+slow":
        cmds = _with_slow_follower(cmds, spec.seed)
    return spec.seed, config, cmds


def schedule_kind(schedule: str, seed: int) -> str:
    """"random" (the uniform fault schedule) or "targeted" for a run of this schedule axis value."""
    if schedule == "mixed":
        return "targeted" if random.Random(f"mixed-{seed}").random() < TARGETED_SHARE else "random"
    return "targeted" if schedule == "targeted" else "random"


def _scenario_commands(cmds: list[dict], s: dict) -> list[dict]:
    out = []
    for c in cmds:
        c = dict(c)
        if c["cmd"] == "produce" and s["acks"] is not None:
            c["acks"] = s["acks"]
        elif c["cmd"] == "create_topic":
            cfg = dict(c.get("config") or {})
            if s["min_isr"] is not None:
                cfg["min.insync.replicas"] = s["min_isr"]
            if s["unclean"] is not None:
                cfg["unclean.leader.election.enable"] = s["unclean"]
            c["config"] = cfg
        out.append(c)
    return out


def _with_slow_follower(cmds: list[dict], seed: int) -> list[dict]:
    """Slow one follower of the initial assignment from a seeded moment until the
    settling tail (the schedule's last ``heal_all``)."""
    rng = random.Random(f"slow-follower-{seed}")
    followers = cmds[0]["assignment"][0][1:] or cmds[0]["assignment"][0]
    broker = rng.choice(followers)
    tail = max(i for i, c in enumerate(cmds) if c["cmd"] == "heal_all")
    at = rng.randint(2, tail)
    delay = rng.choice([300, 800, 1500, 3000])
    return (cmds[:at] + [{"cmd": "slow_follower", "broker": broker, "delay_ms": delay}] + cmds[at:tail]
            + [{"cmd": "slow_follower", "broker": broker, "delay_ms": 0}] + cmds[tail:])


# ---- playing a run --------------------------------------------------------------------------

def run_spec(spec: RunSpec, scratch: str, *, with_log: bool = False) -> dict[str, Any]:
    """Play one run in a fresh directory under ``scratch`` (removed afterwards); its row
    (plus ``command_log``, the applied commands as replayable JSONL, with ``with_log``)."""
    tag = hashlib.sha1(spec.cell_id().encode()).hexdigest()[:12]
    root = os.path.join(scratch, f"run-{os.getpid()}-{tag}-{spec.run}")
    try:
        return _play(spec, root, with_log)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_many(specs: Iterable[RunSpec], scratch: str) -> Iterable[dict[str, Any]]:
    for spec in specs:
        yield run_spec(spec, scratch)


def _play(spec: RunSpec, root: str, with_log: bool = False) -> dict[str, Any]:
    s = cell_settings(spec.settings)
    seed, config, cmds = build_run(spec)
    # A scratch directory removed after the run: modelled crashes keep their meaning, but
    # no real one can outlive the run, so the OS is not asked to flush (Disk os_fsync).
    run = Run(seed, make_config(config), root, snapshot_every=10**9, os_fsync=False)
    retries = s["retries"] or 0
    attempts: dict[int, int] = {}       # request id -> attempts so far (of the original request)
    handled: set = set()
    first_loss: int | None = None
    sent = 0

    sends: list[tuple[int, int]] = []       # (virtual ms sent, request id) of every produce request
    seen = [0]                              # findings already looked at for the first loss

    def apply(c: dict) -> bool:
        nonlocal first_loss
        sent_at = run.cluster.scheduler.now_ms()
        try:
            run.apply(c)
        except _MOMENTARY:
            if c["cmd"] not in _SKIPPABLE and c["cmd"] != "produce":
                raise
            return False
        if c["cmd"] == "produce":
            sends.append((sent_at, run.results[-1]["request_id"]))
        if first_loss is None:
            findings = run.checker.findings
            if any(findings[i]["kind"] == "check_acked_record_lost" for i in range(seen[0], len(findings))):
                first_loss = run.position
            seen[0] = len(findings)
        return True

    def resend() -> bool:
        nonlocal sent
        any_sent = False
        for rid in sorted(run.checker.requests):
            req = run.checker.requests[rid]
            out = req["outcome"]
            if rid in handled or out is None or out["kind"] != "produce_failed":
                continue
            n = attempts.get(rid, 0)
            if n >= retries:
                handled.add(rid)
                continue
            before = run.position
            ok = apply({"cmd": "produce", "topic": req["topic"], "partition": req["partition"],
                        "acks": "all" if req["acks"] == -1 else req["acks"], "values": list(req["values"])})
            if ok and run.position > before:
                handled.add(rid)
                new_id = run.results[-1]["request_id"]
                attempts[new_id] = n + 1
                sent += 1
                any_sent = True
        return any_sent

    for c in cmds:
        apply(c)
        if retries:
            resend()
    for _ in range(retries):
        if not resend():
            break
        apply({"cmd": "advance", "ms": SETTLE_MS})
    consumed = _final_consume(run, apply)
    run.finish()
    row = _row(spec, run, config, consumed, first_loss, sent, sends)
    if with_log:
        row["command_log"] = dump_command_log(run.log, seed=run.seed, config=config)
    return row


def _final_consume(run: Run, apply) -> list[dict]:
    """A consumer reads the partition from its start up to the high watermark."""
    if not apply({"cmd": "consume", "topic": TOPIC, "offset": 0, "max_records": 10_000}):
        return []
    return run.results[-1]["records"]


def _row(spec: RunSpec, run: Run, config: dict, consumed: list[dict], first_loss: int | None,
         sent: int, sends: list[tuple[int, int]]) -> dict[str, Any]:
    findings = run.checker.findings
    kinds = Counter(f["kind"] for f in findings)
    lost = {(f["topic"], f["partition"], f["offset"], f["digest"]) for f in findings
            if f["kind"] == "check_acked_record_lost"}
    lost_at_end = _lost_at_end(run)
    seen = Counter(r["digest"] for r in consumed)
    requests = run.checker.requests.values()
    values = {v for r in requests for v in r["values"]}
    read = {r["value"] for r in consumed}
    row: dict[str, Any] = typed_axes(spec.cell)
    row.update({
        "cell": cell_id(spec.cell), "run": spec.run, "seed": spec.seed, "window": _window(spec),
        "sent": len(values), "missing_at_end": len(values - read),
        "acked": len(run.checker.acked), "lost": len(lost), "lost_at_end": lost_at_end,
        "diverged": kinds["check_replicas_diverged"], "hw_regressed": kinds["check_hw_regressed"],
        "uncommitted_reads": kinds["check_uncommitted_read"],
        "unavailable_ms": client_unavailable_ms(sends, _outcomes(run.checker.requests),
                                                run.cluster.scheduler.now_ms()),
        "duplicates": sum(n - 1 for n in seen.values()), "consumed": len(consumed),
        "produce_requests": len(run.checker.requests),
        "produce_failed": sum(1 for r in requests if r["outcome"] and r["outcome"]["kind"] == "produce_failed"),
        "retries_sent": sent, "commands": run.position, "time_ms": run.cluster.scheduler.now_ms(),
        "events": run.cluster.events.seq, "event_digest": run.event_digest(),
        "first_loss_step": first_loss,
    })
    return row


def _window(spec: RunSpec) -> str:
    """What kind of fault schedule the run played: a targeted window, "random", or the scenario."""
    schedule = spec.settings["schedule"]
    if schedule.startswith(SCENARIO_PREFIX):
        return schedule[len(SCENARIO_PREFIX):]
    if schedule_kind(schedule, spec.seed) == "targeted":
        return window_of(spec.seed)
    return "random"


def _outcomes(requests: dict) -> dict[int, tuple[str, int]]:
    """request id -> (produce_acked | produce_failed, virtual ms the client learnt it), from the
    checker's record of each request's first answer (the event ring may have dropped it)."""
    return {rid: (r["outcome"]["kind"], r["outcome"]["time_ms"]) for rid, r in requests.items()
            if r["outcome"] is not None}


def _lost_at_end(run: Run) -> int:
    """Acknowledged records that are not at their offset in their partition's final leader's
    log (a partition without a live leader counts none): ``Run.summary``'s ``present is False``,
    without building the whole summary (every replica's records as text, a copy of the checker)."""
    views = cluster_views(run.cluster, reader=run._reader)
    n = 0
    for a in run.checker.acked:
        view = views.get((a.topic, a.partition))
        leader = None if view is None else view.leader_replica()
        if leader is not None and leader.records.get(a.offset) != a.digest:
            n += 1
    return n


def client_unavailable_ms(sends: Iterable[tuple[int, int]], outcomes: dict, end_ms: int) -> int:
    """Virtual milliseconds in which the partition could not take the client's writes, as the
    client saw it: from the sending of a request that failed (an error, or no answer at all)
    to the sending of the next request that succeeded, or to ``end_ms``. A run whose
    requests all succeed is never unavailable, whatever the brokers went through meanwhile."""
    total = 0
    down_since = None
    for sent_at, rid in sorted(sends):
        kind = outcomes.get(rid, ("none", None))[0]
        if kind == "produce_acked":
            if down_since is not None:
                total += sent_at - down_since
                down_since = None
        elif down_since is None:
            down_since = sent_at
    if down_since is not None:
        total += max(0, end_ms - down_since)
    return total


# ---- per-cell figures (the plain-Python twin of the Spark aggregation) ---------------------

def cell_figures(rows: list[dict]) -> dict[str, Any]:
    """The figures of one cell's rows, as :data:`CELL_FIGURES` defines them, plus the worst run."""
    out: dict[str, Any] = {}
    for name, how, col in CELL_FIGURES:
        vals = [r[col] for r in rows]
        if how == "count":
            out[name] = len(vals)
        elif how == "sum":
            out[name] = sum(vals)
        elif how == "max":
            out[name] = max(vals)
        elif how == "mean":
            out[name] = round(sum(vals) / len(vals), 3)
        elif how == "runs_positive":
            out[name] = sum(1 for v in vals if v > 0)
        else:  # pragma: no cover - a typo in CELL_FIGURES
            raise AssertionError(how)
    worst = min(rows, key=worst_key)
    out["worst"] = {k: worst[k] for k in ("run", "seed", "lost", "lost_at_end", "diverged", "unavailable_ms",
                                          "duplicates", "first_loss_step", "event_digest")}
    return out


# ---- executor entry points (Spark's mapPartitions, and --no-spark) -------------------------

def typed_axes(cell: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A cell's axis values as row columns: ints, booleans and strings (None where not applicable)."""
    out: dict[str, Any] = {}
    for a, v in cell:
        t = AXIS_TYPES.get(a, "string")
        if v == NOT_APPLICABLE:
            out[a] = None
        elif t == "int":
            out[a] = int(v)
        elif t == "boolean":
            out[a] = v == "true"
        else:
            out[a] = v
    return out


def cell_axes(cell: str) -> dict[str, str]:
    """The canonical axis values of a cell id (``acks=all,min_isr=2,…``)."""
    return dict(part.split("=", 1) for part in cell.split(","))


def worst_run_log(cell: str, run: int, seed: int, event_digest: str, scratch: str) -> str:
    """The command log of a cell's worst run, rebuilt by playing its spec again; the replay
    must reach the same event digest as the row did (a run is a function of its spec)."""
    spec = RunSpec(tuple(cell_axes(cell).items()), run, seed)
    row = run_spec(spec, scratch, with_log=True)
    if row["event_digest"] != event_digest:
        raise AssertionError(f"run {cell} seed {seed} did not replay: digest {row['event_digest']} != {event_digest}")
    return row["command_log"]


def run_indices(cells: tuple, runs: int, seed: int, indices: Iterable[int]) -> Iterable[tuple]:
    """Rows of runs given by their index in the grid (``cell * runs + run``): what a Spark
    task receives, so only integers travel to executors and each spec is rebuilt there."""
    return run_partition((cells[i // runs], i % runs, seed + i % runs) for i in indices)


def row_tuple(row: dict) -> tuple:
    """A row in :data:`ROW_FIELDS` order (how it travels to Spark)."""
    return tuple(row[name] for name, _ in ROW_FIELDS)


def run_partition(specs: Iterable[tuple]) -> Iterable[tuple]:
    """Play (cell, run, seed) triples in one scratch directory (RAM-backed when /dev/shm
    exists) and yield each run's row as a tuple; the directory is removed at the end."""
    import tempfile

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-lab-", dir=base) as scratch:
        for cell, run, seed in specs:
            yield row_tuple(run_spec(RunSpec(tuple(cell), run, seed), scratch))
