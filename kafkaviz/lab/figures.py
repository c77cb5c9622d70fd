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
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

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
    return _("%(n)s of %(d)s") % {"n": n, "d": d}


def _sep() -> str:
    return _("; ")


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
            parts.append(_("No run lost an acknowledged record: in all %(runs)s runs, every record a producer was "
                           "told was written survived the faults.") % {"runs": runs})
        else:
            lossy = _sep().join(_("%(cell)s in %(runs)s runs (%(records)s acknowledged records)") % {
                "cell": _label(c, axes), "runs": _share(c["runs_with_loss"], c["runs"]),
                "records": _share(c["lost"], c["acked"])} for c in bad[:4])
            if len(bad) > 4:
                lossy += _sep() + _("and %(n)s more cells") % {"n": len(bad) - 4}
            parts.append(_("Acknowledged records were lost with %(cells)s.") % {"cells": lossy})
            if safe:
                names = _(", ").join(_label(c, axes) for c in safe[:3])
                if len(safe) > 3:
                    names += _(" and %(n)s more cells") % {"n": len(safe) - 3}
                parts.append(_("None was lost with %(cells)s, over the same fault schedules.") % {"cells": names})
    if blind:
        sent = sum(c["sent"] for c in blind)
        missing = sum(c["missing_at_end"] for c in blind)
        parts.append(_("acks=0 is not acknowledged, so loss cannot be counted: %(share)s records sent with acks=0 "
                       "were missing at the end.") % {"share": _share(missing, sent)})
    return " ".join(parts)


def _diverged_sentence(cells: list, axes: list) -> str:
    runs = sum(c["runs"] for c in cells)
    n = sum(c["runs_diverged"] for c in cells)
    if not n:
        return _("In all %(runs)s runs shown the replicas agreed below the high watermark at the end.") % {
            "runs": runs}
    worst = max(cells, key=lambda c: (c["runs_diverged"] / c["runs"], c["cell"]))
    return _("Replicas ended up holding different records below the high watermark in %(share)s runs, most often "
             "with %(cell)s (%(worst)s).") % {"share": _share(n, runs), "cell": _label(worst, axes),
                                             "worst": _share(worst["runs_diverged"], worst["runs"])}


def _unavailable_sentence(cells: list, axes: list) -> str:
    runs = sum(c["runs"] for c in cells)
    mean = sum(c["unavailable_ms_mean"] * c["runs"] for c in cells) / runs if runs else 0
    worst = max(cells, key=lambda c: (c["unavailable_ms_mean"], c["cell"]))
    best = min(cells, key=lambda c: (c["unavailable_ms_mean"], c["cell"]))
    text = _("Seen from the client, the partition refused or did not answer writes for %(mean)s ms of virtual "
             "time per run on average; longest with %(cell)s (%(cell_mean)s ms per run, at most %(max)s ms)") % {
        "mean": _ms(mean), "cell": _label(worst, axes), "cell_mean": _ms(worst["unavailable_ms_mean"]),
        "max": worst["unavailable_ms_max"]}
    if best is not worst:
        text += _sep() + _("shortest with %(cell)s (%(cell_mean)s ms per run)") % {
            "cell": _label(best, axes), "cell_mean": _ms(best["unavailable_ms_mean"])}
    return text + _(".")


def _ms(x: float) -> str:
    return f"{x:,.0f}"


def _dup_sentence(cells: list, axes: list) -> str:
    n = sum(c["runs_with_duplicates"] for c in cells)
    runs = sum(c["runs"] for c in cells)
    if not n:
        return _("No consumer saw a record twice in %(runs)s runs (duplicates come from a producer re-sending a "
                 "request that was in fact written: vary the retries setting to see them).") % {"runs": runs}
    worst = max(cells, key=lambda c: (c["duplicates"], c["cell"]))
    return _("A consumer saw %(dups)s records twice, in %(share)s runs: a producer re-sent requests that had been "
             "written after all; most with %(cell)s.") % {"dups": sum(c["duplicates"] for c in cells),
                                                        "share": _share(n, runs), "cell": _label(worst, axes)}


def _loss_text(c: dict) -> str:
    if unacknowledged(c):
        return _("not acknowledged<br>%(missing)s/%(sent)s missing at end") % {"missing": c["missing_at_end"],
                                                                              "sent": c["sent"]}
    return _("%(pct)s%%<br>%(lost)s/%(acked)s lost") % {"pct": f"{_pct(c['runs_with_loss'], c['runs']):g}",
                                                        "lost": c["lost"], "acked": c["acked"]}


METRICS: tuple = (
    Metric("loss", gettext_lazy("Runs that lost acknowledged records"), gettext_lazy("percent of runs"),
           lambda c: None if unacknowledged(c) else _pct(c["runs_with_loss"], c["runs"]), _loss_text,
           _loss_sentence),
    Metric("diverged", gettext_lazy("Runs whose replicas diverged"), gettext_lazy("percent of runs"),
           lambda c: _pct(c["runs_diverged"], c["runs"]),
           lambda c: f"{_pct(c['runs_diverged'], c['runs']):g}%", _diverged_sentence),
    Metric("unavailable", gettext_lazy("Time the client could not write"), gettext_lazy("ms per run"),
           lambda c: c["unavailable_ms_mean"], lambda c: f"{_ms(c['unavailable_ms_mean'])} ms",
           _unavailable_sentence),
    Metric("duplicates", gettext_lazy("Records a consumer saw twice"), gettext_lazy("percent of runs"),
           lambda c: _pct(c["runs_with_duplicates"], c["runs"]),
           lambda c: _("%(n)s dup.") % {"n": c["duplicates"]}, _dup_sentence),
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
            title = f"{facet} = {fv}" if facet else str(m.title)
            fig = go.Figure(go.Heatmap(
                z=z, x=[f"{x}={v}" if x else "" for v in xs], y=[f"{y}={v}" if y else "" for v in ys],
                text=text, texttemplate="%{text}", customdata=urls, colorscale="Cividis", zmin=0,
                colorbar={"title": {"text": str(m.unit)}},
                hovertemplate="%{x}, %{y}<br>" + str(m.unit) + ": %{z}<br>" + _("click: the worst run")
                + "<extra></extra>"))
            fig.update_layout(title={"text": title}, height=140 + 70 * len(ys), margin={"l": 90, "r": 20, "t": 50,
                                                                                       "b": 40},
                              xaxis={"type": "category"}, yaxis={"type": "category", "autorange": "reversed"})
            maps.append({"id": f"fig-{m.key}-{i}", "facet": fv, "title": title, "figure": json.loads(fig.to_json()),
                         "columns": xs, "rows": rows, "x": x, "y": y})
        panels.append({"key": m.key, "title": str(m.title), "unit": str(m.unit),
                       "sentence": m.sentence(shown, named) if shown else _("No cell of this sweep matches this view."),
                       "maps": maps})
    return panels
