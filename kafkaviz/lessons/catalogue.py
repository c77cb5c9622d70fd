"""The course's table of contents: every lesson of PRODUCT.md, in order.

A lesson is *available* when it has a content file,
``kafkaviz/lessons/content/<slug>.en.toml`` (see ``content.py`` and docs/web.md);
then its page is served at ``/lessons/<slug>/`` by the one lesson template, and its
title and summary come from that file. The entries below give the order and, for
lessons not written yet, the title and summary the home page shows next to "Not yet
available" -- never a faked page.
"""
from __future__ import annotations

from dataclasses import dataclass

from .content import LessonContent, content_slugs, load_content

__all__ = ["Lesson", "LESSONS", "SANDBOX", "get_lesson", "available_lessons"]


@dataclass(frozen=True)
class Lesson:
    """One entry of the course. ``title``/``summary`` are the plan's until content exists."""

    number: int
    slug: str
    title: str
    summary: str

    @property
    def available(self) -> bool:
        return self.slug in content_slugs()

    def content(self, lang: str = "en") -> LessonContent | None:
        return load_content(self.slug, lang)

    def shown(self, lang: str = "en") -> "Lesson":
        """The entry with the content file's title and summary, when there is one."""
        c = self.content(lang)
        return self if c is None else Lesson(self.number, self.slug, c.title, c.summary)

    @property
    def sandbox_kind(self) -> str | None:
        c = self.content()
        return None if c is None else c.kind


LESSONS: tuple[Lesson, ...] = (
    Lesson(1, "topics-partitions-offsets", "Topics, partitions and offsets", "Ordering holds per partition only."),
    Lesson(2, "segments", "Segments", "Files named by a 20-digit base offset, rolling at segment.bytes."),
    Lesson(3, "offset-index", "The sparse offset index",
           "Relative offsets, 8-byte entries, index.interval.bytes, and the three-step lookup."),
    Lesson(4, "time-index", "The time index", "Looking a message up by timestamp, in four steps."),
    Lesson(5, "retention", "Retention",
           "By time, by size, by log start offset; the active segment; .deleted files."),
    Lesson(6, "compaction", "Log compaction", "Cleaner point, dirty ratio, tombstones; offsets keep their gaps."),
    Lesson(7, "flush-and-page-cache", "Flush, page cache and zero copy",
           "What a crash loses without fsync, and why Kafka replicates instead."),
    Lesson(8, "replication", "Replication", "LEO, high watermark, remote LEO and the follower fetch loop."),
    Lesson(9, "isr-and-acks", "ISR, acks and min.insync.replicas", "Who is in sync, and what acks=all really waits for."),
    Lesson(10, "leader-epoch", "Why leader epoch", "Data loss and divergence under high-watermark truncation."),
    Lesson(11, "leader-election", "Leader election", "Clean and unclean election, and the controller."),
    Lesson(12, "consumer-groups", "Consumer groups", "Range, round-robin and sticky assignors; rebalancing."),
    Lesson(13, "committing-offsets", "Committing offsets and lag", "Where a group resumes, and how far behind it is."),
    Lesson(14, "idempotence-and-transactions", "Idempotent producer and transactions",
           "Producer ids, sequence numbers, markers and the transaction index."),
    Lesson(15, "timing-wheel", "The timing wheel", "How delayed produce and fetch requests wait."),
)

# The free sandbox: not a lesson of the course, but served and run like one
# (content/sandbox.en.toml); any run of a lesson with the same sandbox kind can be forked into it.
SANDBOX = Lesson(0, "sandbox", "Sandbox", "Build a cluster, break it, and watch what the engine does.")

_BY_SLUG = {lesson.slug: lesson for lesson in (*LESSONS, SANDBOX)}
assert len(_BY_SLUG) == len(LESSONS) + 1, "lesson slugs must be unique"


def get_lesson(slug: str) -> Lesson | None:
    return _BY_SLUG.get(slug)


def available_lessons() -> list[Lesson]:
    return [lesson for lesson in LESSONS if lesson.available]
