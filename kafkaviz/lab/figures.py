"""The Lab page's heatmaps: a sweep's summary.json → plotly figures, tables and sentences.

A view of a sweep puts one varied axis on x, one on y, splits by a third (``facet``: one
heatmap per value, e.g. per truncation rule) and fixes every other varied axis to one value
(``slice``). Each :data:`METRICS` entry gives one row of heatmaps; its sentence is computed
from the cells shown, never written ahead of them. Every cell links to its worst run.

Adding a figure to the page: add a :class:`Metric` (what to colour, what to print in the
cell, how to say it in one sentence). The per-cell numbers come from
``engine/lab/runs.py: CELL_FIGURES``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from django.urls import reverse

from engine.lab.grid import AXES

# Which axes go on x and y first, when the sweep varies them.
AXIS_PREFERENCE = ("acks", "min_isr", "truncation", "unclean", "rf", "retries", "schedule", "steps")


def _pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 1) if d else 0.0


def _label(cell: dict, axes: list[str]) -> str:
    return ", ".join(f"{a}={cell['axes'][a]}" for a in axes) or "the default settings"


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    unit: str                                   # what z means
    z: Callable[[dict], float]
    text: Callable[[dict], str]
    sentence: Callable[[list, list], str]       # (cells shown, axes named) -> one sentence


def unacknowledged(cell: dict) -> bool:
    """acks=0: the producer is never told a record was written, so no loss can be counted."""
    return cell["axes"].get("acks") == "0"


def _share(n: int, d: int) -> str:
    return f"{n} of {d}"


def _loss_sentence(cells: list, axes: list) -> str:
    counted = [c for c in cells if not unacknowledged(c)]
    blind = [c for c in cells if unacknowledged(c)]
    parts = []
    if counted:
        runs = sum(c["runs"] for c in counted)
        bad = sorted((c for c in counted if c["runs_with_loss"]),
                     key=lambda c: (-c["runs_with_loss"] / c["runs"], -c["lost"], c["cell"]))
        safe = [c for c in counted if not c["runs_with_loss"]]
        if not bad:
            parts.append(f"No run lost an acknowledged record: in all {runs} runs, every record a producer was told "
                         f"was written survived the faults.")
        else:
            lossy = "; ".join(f"{_label(c, axes)} in {_share(c['runs_with_loss'], c['runs'])} runs "
                              f"({_share(c['lost'], c['acked'])} acknowledged records)" for c in bad[:4])
            more = f"; and {len(bad) - 4} more cells" if len(bad) > 4 else ""
            parts.append(f"Acknowledged records were lost with {lossy}{more}.")
            if safe:
                names = ", ".join(_label(c, axes) for c in safe[:3])
                more = f" and {len(safe) - 3} more cells" if len(safe) > 3 else ""
                parts.append(f"None was lost with {names}{more}, over the same fault schedules.")
    if blind:
        sent = sum(c["sent"] for c in blind)
        missing = sum(c["missing_at_end"] for c in blind)
        parts.append(f"acks=0 is not acknowledged, so loss cannot be counted: {_share(missing, sent)} records sent "
                     f"with acks=0 were missing at the end.")
    return " ".join(parts)


def _diverged_sentence(cells: list, axes: list) -> str:
    runs = sum(c["runs"] for c in cells)
    n = sum(c["runs_diverged"] for c in cells)
    if not n:
        return f"In all {runs} runs shown the replicas agreed below the high watermark at the end."
    worst = max(cells, key=lambda c: c["runs_diverged"] / c["runs"])
    return (f"Replicas ended up holding different records below the high watermark in {n} of {runs} runs, most "
            f"often with {_label(worst, axes)} ({worst['runs_diverged']} of {worst['runs']}).")


def _unavailable_sentence(cells: list, axes: list) -> str:
    runs = sum(c["runs"] for c in cells)
    mean = sum(c["unavailable_ms_mean"] * c["runs"] for c in cells) / runs if runs else 0
    worst = max(cells, key=lambda c: (c["unavailable_ms_mean"], c["cell"]))
    best = min(cells, key=lambda c: (c["unavailable_ms_mean"], c["cell"]))
    tail = (f"; shortest with {_label(best, axes)} ({_ms(best['unavailable_ms_mean'])} ms per run)"
            if best is not worst else "")
    return (f"Seen from the client, the partition refused or did not answer writes for {_ms(mean)} ms of virtual "
            f"time per run on average; longest with {_label(worst, axes)} ({_ms(worst['unavailable_ms_mean'])} ms "
            f"per run, at most {worst['unavailable_ms_max']} ms){tail}.")


def _ms(x: float) -> str:
    return f"{x:,.0f}"


def _dup_sentence(cells: list, axes: list) -> str:
    n = sum(c["runs_with_duplicates"] for c in cells)
    runs = sum(c["runs"] for c in cells)
    if not n:
        return (f"No consumer saw a record twice in {runs} runs (duplicates come from a producer re-sending a "
                f"request that was in fact written: vary the retries axis to see them).")
    worst = max(cells, key=lambda c: c["duplicates"])
    return (f"A consumer saw {sum(c['duplicates'] for c in cells)} records twice, in {n} of {runs} runs: a producer "
            f"re-sent requests that had been written after all; most with {_label(worst, axes)}.")


METRICS: tuple = (
    Metric("loss", "Runs that lost acknowledged records", "% of runs",
           lambda c: None if unacknowledged(c) else _pct(c["runs_with_loss"], c["runs"]),
           lambda c: (f"not acknowledged<br>{c['missing_at_end']}/{c['sent']} missing at end" if unacknowledged(c)
                      else f"{_pct(c['runs_with_loss'], c['runs']):g}%<br>{c['lost']}/{c['acked']} lost"),
           _loss_sentence),
    Metric("diverged", "Runs whose replicas diverged", "% of runs",
           lambda c: _pct(c["runs_diverged"], c["runs"]),
           lambda c: f"{_pct(c['runs_diverged'], c['runs']):g}%", _diverged_sentence),
    Metric("unavailable", "Time the client could not write", "ms per run",
           lambda c: c["unavailable_ms_mean"], lambda c: f"{_ms(c['unavailable_ms_mean'])} ms",
           _unavailable_sentence),
    Metric("duplicates", "Records a consumer saw twice", "% of runs",
           lambda c: _pct(c["runs_with_duplicates"], c["runs"]),
           lambda c: f"{c['duplicates']} dup.", _dup_sentence),
)


def axis_values(summary: dict, axis: str) -> list[str]:
    present = {c["axes"][axis] for c in summary["cells"]}
    order = list(AXES[axis].values) + ["-"]
    return [v for v in order if v in present]


def choose_view(summary: dict, params: dict) -> dict[str, Any]:
    """x, y, facet and slice values from request params, defaulting sensibly."""
    varied = [a for a in summary["axes"] if len(axis_values(summary, a)) > 1]
    ranked = sorted(varied, key=lambda a: AXIS_PREFERENCE.index(a) if a in AXIS_PREFERENCE else 99)
    x = params.get("x") if params.get("x") in varied else (ranked[0] if ranked else None)
    rest = [a for a in ranked if a != x]
    # An empty choice ("—") is a choice: no y axis, or no facet.
    if params.get("y") == "":
        y = None
    elif params.get("y") in rest:
        y = params.get("y")
    else:
        y = next((a for a in rest if a != "truncation"), None) if len(rest) > 1 else (rest[0] if rest else None)
    rest = [a for a in rest if a != y]
    if params.get("facet") == "":
        facet = None
    elif params.get("facet") in rest:
        facet = params.get("facet")
    else:
        facet = "truncation" if "truncation" in rest else (rest[0] if rest else None)
    rest = [a for a in rest if a != facet]
    slice_ = {}
    for a in rest:
        vals = axis_values(summary, a)
        slice_[a] = params.get(a) if params.get(a) in vals else vals[0]
    return {"x": x, "y": y, "facet": facet, "slice": slice_, "varied": varied}


def _find(cells: list, want: dict) -> dict | None:
    for c in cells:
        if all(c["axes"][a] == v for a, v in want.items()):
            return c
    return None


def worst_url(name: str, cell: dict) -> str:
    url = reverse("lab:worst", args=[name, cell["cell"]])
    step = cell["worst"].get("first_loss_step")
    return f"{url}#step-{step}" if step else url


def build_panels(name: str, summary: dict, view: dict) -> list[dict]:
    """One panel per metric: sentence, and per facet value a heatmap (plotly JSON) and a table."""
    import plotly.graph_objects as go

    x, y, facet = view["x"], view["y"], view["facet"]
    xs = axis_values(summary, x) if x else [""]
    ys = axis_values(summary, y) if y else [""]
    facets = axis_values(summary, facet) if facet else [None]
    named = [a for a in (x, y, facet) if a] + list(view["slice"])
    panels = []
    for m in METRICS:
        shown: list = []
        maps = []
        for i, fv in enumerate(facets):
            z, text, urls, rows = [], [], [], []
            for yv in ys:
                zr, tr, ur, row = [], [], [], []
                for xv in xs:
                    want = dict(view["slice"])
                    if x:
                        want[x] = xv
                    if y:
                        want[y] = yv
                    if facet:
                        want[facet] = fv
                    cell = _find(summary["cells"], want)
                    if cell is None:
                        zr.append(None), tr.append("n/a"), ur.append(""), row.append(None)
                        continue
                    shown.append(cell)
                    url = worst_url(name, cell)
                    zr.append(m.z(cell)), tr.append(m.text(cell)), ur.append(url)
                    row.append({"text": m.text(cell).replace("<br>", " · "), "url": url,
                                "label": _label(cell, named)})
                z.append(zr), text.append(tr), urls.append(ur), rows.append({"y": yv, "cells": row})
            title = f"{facet} = {fv}" if facet else m.title
            fig = go.Figure(go.Heatmap(
                z=z, x=[f"{x}={v}" if x else "" for v in xs], y=[f"{y}={v}" if y else "" for v in ys],
                text=text, texttemplate="%{text}", customdata=urls, colorscale="Cividis", zmin=0,
                colorbar={"title": {"text": m.unit}},
                hovertemplate="%{x}, %{y}<br>" + m.unit + ": %{z}<br>click: the worst run<extra></extra>"))
            fig.update_layout(title={"text": title}, height=140 + 70 * len(ys), margin={"l": 90, "r": 20, "t": 50,
                                                                                       "b": 40},
                              xaxis={"type": "category"}, yaxis={"type": "category", "autorange": "reversed"})
            maps.append({"id": f"fig-{m.key}-{i}", "facet": fv, "title": title, "figure": json.loads(fig.to_json()),
                         "columns": xs, "rows": rows, "x": x, "y": y})
        panels.append({"key": m.key, "title": m.title, "unit": m.unit,
                       "sentence": m.sentence(shown, named) if shown else "No cell of this sweep matches this view.",
                       "maps": maps})
    return panels
