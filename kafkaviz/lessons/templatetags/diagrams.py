"""``{% load diagrams %}``: a page includes a diagram's block from its manifest entry."""
from __future__ import annotations

from django import template

from kafkaviz.lessons.diagrams import DIAGRAMS

register = template.Library()


@register.filter
def diagram_template(name: str) -> str:
    """The template of the diagram ``name`` (kafkaviz/lessons/diagrams.py)."""
    return DIAGRAMS[name].template
