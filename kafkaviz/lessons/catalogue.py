"""The course's table of contents, read from the lesson files: nothing about a lesson is
written here.

Everything a lesson is -- its number, title and summary in every language -- is in its
content file, ``kafkaviz/lessons/content/<slug>.<lang>.toml`` (see ``content.py`` and
docs/web.md, "Adding a lesson"), and its ``number`` is its place in the course: ``ORDER`` is
the English files sorted by it (the free sandbox is number 0, outside the course). Adding a
lesson is adding its file. Two files claiming one number, or a gap, stop the site at import
with a line naming the files, never a course in a silent wrong order.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass

from .content import CONTENT_DIR, ContentError, LessonContent, content_slugs, load_content

__all__ = ["Lesson", "ORDER", "LESSONS", "SANDBOX", "get_lesson", "available_lessons", "course_order"]


def course_order() -> tuple[str, ...]:
    """The slugs of the course, in the order of their files' ``number`` (1, 2, 3, ...)."""
    numbers: dict[int, list[str]] = {}
    for slug in sorted(content_slugs()):
        path = CONTENT_DIR / f"{slug}.en.toml"
        try:
            number = tomllib.loads(path.read_text(encoding="utf-8")).get("number")
        except tomllib.TOMLDecodeError as exc:
            raise ContentError(f"{path.name}: {exc}") from exc
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ContentError(f"{path.name}: 'number' must be the lesson's place in the course (1, 2, ...), "
                               f"got {number!r}")
        numbers.setdefault(number, []).append(slug)
    numbers.pop(0, None)        # the free sandbox: served like a lesson, not one of the course
    for number, slugs in numbers.items():
        if len(slugs) > 1:
            raise ContentError(f"lessons {', '.join(slugs)} all claim number {number}")
    if sorted(numbers) != list(range(1, len(numbers) + 1)):
        missing = sorted(set(range(1, max(numbers, default=0) + 1)) - set(numbers))
        raise ContentError(f"no lesson has number {', '.join(map(str, missing))}: numbers run 1, 2, 3, ... without a gap")
    return tuple(numbers[n][0] for n in sorted(numbers))


ORDER: tuple[str, ...] = course_order()


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
        return c.number if c is not None else 0

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
