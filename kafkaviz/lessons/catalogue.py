"""The course's table of contents: the order of PRODUCT.md's lessons, and nothing else.

Everything a lesson is -- its number, title and summary in every language -- is in its
content file, ``kafkaviz/lessons/content/<slug>.<lang>.toml`` (see ``content.py`` and
docs/web.md, "Adding a lesson"). A lesson is *available* once its English file exists;
then ``/lessons/<slug>/`` renders it with the one lesson template. A slug listed here
without a file is a planned lesson: the home page says "Not yet available" under its
slug, never a faked page. A test keeps every content file's ``number`` equal to its
place in ``ORDER``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .content import LessonContent, content_slugs, load_content

__all__ = ["Lesson", "ORDER", "LESSONS", "SANDBOX", "get_lesson", "available_lessons"]

ORDER: tuple[str, ...] = (
    "topics-partitions-offsets",
    "segments",
    "offset-index",
    "time-index",
    "retention",
    "compaction",
    "flush-and-page-cache",
    "replication",
    "isr-and-acks",
    "leader-epoch",
    "leader-election",
    "consumer-groups",
    "committing-offsets",
    "idempotence-and-transactions",
    "timing-wheel",
    "what-your-client-says",
    "controller-quorum",
)


@dataclass(frozen=True)
class Lesson:
    """One entry of the course, seen in one language. Its facts are read from the content
    file each time (``load_content`` caches the parsed files)."""

    slug: str
    lang: str = "en"

    @property
    def available(self) -> bool:
        return self.slug in content_slugs()

    def content(self, lang: str | None = None) -> LessonContent | None:
        return load_content(self.slug, lang or self.lang)

    def shown(self, lang: str = "en") -> "Lesson":
        """The same entry, whose title and summary are in ``lang``."""
        return Lesson(self.slug, lang)

    @property
    def number(self) -> int:
        c = self.content()
        return c.number if c is not None else ORDER.index(self.slug) + 1

    @property
    def title(self) -> str:
        c = self.content()
        return self.slug if c is None else c.title

    @property
    def summary(self) -> str:
        c = self.content()
        return "" if c is None else c.summary

    @property
    def sandbox_kind(self) -> str | None:
        c = self.content()
        return None if c is None else c.kind


LESSONS: tuple[Lesson, ...] = tuple(Lesson(slug) for slug in ORDER)

# The free sandbox: not a lesson of the course, but served and run like one
# (content/sandbox.en.toml); any run of a lesson with the same sandbox kind can be forked into it.
SANDBOX = Lesson("sandbox")

_BY_SLUG = {lesson.slug: lesson for lesson in (*LESSONS, SANDBOX)}
assert len(_BY_SLUG) == len(LESSONS) + 1, "lesson slugs must be unique"


def get_lesson(slug: str) -> Lesson | None:
    return _BY_SLUG.get(slug)


def available_lessons() -> list[Lesson]:
    return [lesson for lesson in LESSONS if lesson.available]
