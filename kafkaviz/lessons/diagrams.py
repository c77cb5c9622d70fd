"""The diagrams a lesson may list (its TOML's ``diagrams``), each with the files it needs.

This is the one manifest: the lesson page and the room's presenter page load exactly the
scripts and stylesheets declared here, in the head, once each, for the diagrams they
show; a test checks that every diagram a lesson names has an entry whose files exist.
Adding a diagram is its script and a line here. A diagram with controls of its own has a
template (``templates/diagrams/<name>.html``); one that only draws declares its ``title``
and the ``words`` its script shows, in both languages, and is placed in the shared block
(``templates/includes/diagram_block.html``). A diagram that needs facts no kind's state has
yet declares its ``view`` here too: a pure function of the lesson's engine run
(``engine.cluster.run.Run``) whose result every frame carries as ``state.views[<name>]``
(docs/web.md, "Adding a diagram").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from engine.words import Words

__all__ = ["Diagram", "DIAGRAMS", "Words", "diagram_assets", "diagram_views", "BLOCK_TEMPLATE"]

# The block of a diagram that only draws: its title, and one element carrying its words.
BLOCK_TEMPLATE = "includes/diagram_block.html"

# Shared by the storage and group pictures (cells, bars, chips).
_STORAGE_CSS = "css/diagrams-storage.css"
_GROUPS_CSS = "css/diagrams-groups.css"


@dataclass(frozen=True)
class Diagram:
    """One picture: ``template`` is its block (the page includes it through the
    ``diagram_template`` filter), ``scripts`` and ``styles`` are static paths the page loads
    for it. ``view``, when set, is what the diagram draws: ``view(run) -> dict``, a pure
    function of the engine run, sent in every frame as ``state.views[name]``. ``title`` and
    ``words`` (key -> words, each a ``data-<key>`` attribute of the element the script draws
    in) are set on a diagram whose block is the shared one."""

    name: str
    template: str
    scripts: tuple[str, ...]
    styles: tuple[str, ...] = ()
    view: Callable[[Any], dict] | None = None
    title: Words | None = None
    words: Mapping[str, Words] = field(default_factory=dict)


def _diagram(name: str, *extra_scripts: str, styles: tuple[str, ...] = (),
             view: Callable[[Any], dict] | None = None, title: Words | None = None,
             words: Mapping[str, Words] | None = None) -> Diagram:
    """A diagram drawn by ``js/<name>.js`` (and any extra scripts it leans on), in
    ``diagrams/<name>.html``, or, given a ``title``, in the shared block."""
    template = BLOCK_TEMPLATE if title is not None else f"diagrams/{name}.html"
    return Diagram(name, template, (f"js/{name}.js", *extra_scripts), styles, view, title, dict(words or {}))


DIAGRAMS: dict[str, Diagram] = {d.name: d for d in (
    _diagram("client-port", styles=("css/client-port.css",)),   # "Connect your own client" (live/client_listener.py)
    _diagram("client-requests", styles=("css/client-port.css",)),   # lesson 16 (live/client_session.py)
    _diagram("cluster", "js/flow.js"),          # flow.js draws the messages travelling between brokers
    _diagram("compaction", styles=(_STORAGE_CSS, _GROUPS_CSS)),
    _diagram("consumer-group", styles=(_STORAGE_CSS, _GROUPS_CSS)),
    _diagram("epoch-cache"),
    _diagram("hw-calc", styles=(_STORAGE_CSS,)),
    _diagram("lag-chart", styles=(_STORAGE_CSS, _GROUPS_CSS)),
    _diagram("metadata-log", styles=("css/diagrams-kraft.css",)),   # lesson 17: __cluster_metadata and who applied it
    _diagram("page-cache", styles=(_STORAGE_CSS,)),
    _diagram("partition-dir"),
    _diagram("produce-results", styles=(_STORAGE_CSS,)),
    _diagram("replica-lanes"),
    _diagram("replication-chart"),
    _diagram("retention-chart", styles=(_STORAGE_CSS,)),
    _diagram("segment-strip", styles=(_STORAGE_CSS,)),
    _diagram("step-timeline"),
    _diagram("timeline"),
    _diagram("timing-wheel"),
    _diagram("topic-view", styles=(_STORAGE_CSS,)),
    _diagram("txn-log"),
)}


def diagram_views(names: Iterable[str], run: Any) -> dict[str, dict]:
    """The views of these diagrams that declare one, computed from ``run``."""
    return {name: DIAGRAMS[name].view(run) for name in names if name in DIAGRAMS and DIAGRAMS[name].view is not None}


def diagram_assets(names: Iterable[str]) -> dict[str, list[str]]:
    """The scripts and stylesheets of these diagrams, in their order, each once: every
    diagram's own script first, then the helpers (flow.js animates what the pictures drew,
    so its handlers run after theirs). An unknown name is a KeyError: a lesson file naming
    a diagram nobody declared must not render."""
    found = [DIAGRAMS[name] for name in names]
    scripts = dict.fromkeys([d.scripts[0] for d in found] + [s for d in found for s in d.scripts[1:]])
    styles = dict.fromkeys(s for d in found for s in d.styles)
    return {"scripts": list(scripts), "styles": list(styles)}
