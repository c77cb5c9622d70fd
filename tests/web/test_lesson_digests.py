"""Every guided lesson's event stream is the one it was before its commands became the
engine's (issue 18): the same seed and the same steps give the same events, byte for byte.

The digests below were taken on main before the switch (commit c62fefa), when the storage
lessons sent their own dialect (``type``, ``advance`` in ``seconds``). The switch changed
the units of ``advance`` (seconds → ms) but not what happens, and no event carries a
command's units, so not one digest moved. A change that does move one on purpose updates
the value here and says why in its commit.
"""
from __future__ import annotations

import pytest

from kafkaviz.lessons.catalogue import LESSONS
from kafkaviz.live.kinds import Limits, get_kind

# slug -> the first 16 hex digits of the run's stream digest after each guided step
GOLDEN = {
    "topics-partitions-offsets": [
        "807b15d4ff0f0e87", "b332c5230d9fa714", "8a1127c58012642c", "165665d4679ab683",
        "16db35e96e6daa67",
    ],
    "segments": [
        "d1e09d93e77b8031", "0ba2d79630085169", "fdbcf5de60e987db", "dda8e8805389bd85",
        "4df07af7db8eb184", "4dd79262919a71b4",
    ],
    "offset-index": [
        "82b54962eb8d7b7e", "0c4755f55f700ee7", "bde4c87f900e2fb6", "b7f697a09642f726",
        "3f21bc2587e806a0", "464aa28df8f38dea",
    ],
    "time-index": [
        "0c4755f55f700ee7", "5e31cb93c6c97940", "ca33fd2284f43ffa", "f9381d0e4faf68e6",
        "3ca5736e4ee46c98",
    ],
    "retention": [
        "60009338ca3e9e65", "352d50f13dbc11d8", "465ff198cc40cfde", "155a8353484f04ea",
        "4b667d97792ec9d8", "b7b8458d9a785097",
    ],
    "compaction": [
        "479aaff5483a26c1", "6a5c03e2654e260b", "ba9c257e2f5df849", "3592ae227291f941",
        "ae288b0ede44b681",
    ],
    "flush-and-page-cache": [
        "1a5b09e2f4658de9", "b65739fa7e6d73be", "367f1909ef90ed7a", "ab8c9ab9491ce310",
        "c73c9f1380758c71", "507d2016a40154c4", "0ddf5e71e89e4789", "a9dda9a22f25b86f",
    ],
    "idempotence-and-transactions": [
        "af33c7707103115d", "fae38561080b7a2f", "79ab4d30b880a66b", "35bf2608559594fb",
        "90d2b620ff12f3fc", "6afc4c1f13e53ad9", "b44452d920b889ea", "374a259871a0e64a",
        "86622c2d9bd34399", "235a8db34dcccb37", "cd992b1571332893", "c92b87f7de716b1b",
        "35eb8ecdede82836", "9824d705116054d4", "6e15877eeb5881ac", "dba96a6cd98318ad",
        "653bbbde7ba5d756", "b47626271bd3afbe",
    ],
    "timing-wheel": [
        "bac83b261efb192b", "d10e78f48f787bd4", "d97b0c60c9757072", "f6007eb4b3475b0d",
        "f173f3cfdff9e0a7", "26bc10b6c97ecbc5", "7cb03bf6ccff6ff2", "9cdb3f6056509fbb",
        "ecbbf80d3d53b8cf",
    ],
    # lesson 16 (issue 21): the committed recording of a real client's session, replayed
    "what-your-client-says": [
        "324af3136b08e5b7", "762cc91e9fc4dd0e", "ea474c6df58be462", "ef9c6a212882b8ea",
        "42b5a1755c6bc720", "8275dce6c87aa52e", "4110932155b59626", "8d5abc7d03bc1c25",
        "cfae1195453fad44",
    ],
}

STEPPED = [lesson.slug for lesson in LESSONS
           if lesson.content() is not None and lesson.content().kind not in (None, "replication")]


def _digests(tmp_path, slug: str) -> list[str]:
    lesson = next(x for x in LESSONS if x.slug == slug).content()
    kind = get_kind(lesson.kind)(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=lesson)
    try:
        out = []
        while kind.position < kind.total_steps:
            kind.step()
            out.append(kind.events.digest()[:16])
        return out
    finally:
        kind.close()


def test_every_lesson_with_its_own_steps_has_a_golden_digest():
    assert sorted(STEPPED) == sorted(GOLDEN)


@pytest.mark.parametrize("slug", sorted(GOLDEN))
def test_a_lessons_guided_steps_give_the_events_they_gave_before_the_switch(tmp_path, slug):
    assert _digests(tmp_path, slug) == GOLDEN[slug]
