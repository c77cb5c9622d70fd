"""The lesson registry: every lesson of PRODUCT.md, in order.

A lesson is *available* when it names a page template; then its page is served at
``/lessons/<slug>/`` and, when it names a ``sandbox_kind``, the page gets a live
sandbox of that kind (see ``kafkaviz/live/kinds.py``). Lessons not built yet stay
listed, marked as not yet available -- never faked. Adding a lesson = filling in
``template`` (and ``sandbox_kind``/``diagrams``) on its entry; see docs/web.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Lesson", "LESSONS", "get_lesson", "available_lessons"]


@dataclass(frozen=True)
class Lesson:
    """One lesson of the course."""

    number: int
    slug: str
    title: str
    summary: str
    seeds: tuple[str, ...]
    template: str | None = None          # page template; None = not built yet
    sandbox_kind: str | None = None      # key into kafkaviz.live.kinds.SANDBOX_KINDS
    diagrams: tuple[str, ...] = field(default=())  # JS modules under static/js/, e.g. "partition-dir"

    @property
    def available(self) -> bool:
        return self.template is not None


LESSONS: tuple[Lesson, ...] = (
    Lesson(1, "topics-partitions-offsets", "Topics, partitions and offsets",
           "Ordering holds per partition only.", ("001", "002")),
    Lesson(2, "segments", "Segments",
           "Files named by a 20-digit base offset, rolling at segment.bytes, deleted by retention.",
           ("000 §1.1 §1.4", "001", "002 §1.1", "004"),
           template="lessons/segments.html", sandbox_kind="segments", diagrams=("partition-dir", "timeline")),
    Lesson(3, "offset-index", "The sparse offset index",
           "Relative offsets, 8-byte entries, index.interval.bytes, and the three-step lookup.",
           ("000 §1.2", "001", "002 §1.2")),
    Lesson(4, "time-index", "The time index",
           "Looking a message up by timestamp, in four steps.", ("001", "002 §1.2")),
    Lesson(5, "retention", "Retention",
           "By time, by size, by log start offset; the active segment; .deleted files.", ("000 §1.3", "002 §1.3")),
    Lesson(6, "compaction", "Log compaction",
           "Cleaner point, dirty ratio, tombstones; offsets keep their gaps.", ("002 §1.4", "003")),
    Lesson(7, "flush-and-page-cache", "Flush, page cache and zero copy",
           "What a crash loses without fsync, and why Kafka replicates instead.", ("000 §2", "001", "003")),
    Lesson(8, "replication", "Replication",
           "LEO, high watermark, remote LEO and the follower fetch loop.", ("000 §3.1–3.2", "004")),
    Lesson(9, "isr-and-acks", "ISR, acks and min.insync.replicas",
           "Who is in sync, and what acks=all really waits for.", ("003", "004")),
    Lesson(10, "leader-epoch", "Why leader epoch",
           "Data loss and divergence under high-watermark truncation, and the fix.", ("000 §3.3", "004"),
           template="lessons/leader_epoch.html", sandbox_kind="replication",
           diagrams=("cluster", "replica-lanes", "epoch-cache", "step-timeline")),
    Lesson(11, "leader-election", "Leader election",
           "Clean and unclean election, and the controller.", ("003", "004")),
    Lesson(12, "consumer-groups", "Consumer groups",
           "Range, round-robin and sticky assignors; rebalancing.", ("001", "003")),
    Lesson(13, "committing-offsets", "Committing offsets and lag", "Where a group resumes, and how far behind it is.",
           ("003",)),
    Lesson(14, "idempotence-and-transactions", "Idempotent producer and transactions",
           "Producer ids, sequence numbers, markers and the transaction index.", ("003",)),
    Lesson(15, "timing-wheel", "The timing wheel",
           "How delayed produce and fetch requests wait.", ("003",)),
)

_BY_SLUG = {lesson.slug: lesson for lesson in LESSONS}
assert len(_BY_SLUG) == len(LESSONS), "lesson slugs must be unique"


def get_lesson(slug: str) -> Lesson | None:
    return _BY_SLUG.get(slug)


def available_lessons() -> list[Lesson]:
    return [lesson for lesson in LESSONS if lesson.available]
