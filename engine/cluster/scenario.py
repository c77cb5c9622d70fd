"""A replication scenario as plain data: its steps (one command each, with narration) and
what must come out under each follower truncation rule. The named scenarios are in
:mod:`engine.cluster.scenarios` and :mod:`engine.cluster.group_scenarios`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .commands import parse_command

__all__ = ["Step", "Expected", "Scenario", "step"]


@dataclass(frozen=True)
class Step:
    """One command of a scenario and what a learner should notice."""

    command: dict
    narration: str

    def to_dict(self) -> dict:
        return {"command": dict(self.command), "narration": self.narration}


@dataclass(frozen=True)
class Expected:
    """What a scenario must end with (for topic ``t`` partition 0 unless noted).

    ``lost``: values of acknowledged records missing from the final leader's log (exactly these;
    the checker must have reported each);
    ``diverged``: whether the checker must report diverged replicas; ``logs``: broker →
    final list of values; ``produce_errors``: error names that must appear among produce
    outcomes; ``isr`` / ``leader`` / ``controller``: final values; ``events``: event kinds
    that must occur; ``note``: the lesson in one sentence."""

    lost: tuple = ()
    diverged: bool = False
    logs: dict | None = None
    produce_errors: tuple = ()
    isr: tuple | None = None
    leader: int | None = None
    controller: int | None = None
    events: tuple = ()
    note: str = ""

    def to_dict(self) -> dict:
        return {"lost": list(self.lost), "diverged": self.diverged,
                "logs": None if self.logs is None else {str(b): list(v) for b, v in self.logs.items()},
                "produce_errors": list(self.produce_errors), "isr": None if self.isr is None else list(self.isr),
                "leader": self.leader, "controller": self.controller, "events": list(self.events),
                "note": self.note}


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    summary: str
    steps: tuple
    expected: dict            # truncation mode -> Expected
    config: dict = field(default_factory=dict)
    seed: int = 0

    def commands(self) -> list[dict]:
        return [dict(s.command) for s in self.steps]

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "summary": self.summary, "seed": self.seed,
                "config": dict(self.config), "steps": [s.to_dict() for s in self.steps],
                "expected": {m: e.to_dict() for m, e in sorted(self.expected.items())}}


def step(narration: str, cmd: str, **fields: Any) -> Step:
    """One step: ``cmd`` with ``fields``, checked against the command vocabulary now."""
    command = {"cmd": cmd, **fields}
    parse_command(command)  # a typo in a scenario fails at import, not in a lesson
    return Step(command, narration)
