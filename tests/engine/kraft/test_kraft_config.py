"""QuorumConfig: Kafka's defaults and the timing rules of KafkaRaftClient."""
import random

from engine.kraft.config import QuorumConfig


def test_defaults_are_kafkas():
    c = QuorumConfig()
    assert (c.election_timeout_ms, c.election_backoff_max_ms, c.fetch_timeout_ms, c.request_timeout_ms,
            c.retry_backoff_ms, c.fetch_max_wait_ms) == (1000, 1000, 2000, 2000, 20, 500)
    assert c.check_quorum_timeout_ms == 3000


def test_election_timeouts_are_drawn_in_one_to_two_timeouts():
    c, rng = QuorumConfig(), random.Random(1)
    draws = [c.random_election_timeout_ms(rng) for _ in range(2000)]
    assert min(draws) >= 1000 and max(draws) < 2000 and len(set(draws)) > 500


def test_binary_exponential_backoff_grows_with_retries_and_is_capped():
    c, rng = QuorumConfig(), random.Random(2)
    first = {c.binary_exponential_backoff_ms(1, rng) for _ in range(200)}
    assert first == {0, 100}
    assert max(c.binary_exponential_backoff_ms(9, rng) for _ in range(200)) == 1000


def test_strict_exponential_backoff_orders_the_preferred_successors():
    c = QuorumConfig()
    assert [c.strict_exponential_backoff_ms(p, 4) for p in range(4)] == [0, 125, 250, 500]
    assert c.strict_exponential_backoff_ms(-1, 4) == 1000
