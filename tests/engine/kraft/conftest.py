import os
import tempfile

import pytest

from engine.kraft.quorum import Quorum


@pytest.fixture
def root():
    # /dev/shm when there is one: the schedules write many small files.
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-kraft-", dir=base) as d:
        yield d


@pytest.fixture
def make_quorum(root):
    made = []

    def make(voters=(1, 2, 3), observers=(), seed=0, **kw):
        q = Quorum(f"{root}/q{len(made)}", voters=voters, observers=observers, seed=seed, **kw)
        made.append(q)
        return q.start()

    return make


def _elect(q, after_epoch=0, limit_ms=10_000):
    """Run until a leader of an epoch above ``after_epoch`` has committed its
    LeaderChangeMessage; return it."""
    def done():
        leader = q.leader()
        return leader is not None and leader.epoch > after_epoch and leader.high_watermark > leader.epoch_start_offset
    assert q.run_until(done, limit_ms), q.describe()
    return q.leader()


@pytest.fixture
def elect():
    return _elect
