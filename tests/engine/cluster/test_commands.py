"""Commands: JSON dict → frozen dataclass, validation against the cluster, application."""
import dataclasses
import pathlib
import re

import pytest

from engine.cluster.commands import (COMMANDS, Produce, apply_command, command_to_dict, parse_command,
                                     record_digest)
from engine.errors import (InvalidConfigError, InvalidRequestError, InvalidTopicError, KafkaError,
                           UnknownTopicOrPartitionError)

from test_groups import GROUP_COMMAND_SAMPLES  # noqa: E402  (a sibling test module)

DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "commands.md"


# ---- parsing ---------------------------------------------------------------------------

def test_produce_parses_with_defaults():
    cmd = parse_command({"cmd": "produce", "topic": "t"})
    assert (cmd.topic, cmd.partition, cmd.acks, cmd.n) == ("t", 0, -1, 1)


@pytest.mark.parametrize("acks, expected", [("all", -1), (-1, -1), ("-1", -1), (1, 1), ("1", 1), (0, 0), ("0", 0)])
def test_acks_accepts_kafka_spellings(acks, expected):
    assert parse_command({"cmd": "produce", "topic": "t", "acks": acks}).acks == expected


def test_commands_are_frozen():
    cmd = parse_command({"cmd": "advance", "ms": 5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cmd.ms = 6


def test_to_dict_round_trips_every_command_with_its_defaults():
    samples = [
        {"cmd": "create_topic", "topic": "t", "partitions": 2, "assignment": [[0, 1], [1, 0]]},
        {"cmd": "produce", "topic": "t", "values": ["a", "b"], "key": "k"},
        {"cmd": "consume", "topic": "t"},
        {"cmd": "crash", "broker": 1}, {"cmd": "shutdown", "broker": 1}, {"cmd": "restart", "broker": 1},
        {"cmd": "isolate", "broker": 1}, {"cmd": "cut_link", "a": 0, "b": 1, "both": False},
        {"cmd": "heal_link", "a": 0, "b": 1}, {"cmd": "heal_all"},
        {"cmd": "set_link_delay", "a": 0, "b": 1, "delay_ms": 5},
        {"cmd": "set_drop_probability", "a": 0, "b": 1, "probability": 0.5},
        {"cmd": "slow_follower", "broker": 2, "delay_ms": 100}, {"cmd": "pause_follower", "broker": 2},
        {"cmd": "resume_follower", "broker": 2}, {"cmd": "advance", "ms": 10}, {"cmd": "jump", "to_ms": 100},
        {"cmd": "set_config", "scope": "topic", "target": "t", "changes": {"min.insync.replicas": 2}},
        {"cmd": "elect_preferred_leaders"},
        {"cmd": "create_producer", "name": "p"},
        {"cmd": "init_transactions", "name": "p"}, {"cmd": "begin_transaction", "name": "p"},
        {"cmd": "commit_transaction", "name": "p"}, {"cmd": "abort_transaction", "name": "p"},
        {"cmd": "configure_transactions", "transaction_state_log_num_partitions": 3},
        {"cmd": "send_offsets_to_transaction", "name": "p", "group": "g", "offsets": [["in", 0, 5]]},
        {"cmd": "offset_fetch", "group": "g", "require_stable": True},
        *GROUP_COMMAND_SAMPLES,
    ]
    assert {s["cmd"] for s in samples} == set(COMMANDS)
    for s in samples:
        d = command_to_dict(parse_command(s))
        assert parse_command(d) == parse_command(s)
        assert {k: v for k, v in d.items() if k in s} == s


@pytest.mark.parametrize("data, message", [
    ({"cmd": "explode"}, "unknown command 'explode'"),
    ({"cmd": "send_offsets_to_transaction", "name": "p", "group": "g", "offsets": [["in", -1, 5]]},
     "list of [topic, partition, offset] triples"),
    ({"cmd": "send_offsets_to_transaction", "name": "p", "group": "g", "offsets": [["in", 0]]},
     "list of [topic, partition, offset] triples"),
    ({"topic": "t"}, 'needs a "cmd"'),
    ("produce", "must be a JSON object"),
    ({"cmd": "produce"}, "missing required field 'topic'"),
    ({"cmd": "produce", "topic": "t", "colour": "red"}, "unknown field 'colour'"),
    ({"cmd": "produce", "topic": "t", "count": -3}, "'count' must be at least 1, got -3"),
    ({"cmd": "produce", "topic": "t", "count": "3"}, "'count' must be an integer"),
    ({"cmd": "produce", "topic": "t", "count": True}, "'count' must be an integer"),
    ({"cmd": "produce", "topic": "t", "acks": 2}, "'acks' must be"),
    ({"cmd": "produce", "topic": "t", "value": "a", "value_size": 3}, "at most one of value, values, value_size"),
    ({"cmd": "produce", "topic": "t", "values": ["a"], "count": 2}, "count 2 does not match 1 values"),
    ({"cmd": "produce", "topic": "t", "partition": -1}, "'partition' must be at least 0"),
    ({"cmd": "advance", "ms": -5}, "'ms' must be at least 0, got -5"),
    ({"cmd": "advance", "ms": 10**12}, "'ms' must be at most"),
    ({"cmd": "cut_link", "a": 0, "b": 1, "both": "yes"}, "'both' must be true or false"),
    ({"cmd": "set_drop_probability", "a": 0, "b": 1, "probability": 1.5}, "'probability' must be at most 1.0"),
    ({"cmd": "set_config", "scope": "galaxy", "changes": {"x": 1}}, "'scope' must be one of cluster, broker, topic"),
    ({"cmd": "set_config", "scope": "broker", "target": "b1", "changes": {"x": 1}}, "needs a broker id"),
    ({"cmd": "set_config", "scope": "topic", "changes": {"x": 1}}, "needs a topic name"),
    ({"cmd": "set_config", "scope": "cluster", "changes": {}}, "at least one config"),
    ({"cmd": "create_topic", "topic": "t", "assignment": [[0], []]}, "'assignment' must be"),
    ({"cmd": "crash"}, "missing required field 'broker'"),
])
def test_malformed_commands_are_refused_with_a_message_naming_the_problem(data, message):
    with pytest.raises(InvalidRequestError, match=re.escape(message)):
        parse_command(data)


def test_bad_topic_name_is_an_invalid_topic_error():
    with pytest.raises(InvalidTopicError):
        parse_command({"cmd": "create_topic", "topic": "no spaces"})


def test_generated_values_are_unique_per_sequence_and_sized():
    cmd = Produce(topic="t", count=3, value_size=20)
    a, b = cmd.record_values(7), cmd.record_values(8)
    assert len(set(a + b)) == 6 and all(len(v) == 20 for v in a)
    assert Produce(topic="t", count=2, value="m").record_values(0) == [b"m-0", b"m-1"]
    assert Produce(topic="t", value="m1").record_values(0) == [b"m1"]


def test_record_digest_tells_null_from_empty_and_key_from_value():
    assert record_digest(None, b"") != record_digest(None, None)
    assert record_digest(b"a", b"b") != record_digest(b"ab", b"")
    assert re.fullmatch(r"[0-9a-f]{12}", record_digest(None, b"x"))


def test_docs_describe_every_command_and_every_field():
    text = DOCS.read_text()
    for name, cls in COMMANDS.items():
        assert f"`{name}`" in text, name
        for f in dataclasses.fields(cls):
            assert f"`{f.name}`" in text, (name, f.name)


# ---- applying to a real cluster ------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path):
    from engine.cluster.cluster import Cluster
    from engine.cluster.config import ClusterConfig
    from engine.disk import Disk

    c = Cluster(Disk(tmp_path / "data"), ClusterConfig(brokers=3), seed=1)
    apply_command(c, {"cmd": "create_topic", "topic": "t", "partitions": 2, "replication_factor": 3,
                      "config": {"min.insync.replicas": 2}})
    apply_command(c, {"cmd": "advance", "ms": 500})
    return c


@pytest.mark.parametrize("data", [
    {"cmd": "produce", "topic": "t", "count": 2},
    {"cmd": "consume", "topic": "t"},
    {"cmd": "crash", "broker": 2}, {"cmd": "shutdown", "broker": 2}, {"cmd": "isolate", "broker": 2},
    {"cmd": "cut_link", "a": 0, "b": 1, "both": False}, {"cmd": "heal_link", "a": 0, "b": 1},
    {"cmd": "cut_link", "a": -1, "b": 1}, {"cmd": "heal_all"},
    {"cmd": "set_link_delay", "a": 0, "b": 2, "delay_ms": 30},
    {"cmd": "set_drop_probability", "a": 0, "b": 2, "probability": 0.25},
    {"cmd": "slow_follower", "broker": 1, "delay_ms": 100}, {"cmd": "pause_follower", "broker": 1},
    {"cmd": "resume_follower", "broker": 1}, {"cmd": "advance", "ms": 10}, {"cmd": "jump", "to_ms": 5000},
    {"cmd": "set_config", "scope": "topic", "target": "t", "changes": {"retention.ms": 60000}},
    {"cmd": "set_config", "scope": "cluster", "changes": {"replica.lag.time.max.ms": 10000}},
    {"cmd": "set_config", "scope": "broker", "target": 1, "changes": {"flush_interval_messages": 1}},
    {"cmd": "elect_preferred_leaders"},
    {"cmd": "create_topic", "topic": "u", "assignment": [[2, 1]]},
])
def test_every_command_applies_and_returns_plain_json(cluster, data):
    import json
    result = apply_command(cluster, data)
    assert result["ok"] is True and result["cmd"] == data["cmd"] and result["time_ms"] >= 500
    assert json.loads(json.dumps(result)) == result


def test_produce_then_advance_acknowledges_and_consume_reads_below_hw(cluster):
    r = apply_command(cluster, {"cmd": "produce", "topic": "t", "values": ["x", "y"]})
    apply_command(cluster, {"cmd": "advance", "ms": 100})
    assert cluster.produce_results[r["request_id"]].status == "ok"
    got = apply_command(cluster, {"cmd": "consume", "topic": "t"})
    assert [x["value"] for x in got["records"]] == ["x", "y"]
    assert [x["digest"] for x in got["records"]] == [x["digest"] for x in r["records"]]


def test_jump_moves_the_clock_to_an_absolute_time(cluster):
    assert apply_command(cluster, {"cmd": "jump", "to_ms": 4321})["time_ms"] == 4321


@pytest.mark.parametrize("data, error, message", [
    ({"cmd": "crash", "broker": 7}, InvalidRequestError, "crash: unknown broker 7; brokers are 0, 1, 2"),
    ({"cmd": "restart", "broker": 1}, InvalidRequestError, "restart: broker 1 is running"),
    ({"cmd": "cut_link", "a": 0, "b": 0}, InvalidRequestError, "two different brokers"),
    ({"cmd": "cut_link", "a": 0, "b": 5}, InvalidRequestError, "unknown broker 5"),
    ({"cmd": "produce", "topic": "nope"}, UnknownTopicOrPartitionError, "unknown topic 'nope'"),
    ({"cmd": "produce", "topic": "t", "partition": 2}, UnknownTopicOrPartitionError, "partitions 0..1, not 2"),
    ({"cmd": "consume", "topic": "t", "partition": 9}, UnknownTopicOrPartitionError, "not 9"),
    ({"cmd": "create_topic", "topic": "t"}, InvalidRequestError, "already exists"),
    ({"cmd": "create_topic", "topic": "v", "replication_factor": 4}, InvalidRequestError,
     "replication factor 4 is larger than the number of brokers (3)"),
    ({"cmd": "create_topic", "topic": "v", "assignment": [[0, 9]]}, InvalidRequestError, "unknown broker 9"),
    ({"cmd": "create_topic", "topic": "v", "assignment": [[0, 0]]}, InvalidRequestError, "lists a broker twice"),
    ({"cmd": "create_topic", "topic": "v", "partitions": 2, "assignment": [[0]]}, InvalidRequestError,
     "assignment lists 1 partitions but partitions is 2"),
    ({"cmd": "create_topic", "topic": "v", "config": {"segment.bytes": 1}}, InvalidConfigError, "segment_bytes"),
    ({"cmd": "jump", "to_ms": 10}, InvalidRequestError, "cannot go backwards: now 500 ms, asked 10 ms"),
    ({"cmd": "set_config", "scope": "topic", "target": "zz", "changes": {"retention.ms": 1}},
     UnknownTopicOrPartitionError, "unknown topic 'zz'"),
    ({"cmd": "set_config", "scope": "broker", "target": 8, "changes": {"flush.ms": 1}}, InvalidRequestError,
     "unknown broker 8"),
    ({"cmd": "set_config", "scope": "topic", "target": "t", "changes": {"retention.ms": -9}}, InvalidConfigError,
     "retention_ms"),
    ({"cmd": "set_config", "scope": "cluster", "changes": {"no.such.config": 1}}, InvalidConfigError,
     "unknown config"),
])
def test_refused_commands_leave_the_cluster_as_it_was(cluster, data, error, message):
    before = (cluster.events.digest(), cluster.scheduler.now_ms(), sorted(cluster.controller.topics),
              cluster.rng.getstate())
    with pytest.raises(error, match=re.escape(message)):
        apply_command(cluster, data)
    assert (cluster.events.digest(), cluster.scheduler.now_ms(), sorted(cluster.controller.topics),
            cluster.rng.getstate()) == before


def test_errors_carry_kafka_codes(cluster):
    with pytest.raises(KafkaError) as exc:
        apply_command(cluster, {"cmd": "produce", "topic": "nope"})
    assert exc.value.to_dict()["code"] == 3


def test_broker_scope_set_config_accepts_kafka_dotted_names(cluster):
    # The documented form (Kafka's name) must reach the LogConfig field flush_interval_messages
    # (an early core mapped it to the non-existent "flush_messages").
    apply_command(cluster, {"cmd": "set_config", "scope": "broker", "target": 1, "changes": {"flush.messages": 1}})
    part = cluster.brokers[1].partitions[("t", 0)]
    assert part.log.config.flush_interval_messages == 1


def test_crashing_a_broker_that_is_down_is_refused_and_changes_nothing(cluster):
    from engine.errors import BrokerNotAvailableError
    apply_command(cluster, {"cmd": "crash", "broker": 2})
    digest = cluster.events.digest()
    for cmd in ("crash", "shutdown"):
        with pytest.raises(BrokerNotAvailableError, match=f"{cmd}: broker 2 is already down"):
            apply_command(cluster, {"cmd": cmd, "broker": 2})
    assert cluster.events.digest() == digest


def test_every_example_in_the_docs_parses():
    import json
    examples = [line for line in DOCS.read_text().splitlines() if line.startswith('{"cmd"')]
    assert len(examples) >= 12
    for line in examples:
        parse_command(json.loads(line))


from hypothesis import given, settings, strategies as st  # noqa: E402

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(COMMANDS)), st.dictionaries(st.sampled_from(
    ["topic", "partition", "acks", "count", "value", "values", "value_size", "broker", "a", "b", "both", "ms",
     "to_ms", "delay_ms", "probability", "scope", "target", "changes", "config", "assignment", "partitions",
     "replication_factor", "offset", "max_records", "key", "timeout_ms", "zzz"]), _json, max_size=5))
def test_arbitrary_json_is_parsed_or_refused_with_an_engine_error(name, fields):
    try:
        cmd = parse_command({"cmd": name, **fields})
    except KafkaError:
        return
    assert parse_command(command_to_dict(cmd)) == cmd
