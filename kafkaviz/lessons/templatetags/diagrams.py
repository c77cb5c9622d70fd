"""``{% load diagrams %}``: a page includes a diagram's block from its manifest entry; the
shared block of a diagram that only draws reads its title and words from there too."""
from __future__ import annotations

from django import template
from django.utils import translation

from kafkaviz.lessons.diagrams import DIAGRAMS, Words

register = template.Library()


@register.filter
def diagram_template(name: str) -> str:
    """The template of the diagram ``name`` (kafkaviz/lessons/diagrams.py)."""
    return DIAGRAMS[name].template


@register.filter
def diagram(name: str):
    """The manifest entry of the diagram ``name`` (the shared block reads its title and words)."""
    return DIAGRAMS[name]


@register.filter
def words(value: Words) -> str:
    """A declaration's words in the page's language (``engine.words.Words``)."""
    return value.in_(translation.get_language() or "en")
