"""Named scenarios run on the real cluster and end as the reference tables say (§5.7, §5.8)."""
import pytest

from engine.cluster.commands import parse_command
from engine.cluster.scenarios import SCENARIOS, get_scenario, run_scenario
from engine.errors import InvalidRequestError

REQUIRED = {"kip101-data-loss", "kip101-divergence", "unclean-election-loss", "isr-shrink-acks-all",
            "follower-slow-out-of-isr", "controller-failover"}


def test_the_required_scenarios_exist():
    assert REQUIRED <= set(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_step_is_a_valid_command_with_narration(name):
    sc = SCENARIOS[name]
    assert sc.title and sc.summary and set(sc.expected) == {"hw", "epoch"}
    for step in sc.steps:
        parse_command(step.command)
        assert step.narration.strip()


_RESULTS = {}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    """Run each (scenario, truncation) once per module; tests share the summaries."""
    def get(name, truncation):
        if (name, truncation) not in _RESULTS:
            root = tmp_path_factory.mktemp(f"{name}-{truncation}")
            _RESULTS[(name, truncation)] = run_scenario(SCENARIOS[name], truncation=truncation, disk_root=str(root))
        return _RESULTS[(name, truncation)]
    return get


@pytest.mark.parametrize("truncation", ["hw", "epoch"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_ends_as_expected(name, truncation, outcome):
    summary = outcome(name, truncation)
    verdict = summary["verdict"]
    assert verdict["matches"], "\n".join(verdict["mismatches"])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_ends_the_same_with_fetch_v12_diverging_epoch(name, tmp_path):
    """Kafka >= 2.7 finds the divergence inside the fetch; the outcome is the same."""
    summary = run_scenario(SCENARIOS[name], truncation="epoch", disk_root=str(tmp_path),
                           fetch_protocol="diverging_epoch")
    assert summary["verdict"]["matches"], "\n".join(summary["verdict"]["mismatches"])


def _values(summary, broker):
    part = summary["partitions"][0]
    return [r["value"] for r in next(x for x in part["replicas"] if x["broker"] == broker)["records"]]


def test_kip101_data_loss_is_fixed_by_epochs_only(outcome):
    hw = outcome("kip101-data-loss", "hw")
    ep = outcome("kip101-data-loss", "epoch")
    assert [f["value"] for f in hw["findings"] if f["kind"] == "check_acked_record_lost"] == ["m2"]
    assert ep["ok"] and _values(ep, 1) == _values(ep, 2) == ["m1", "m2", "m3"]
    # m3 is stamped with the new leader's epoch 1 on both replicas (reference §5.7 (b)).
    part = ep["partitions"][0]
    assert [r["records"][2]["epoch"] for r in part["replicas"]] == [1, 1]
    assert all(r["epoch_cache"] == [[0, 0], [1, 2]] for r in part["replicas"])


def test_kip101_divergence_leaves_different_records_at_offset_1_under_hw(outcome):
    hw = outcome("kip101-divergence", "hw")
    div = [f for f in hw["findings"] if f["kind"] == "check_replicas_diverged"]
    assert div and div[0]["offset"] == 1 and div[0]["brokers"] == [1, 2]


def test_isr_shrink_refuses_acks_all_but_not_acks_1(outcome):
    s = outcome("isr-shrink-acks-all", "epoch")
    by_value = {}
    for p in s["produce"]:
        by_value[p["request_id"]] = (p["acks"], p["result"], p["error"])
    assert list(by_value.values()) == [(-1, "acked", None), (-1, "acked", None), (-1, "failed", "NOT_ENOUGH_REPLICAS"),
                                       (1, "acked", None), (-1, "acked", None)]


def test_unknown_scenario_names_the_known_ones():
    with pytest.raises(InvalidRequestError, match="kip101-data-loss"):
        get_scenario("kip-000")


def test_scenario_summary_carries_the_narration(outcome):
    s = outcome("follower-slow-out-of-isr", "epoch")
    steps = s["scenario"]["steps"]
    assert len(steps) == len(get_scenario("follower-slow-out-of-isr").steps)
    assert steps[0]["command"]["cmd"] == "create_topic" and steps[0]["narration"]
