"""One lab run: deterministic, the fault-schedule harness's findings, and its figures."""
import types

import pytest

from engine.cluster.scenarios import run_schedule
from engine.lab.grid import RunSpec, make_grid
from engine.lab.runs import ROW_FIELDS, build_run, cell_figures, run_spec, unavailable_ms


@pytest.fixture
def scratch(tmp_path):
    return str(tmp_path)


def _spec(seed, **axes):
    grid = make_grid(None, {k: [v] for k, v in axes.items()}, runs=1, seed=seed)
    return grid.specs()[0]


def test_a_run_is_a_pure_function_of_its_spec(scratch):
    spec = _spec(57, truncation="hw")
    a, b = run_spec(spec, scratch), run_spec(spec, scratch)
    assert a == b
    assert [n for n, _ in ROW_FIELDS] == list(a)
    assert a["command_log"].startswith('{"config"')


def test_the_lab_finds_exactly_the_losses_the_fault_schedule_harness_finds(scratch, tmp_path):
    # Same schedules, same cluster config: the lab's loss count agrees with run_schedule's
    # checker, seed by seed, under HW truncation and under acks=1.
    # Seeds 308 (hw) and 42 (acks=1) are schedules known to lose acknowledged records.
    for truncation, acks, lossy in (("hw", "all", 308), ("epoch", 1, 42)):
        losing = 0
        for seed in sorted({*range(25, 40), lossy}):
            row = run_spec(_spec(seed, truncation=truncation, acks=str(acks)), scratch)
            run = run_schedule(seed, str(tmp_path / f"{truncation}-{acks}-{seed}"), truncation=truncation, acks=acks)
            lost = {(f["offset"], f["digest"]) for f in run.checker.findings if f["kind"] == "check_acked_record_lost"}
            assert row["lost"] == len(lost), (truncation, acks, seed)
            losing += row["lost"] > 0
        # Both weaker settings lose acknowledged records in some of these schedules.
        assert losing > 0, (truncation, acks)


def test_rf_cuts_the_assignment_and_slow_adds_a_slow_follower_until_the_tail():
    _, _, cmds = build_run(_spec(4, rf="2", schedule="random+slow"))
    assert cmds[0]["replication_factor"] == 2 and len(cmds[0]["assignment"][0]) == 2
    slow = [i for i, c in enumerate(cmds) if c["cmd"] == "slow_follower"]
    assert len(slow) == 2 and cmds[slow[0]]["delay_ms"] > 0 and cmds[slow[1]]["delay_ms"] == 0
    assert cmds[slow[1] + 1]["cmd"] == "heal_all"


def test_a_named_scenario_under_hw_truncation_loses_its_acknowledged_record(scratch):
    hw = run_spec(_spec(0, schedule="scenario:kip101-data-loss", truncation="hw"), scratch)
    epoch = run_spec(_spec(0, schedule="scenario:kip101-data-loss", truncation="epoch"), scratch)
    assert hw["lost"] == 1 and hw["first_loss_step"] is not None
    assert epoch["lost"] == 0 and epoch["first_loss_step"] is None


def test_retries_without_idempotence_make_a_consumer_see_duplicates(scratch):
    found = None
    for seed in range(60):
        row = run_spec(_spec(seed, retries="3"), scratch)
        if row["duplicates"]:
            found = row
            break
    assert found is not None, "no run in seeds 0..59 re-sent a record that had been written"
    assert found["retries_sent"] > 0
    assert run_spec(_spec(found["seed"], retries="0"), scratch)["duplicates"] == 0


def _env(t, kind, **fields):
    return types.SimpleNamespace(time_ms=t, event=types.SimpleNamespace(kind=kind, **fields))


def test_unavailable_time_counts_no_live_leader_and_a_short_isr_for_acks_all():
    events = [
        _env(0, "broker_started", broker=0), _env(0, "broker_started", broker=1),
        _env(10, "topic_created", topic="t"),
        _env(15, "leader_elected", topic="t", partition=0, chosen=0, isr=[0, 1]),
        _env(100, "broker_crashed", broker=0),            # leader dead: unavailable
        _env(400, "leader_elected", topic="t", partition=0, chosen=1, isr=[1]),   # ISR 1 < 2
        _env(700, "isr_expanded", topic="t", partition=0, isr=[1, 0]),
    ]
    assert unavailable_ms(events, "t", 0, acks_all=False, min_isr=2, end_ms=1000) == 5 + 300
    assert unavailable_ms(events, "t", 0, acks_all=True, min_isr=2, end_ms=1000) == 5 + 300 + 300


def test_cell_figures_pick_the_run_that_lost_most_as_the_worst():
    rows = [{"run": i, "seed": i, "acked": 3, "lost": lost, "lost_at_end": lost, "diverged": 0,
             "unavailable_ms": 0, "duplicates": 0, "produce_failed": 0, "first_loss_step": None,
             "event_digest": "", "command_log": ""} for i, lost in enumerate([0, 2, 2, 1])]
    fig = cell_figures(rows)
    assert (fig["runs"], fig["acked"], fig["lost"], fig["runs_with_loss"]) == (4, 12, 5, 3)
    assert fig["worst"]["seed"] == 1
