"""A few words in every language the site speaks, written side by side where they are
declared: a fault's button and the sentence a step says about it (``Fault`` in
engine/cluster/commands.py), a diagram's title (kafkaviz/lessons/diagrams.py).

The engine never translates; it keeps the words of a declaration together so that a new
fault kind or diagram is one place, in both languages, instead of an English word here and
its Chinese in a table elsewhere."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Words"]


@dataclass(frozen=True)
class Words:
    """The same words in English and Chinese. A template may name fields (``{broker}``): the
    reader fills them the same way for both languages."""

    en: str
    zh: str

    def __post_init__(self) -> None:
        if not self.en.strip() or not self.zh.strip():
            raise ValueError(f"words need both languages: {self!r}")

    def in_(self, lang: str) -> str:
        """The words in ``lang`` ("en" or "zh"; Django's "zh-hans" too); English otherwise."""
        return self.zh if str(lang).lower().startswith("zh") else self.en

    def __str__(self) -> str:
        return self.en
