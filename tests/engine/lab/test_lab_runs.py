"""One lab run: deterministic, the fault-schedule harness's findings, and its figures."""
import types

import pytest

from engine.cluster.scenarios import run_schedule
from engine.lab.grid import RunSpec, make_grid
from engine.lab.runs import ROW_FIELDS, build_run, cell_figures, client_unavailable_ms, run_spec


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
    with_log = run_spec(spec, scratch, with_log=True)
    assert with_log.pop("command_log").startswith('{"config"') and with_log == a


def test_the_lab_finds_exactly_the_losses_the_fault_schedule_harness_finds(scratch, tmp_path):
    # Same schedules, same cluster config: the lab's loss count agrees with run_schedule's
    # checker, seed by seed, under HW truncation and under acks=1.
    # Seeds 308 (hw) and 42 (acks=1) are schedules known to lose acknowledged records.
    for truncation, acks, lossy in (("hw", "all", 308), ("epoch", 1, 42)):
        losing = 0
        for seed in sorted({*range(25, 40), lossy}):
            row = run_spec(_spec(seed, truncation=truncation, acks=str(acks), schedule="random"), scratch)
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


def test_unavailable_time_is_what_the_client_saw_from_a_failed_request_to_the_next_success():
    sends = [(0, 1), (100, 2), (200, 3), (300, 4), (900, 5), (1000, 6)]
    outcomes = {1: ("produce_acked", 5), 2: ("produce_failed", 600), 3: ("produce_failed", 700),
                4: ("produce_acked", 305), 5: ("produce_failed", 1400)}     # 6: never answered
    # Down from 100 (the first failure) to 300 (the next success), then from 900 to the end.
    assert client_unavailable_ms(sends, outcomes, end_ms=1500) == 200 + 600
    assert client_unavailable_ms(sends[:1], outcomes, end_ms=1500) == 0


def test_a_run_that_plays_through_an_outage_is_unavailable_for_seconds_not_an_instant(scratch):
    # A targeted schedule keeps the client writing through its faults: outages are seen.
    rows = [run_spec(_spec(seed, schedule="targeted"), scratch) for seed in range(6)]
    assert max(r["unavailable_ms"] for r in rows) >= 1000
    assert all(r["sent"] >= r["acked"] > 0 for r in rows)


def test_cell_figures_pick_the_run_that_lost_most_as_the_worst():
    rows = [{"run": i, "seed": i, "sent": 4, "missing_at_end": lost, "acked": 3, "lost": lost, "lost_at_end": lost, "diverged": 0,
             "unavailable_ms": 0, "duplicates": 0, "produce_failed": 0, "first_loss_step": None,
             "event_digest": "", "command_log": ""} for i, lost in enumerate([0, 2, 2, 1])]
    fig = cell_figures(rows)
    assert (fig["runs"], fig["acked"], fig["lost"], fig["runs_with_loss"]) == (4, 12, 5, 3)
    assert fig["worst"]["seed"] == 1
