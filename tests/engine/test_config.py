import pytest

from engine.config import LogConfig, validate_topic_name
from engine.errors import InvalidConfigError, InvalidTopicError


def test_defaults_are_kafkas():
    c = LogConfig()
    assert (c.segment_bytes, c.index_interval_bytes, c.segment_index_bytes) == (1073741824, 4096, 10485760)
    assert (c.retention_ms, c.retention_bytes, c.file_delete_delay_ms) == (604800000, -1, 60000)
    assert c.log_retention_check_interval_ms == 300000 and c.segment_ms == 604800000


def test_replace_accepts_kafka_dotted_names_and_digit_strings():
    c = LogConfig().replace(**{"segment.bytes": "1000", "retention_ms": 60000, "preallocate": "false"})
    assert (c.segment_bytes, c.retention_ms, c.preallocate) == (1000, 60000, False)


@pytest.mark.parametrize("changes, message", [
    ({"segment_bytes": 13}, "at least 14"),
    ({"retention_ms": -2}, "at least -1"),
    ({"segment_bytes": 2**31}, "at most"),
    ({"segment_bytes": "lots"}, "integer"),
    ({"segment_bytes": True}, "integer"),
    ({"cleanup_policy": "shred"}, "one of"),
    ({"no_such_thing": 1}, "unknown config"),
])
def test_out_of_range_or_unknown_config_is_a_clear_error(changes, message):
    with pytest.raises(InvalidConfigError, match=message):
        LogConfig().replace(**changes)


@pytest.mark.parametrize("name", ["orders", "a.b_c-d", "x" * 249, "..."])
def test_valid_topic_names(name):
    assert validate_topic_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a/b", "a b", "ü", "../etc", None, 7])
def test_invalid_topic_names(name):
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)
