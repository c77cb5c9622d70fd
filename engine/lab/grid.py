"""The durability lab's grid: named axes, presets, and the expansion of a grid into runs.

A *cell* is one combination of axis values (every axis has a value in every cell; axes
the grid does not vary keep their default). A *run* is one cell played with one seed:
run ``i`` of every cell uses seed ``base_seed + i``, so every cell of a grid replays the
same fault schedules and cells differ only by their settings.

Axis values travel as canonical strings (``"all"``, ``"2"``, ``"true"``): they name Parquet
partitions and summary entries, and parse back with :func:`cell_settings`.

Adding an axis: add an :class:`Axis` to :data:`AXES` (its values, default and one line of
doc), then use the value in ``engine/lab/runs.py: build_run``. Nothing else changes: the
CLI, the Spark job, Parquet partitions and the web form all iterate over :data:`AXES`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..cluster.scenarios import SCENARIOS
from ..errors import InvalidRequestError

__all__ = ["Axis", "AXES", "PRESETS", "GridError", "Grid", "RunSpec", "make_grid", "parse_axis_option",
           "cell_settings", "NOT_APPLICABLE", "MAX_RUNS", "SCENARIO_PREFIX", "PRESET_RUNS", "default_runs"]

NOT_APPLICABLE = "-"          # an axis a named scenario fixes itself (its own assignment, its own steps)
SCENARIO_PREFIX = "scenario:"
MAX_RUNS = 200_000            # one sweep; a bigger study is several sweeps


class GridError(InvalidRequestError):
    """A grid that cannot run: unknown axis or value, or no run at all."""


@dataclass(frozen=True)
class Axis:
    """One dimension of the grid. ``values`` are every accepted canonical value."""

    name: str
    values: tuple
    default: str
    doc: str
    aliases: tuple = ()       # (alias, canonical) pairs accepted on input

    def canonical(self, raw: str) -> str:
        value = str(raw).strip().lower()
        value = dict(self.aliases).get(value, value)
        if value not in self.values:
            raise GridError(f"axis {self.name} has no value {raw!r}; choose from {', '.join(self.values)}")
        return value


_SCHEDULES = ("mixed", "targeted", "random", "random+slow") + tuple(SCENARIO_PREFIX + n for n in sorted(SCENARIOS))

AXES: dict[str, Axis] = {a.name: a for a in (
    Axis("rf", ("1", "2", "3"), "3", "replication factor of the topic (3 brokers)"),
    Axis("acks", ("0", "1", "all"), "all", "producer acks", aliases=(("-1", "all"),)),
    Axis("min_isr", ("1", "2", "3"), "2", "min.insync.replicas of the topic"),
    Axis("unclean", ("false", "true"), "false", "unclean.leader.election.enable",
         aliases=(("0", "false"), ("1", "true"), ("no", "false"), ("yes", "true"))),
    Axis("truncation", ("hw", "epoch"), "epoch",
         "follower truncation: hw (before Kafka 0.11) or epoch (KIP-101/279)"),
    Axis("schedule", _SCHEDULES, "mixed",
         "mixed: each seed draws a targeted schedule (3 in 4) or a uniform random one, with a client writing "
         "throughout; targeted: a fault aimed at one window a setting is about (engine/lab/schedules.py); "
         "random: the uniform seeded fault schedule (crash, clean shutdown, restart, isolate, one- and two-way "
         "cuts); random+slow: the same plus a slow follower; scenario:NAME: a named scenario"),
    Axis("steps", ("4", "8", "12", "16", "24", "32"), "8", "random actions per uniform random fault schedule"),
    Axis("retries", ("0", "1", "3"), "0",
         "times a producer re-sends a failed request (no idempotence: re-sends can duplicate)"),
)}

# Axes a named scenario always decides for itself, and those it keeps unless the grid varies them.
SCENARIO_FIXED = ("rf", "steps")
SCENARIO_OWN_UNLESS_VARIED = ("acks", "min_isr", "unclean")

PRESETS: dict[str, dict[str, tuple]] = {
    "acks": {"acks": ("0", "1", "all"), "min_isr": ("1", "2")},
    "truncation": {"truncation": ("hw", "epoch"), "acks": ("1", "all")},
    "unclean": {"unclean": ("false", "true"), "acks": ("1", "all"), "truncation": ("hw", "epoch")},
    "full": {"rf": ("2", "3"), "acks": ("0", "1", "all"), "min_isr": ("1", "2"), "unclean": ("false", "true"),
             "truncation": ("hw", "epoch"), "schedule": _SCHEDULES, "retries": ("0", "1")},
}


# Runs per cell when a sweep names a preset and no --runs: enough for each preset's lesson to show
# (tests/lab/test_lessons_at_defaults.py), few enough to finish in well under a minute on 2 cores
# (the server computes all three at its first start: 1,300 runs). 50 show acks and truncation
# plainly (hw + acks=all loses in 8 of 50 runs, acks=1 in 11, min ISR 1 in 5); unclean election
# with acks=all and epochs loses in 2 of 50 runs but 11 of 100, so that preset keeps 100.
PRESET_RUNS: dict[str, int] = {"acks": 50, "truncation": 50, "unclean": 100, "full": 5}
DEFAULT_RUNS = 20


def default_runs(preset: str | None) -> int:
    return PRESET_RUNS.get(preset or "", DEFAULT_RUNS)


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid: the cell's axis values (AXES order), the run's index in the
    cell and its seed."""

    cell: tuple            # ((axis, value), ...) in AXES order
    run: int
    seed: int

    @property
    def settings(self) -> dict[str, str]:
        return dict(self.cell)

    def cell_id(self) -> str:
        return cell_id(self.cell)


def cell_id(cell: Iterable[tuple[str, str]]) -> str:
    """A stable, URL-safe name of a cell: ``acks=all,min_isr=2,…``."""
    return ",".join(f"{k}={v}" for k, v in cell)


@dataclass(frozen=True)
class Grid:
    """The axes a sweep varies (with their values), every cell, and runs per cell."""

    varied: tuple          # ((axis, (values...)), ...) in AXES order
    cells: tuple           # tuples of (axis, value) pairs, every axis, AXES order
    runs: int
    seed: int
    preset: str | None = None

    def specs(self) -> list[RunSpec]:
        return [RunSpec(c, i, self.seed + i) for c in self.cells for i in range(self.runs)]

    @property
    def axes(self) -> list[str]:
        return [a for a, _ in self.varied]

    def to_dict(self) -> dict[str, Any]:
        return {"axes": {a: list(v) for a, v in self.varied}, "runs": self.runs, "seed": self.seed,
                "preset": self.preset,
                "cells": len(self.cells), "total_runs": len(self.cells) * self.runs,
                "defaults": {a.name: a.default for a in AXES.values()}}


def parse_axis_option(text: str) -> tuple[str, tuple]:
    """``"acks=0,1,all"`` → ``("acks", ("0", "1", "all"))`` (canonical, de-duplicated)."""
    name, sep, values = str(text).partition("=")
    name = name.strip().replace("-", "_").replace(".", "_")
    if name == "min_insync_replicas":
        name = "min_isr"
    if not sep:
        raise GridError(f"--axis takes NAME=V1,V2,…, got {text!r}")
    if name not in AXES:
        raise GridError(f"unknown axis {name!r}; axes: {', '.join(AXES)}")
    parts = [v for v in (p.strip() for p in values.split(",")) if v]
    if not parts:
        raise GridError(f"axis {name} has no values: the grid would be empty")
    out: list[str] = []
    for p in parts:
        v = AXES[name].canonical(p)
        if v not in out:
            out.append(v)
    return name, tuple(out)


def make_grid(preset: str | None = None, axes: Mapping[str, Iterable[str]] | None = None, *,
              runs: int | None = None, seed: int = 0) -> Grid:
    """The grid of a preset (or none: every axis at its default) with ``axes`` replacing
    or adding axes; ``runs`` per cell defaults to the preset's (:data:`PRESET_RUNS`).
    Raises :class:`GridError` for an unknown preset, axis or value, or a grid without runs."""
    if runs is None:
        runs = default_runs(preset if preset in PRESETS else None)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise GridError(f"--runs must be at least 1, got {runs!r}: the grid would be empty")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise GridError(f"--seed must be an integer >= 0, got {seed!r}")
    chosen: dict[str, tuple] = {}
    if preset is not None:
        if preset not in PRESETS:
            raise GridError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
        chosen.update(PRESETS[preset])
    for name, values in (axes or {}).items():
        name, vals = parse_axis_option(f"{name}={','.join(str(v) for v in values)}")
        chosen[name] = vals
    varied = tuple((a, chosen[a]) for a in AXES if a in chosen)
    lists = [chosen.get(a, (AXES[a].default,)) for a in AXES]
    cells: list[tuple] = []
    seen = set()
    for combo in itertools.product(*lists):
        cell = dict(zip(AXES, combo))
        if cell["schedule"].startswith(SCENARIO_PREFIX):
            for a in SCENARIO_FIXED + tuple(a for a in SCENARIO_OWN_UNLESS_VARIED if a not in chosen):
                cell[a] = NOT_APPLICABLE
        key = tuple(cell.items())
        if key not in seen:
            seen.add(key)
            cells.append(key)
    total = len(cells) * runs
    if total > MAX_RUNS:
        raise GridError(f"the grid has {total} runs ({len(cells)} cells x {runs}); at most {MAX_RUNS} per sweep")
    return Grid(varied, tuple(cells), runs, seed, preset)


def cell_settings(cell: Mapping[str, str]) -> dict[str, Any]:
    """Typed settings of a cell: acks as the command takes it, numbers as ints, flags as bools."""
    out: dict[str, Any] = {}
    for k, v in cell.items():
        if v == NOT_APPLICABLE:
            out[k] = None
        elif k == "acks":
            out[k] = "all" if v == "all" else int(v)
        elif k in ("rf", "min_isr", "steps", "retries"):
            out[k] = int(v)
        elif k == "unclean":
            out[k] = v == "true"
        else:
            out[k] = v
    return out
