"""Lesson 10's sandbox: a replicated cluster playing one of the KIP-101 scenarios.

The kind owns one :class:`engine.cluster.run.Run` (seed + config + command log + a
snapshot after every step). The scenario's commands are loaded as the run's *future*,
so the lesson's controls map onto the run one to one:

* **Step forward** = ``Run.redo()``: the next command of the log runs on the engine;
* **Step back** = ``Run.seek(step - 1)``: the snapshot taken after that step is
  restored (engine state and files), so the state is exactly the one the learner saw
  before, and stepping forward again replays the same command with the same events;
* a **free command** (crash / restart a broker, advance the clock, produce) is
  ``Run.apply()``: it is added at the current step and the rest of the scenario is
  dropped, as in any editor's undo history;
* **Load** starts a fresh run of the chosen scenario under the chosen truncation rule
  (``"hw"``: before Kafka 0.11; ``"epoch"``: KIP-101/279).

Every engine event goes to the frame builder as it happens. After each command the
kind adds one ``run_moved`` marker (not an engine event): a step back restores events
browsers already had, and some steps (a produce before the clock moves) cause no event
at all, yet the page must get a frame with the new state (``state.last_seq`` tells it
which timeline entries a rewind dropped).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

from engine.cluster.commands import command_to_dict, parse_command
from engine.cluster.run import Run, build_summary, make_config
from engine.cluster.scenarios import get_scenario
from engine.events import Envelope, Event, event

from .frames import describe
from .kinds import Limits, SandboxKind, register
from .validation import CommandError, CommandSpec, Field

__all__ = ["ReplicationSandbox", "LESSON_SCENARIOS", "TRUNCATIONS", "BROKERS", "RunMoved"]

LESSON_SCENARIOS = ("kip101-data-loss", "kip101-divergence")
TRUNCATIONS = ("hw", "epoch")
BROKERS = 3           # the scenarios' cluster: broker 0 hosts the controller, 1 and 2 the partition
TOPIC, PARTITION = "t", 0
# Index files are preallocated sparse, as Kafka does; at Kafka's 10 MiB each, four of them
# made a run look like 40 MiB on disk. One block each keeps ls, du and quotas in step.
SANDBOX_LOG_CONFIG = {"segment.index.bytes": 4096}
MAX_FREE_COMMANDS = 60  # keeps one sandbox's snapshots (one per step, ~30 KB each) bounded

TRUNCATION_LABELS = {"hw": "high-watermark truncation (before Kafka 0.11)",
                     "epoch": "leader-epoch truncation (KIP-101, Kafka 0.11+)"}


@event("run_moved")
class RunMoved(Event):
    """Not an engine event: the lesson's run is now at ``step`` (it was at
    ``from_step``); ``how`` is "step", "back" (a snapshot was restored), "load" or
    "command" (a free command). Browsers drop timeline events after ``last_seq``."""
    step: int
    from_step: int
    last_seq: int
    how: str


@register
class ReplicationSandbox(SandboxKind):
    """A three-broker cluster running a KIP-101 scenario step by step, with rewind."""

    name = "replication"
    commands = {
        "load": CommandSpec("load", (
            Field("scenario", "str", "Scenario", default=LESSON_SCENARIOS[0], choices=LESSON_SCENARIOS),
            Field("truncation", "str", "Truncation rule", default="hw", choices=TRUNCATIONS),
        ), handler="load", help="Start the chosen scenario from the beginning under the chosen truncation rule."),
        "step": CommandSpec("step", (), handler="step", help="Run the next command of the run."),
        "back": CommandSpec("back", (), handler="back", help="Go back one step (restore its snapshot)."),
        "crash": CommandSpec("crash", (
            Field("broker", "int", "Broker", required=True, min=0, max=BROKERS - 1),
        ), handler="crash", help="Hard crash (power loss) of a running broker."),
        "restart": CommandSpec("restart", (
            Field("broker", "int", "Broker", required=True, min=0, max=BROKERS - 1),
        ), handler="restart", help="Start a crashed broker again."),
        "advance": CommandSpec("advance", (
            Field("ms", "int", "Time", default=1000, required=True, min=1, max=10000),
        ), handler="advance", help="Let virtual time pass (fetches, heartbeats, elections happen)."),
        "produce": CommandSpec("produce", (
            Field("value", "str", "Value", default="x", max_length=12, pattern=r"[A-Za-z0-9._-]+",
                  pattern_help="may only hold letters, digits, '.', '_' and '-'"),
        ), handler="produce", help="Send one record with acks=all to the partition's leader."),
    }

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        super().__init__(data_dir, seed=seed, limits=limits, listener=listener)
        self._listener = listener
        self._subscribed: Any = None
        self.run_id = 0
        self.run: Run | None = None
        self._start(LESSON_SCENARIOS[0], "hw")

    # ---- the run -------------------------------------------------------------------
    def _run_dir(self) -> Path:
        return self.data_dir / f"run-{self.run_id}"

    def _start(self, scenario: str, truncation: str) -> None:
        """A fresh run of ``scenario``, its commands loaded as the run's future."""
        self._close_run()
        self.scenario = get_scenario(scenario)
        self.truncation = truncation
        self.run_id += 1
        run_dir = self._run_dir()
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        self.script = [command_to_dict(parse_command(c)) for c in self.scenario.commands()]
        run = Run(self.scenario.seed, make_config({**SANDBOX_LOG_CONFIG, **self.scenario.config},
                                                  truncation=truncation), str(run_dir),
                  snapshot_every=1)
        # The scenario is the run's future: redo() steps through it, apply() replaces it.
        run.queue(self.script)
        self.run = run
        self.step_seqs = [run.cluster.events.seq]   # event seq at the end of each step (index = step)
        self._sync_events(forward_history=True)

    def _sync_events(self, forward_history: bool = False) -> None:
        """Point the kind's event log at the run's cluster (a restore makes a new one)
        and route its events to the frame builder."""
        events = self.run.cluster.events
        if events is self._subscribed:
            return
        self.events = events
        self._subscribed = events
        if self._listener is not None:
            if forward_history:
                for env in list(events.envelopes):
                    self._listener(env)
            events.subscribe(self._listener)

    def _close_run(self) -> None:
        if self.run is None:
            return
        disk = self.run.cluster.disk
        try:
            disk.close_all()
        except Exception:  # noqa: BLE001 - the run is being discarded
            pass
        shutil.rmtree(self._run_dir(), ignore_errors=True)
        self.run = None
        self._subscribed = None

    def _moved(self, from_step: int, how: str) -> None:
        """Send the ``run_moved`` marker to the frame builder (never into the engine's
        event log: the engine's stream and its digest stay the engine's)."""
        if self._listener is not None:
            events = self.run.cluster.events
            self._listener(Envelope(events.seq, events.clock.now_ms(),
                                    RunMoved(self.run.position, from_step, events.seq, how)))

    # ---- commands ------------------------------------------------------------------
    def load(self, scenario: str, truncation: str) -> str:
        self._start(scenario, truncation)
        self._moved(0, "load")
        return f"Loaded {scenario} with {TRUNCATION_LABELS[truncation]}: press Step forward."

    def step(self) -> str:
        run = self.run
        if run.position >= len(run.log):
            raise CommandError("invalid", "There is no next step: this run is at its end. Step back, or load the "
                               "scenario again.", command="step")
        run.redo()
        self._sync_events()
        self.step_seqs.append(run.cluster.events.seq)
        self._moved(run.position - 1, "step")
        return f"Step {run.position} of {len(run.log)} done."

    def back(self) -> str:
        run = self.run
        if run.position == 0:
            raise CommandError("invalid", "This is the start of the run; there is no step before it.",
                               command="back")
        target = run.position - 1
        from_step = run.position
        run.seek(target)
        self._sync_events()
        del self.step_seqs[target + 1:]
        self._moved(from_step, "back")
        return f"Back to step {target} of {len(self.run.log)}."

    def _free(self, cmd: dict[str, Any], field: str | None) -> dict[str, Any]:
        run = self.run
        if run.position >= len(self.script) + MAX_FREE_COMMANDS:
            raise CommandError("quota", f"This run has {run.position} steps, the most it keeps; load the scenario "
                               "again to start over.", field, cmd["cmd"])
        result = run.apply(cmd)
        self._sync_events()
        self.step_seqs.append(run.cluster.events.seq)
        self._moved(run.position - 1, "command")
        return result

    def _broker(self, broker: int) -> Any:
        return self.run.cluster.brokers[broker]

    def crash(self, broker: int) -> str:
        if not self._broker(broker).alive:
            raise CommandError("invalid", f"Broker {broker} is already down; restart it first.", "broker", "crash")
        self._free({"cmd": "crash", "broker": broker}, "broker")
        return f"Broker {broker} crashed (power loss). Step {self.run.position}; the rest of the scenario was dropped."

    def restart(self, broker: int) -> str:
        if self._broker(broker).alive:
            raise CommandError("invalid", f"Broker {broker} is running; crash it before restarting it.",
                               "broker", "restart")
        self._free({"cmd": "restart", "broker": broker}, "broker")
        return f"Broker {broker} restarted. Step {self.run.position}; the rest of the scenario was dropped."

    def advance(self, ms: int) -> str:
        self._free({"cmd": "advance", "ms": ms}, "ms")
        return f"{ms} ms of virtual time passed. Step {self.run.position}."

    def produce(self, value: str) -> str:
        if TOPIC not in self.run.cluster.controller.topics:
            raise CommandError("invalid", f"Topic {TOPIC} does not exist yet: step forward to create it first.",
                               "value", "produce")
        self._free({"cmd": "produce", "topic": TOPIC, "partition": PARTITION, "acks": "all", "value": value},
                   "value")
        return f"Sent {value} with acks=all. Advance the clock to let it replicate. Step {self.run.position}."

    # ---- state ---------------------------------------------------------------------
    def _on_script(self, upto: int) -> bool:
        return upto <= len(self.script) and self.run.log[:upto] == self.script[:upto]

    def _step_text(self, n: int) -> str:
        """Narration of step ``n`` (1-based) of the run's log."""
        if n == 0:
            return self.scenario.summary
        if self._on_script(n):
            return self.scenario.steps[n - 1].narration
        return "Your command: " + command_label(self.run.log[n - 1]) + "."

    def state(self) -> dict[str, Any]:
        run = self.run
        cluster = run.cluster
        summary = build_summary(run)
        cstate = cluster.state()
        part = next((p for p in summary["partitions"] if p["topic"] == TOPIC and p["partition"] == PARTITION), None)
        pmeta = cstate["topics"][TOPIC]["partitions"][PARTITION] if part is not None else None
        lanes = self._lanes(part, pmeta) if part is not None else []
        controller = cstate["controller"]
        brokers = []
        for i in range(len(cluster.brokers)):
            bs = cstate["brokers"][str(i)]
            reg = controller["brokers"].get(str(i), {})
            brokers.append({"id": i, "alive": bs["alive"], "incarnation": bs["incarnation"],
                            "fenced": bool(reg.get("fenced")), "controller": controller["active"] == i,
                            "replica": pmeta is not None and i in pmeta["replicas"],
                            "leader": pmeta is not None and pmeta["leader"] == i})
        steps = [{"n": i + 1, "label": command_label(c), "narration": self._step_text(i + 1),
                  "scripted": self._on_script(i + 1), "done": i < run.position}
                 for i, c in enumerate(run.log)]
        findings = summary["findings"]
        at_end = run.position == len(run.log)
        expected = self.scenario.expected[self.truncation]
        return {
            "clock_ms": cluster.now_ms(),
            "run_id": self.run_id,
            "scenario": {"name": self.scenario.name, "title": self.scenario.title, "summary": self.scenario.summary},
            "truncation": self.truncation,
            "truncation_label": TRUNCATION_LABELS[self.truncation],
            "step": run.position,
            "steps_total": len(run.log),
            "on_script": self._on_script(len(run.log)) and len(run.log) == len(self.script),
            "narration": self._step_text(run.position),
            "next": steps[run.position]["label"] if not at_end else None,
            "steps": steps,
            "last_seq": cluster.events.seq,
            "step_seqs": list(self.step_seqs),
            "controller": {"active": controller["active"], "epoch": controller["controller_epoch"]},
            "brokers": brokers,
            "links": cstate["network"]["faults"],
            "partition": None if part is None else {
                "topic": TOPIC, "partition": PARTITION, "replicas": list(pmeta["replicas"]),
                "leader": part["leader"], "leader_epoch": part["leader_epoch"], "isr": part["isr"],
                "high_watermark": part["high_watermark"], "diverged": part["diverged"]},
            "lanes": lanes,
            "acknowledged": [] if part is None else part["acknowledged"],
            "lost": [] if part is None else [a["value"] for a in part["acknowledged"] if a["lost"]],
            "findings": [finding_text(f) for f in findings],
            "expected_note": expected.note if at_end and self._on_script(len(run.log)) else None,
        }

    @staticmethod
    def _lanes(part: dict[str, Any], pmeta: dict[str, Any]) -> list[dict[str, Any]]:
        """One lane per assigned replica: its log as the engine's files hold it."""
        replica_states = pmeta["replica_states"]
        acked = {(a["offset"], a["digest"]) for a in part["acknowledged"]}
        lanes = []
        for r in part["replicas"]:
            b = r["broker"]
            lane: dict[str, Any] = {"broker": b, "alive": r["alive"]}
            if r["alive"]:
                rs = replica_states.get(str(b)) or {}
                lane.update({
                    "role": r["role"], "leo": r["leo"], "high_watermark": r["high_watermark"],
                    "log_start_offset": r["log_start_offset"], "leader_epoch": rs.get("leader_epoch"),
                    "epoch_cache": r["epoch_cache"],
                    "fetcher": (rs.get("fetcher") or {}).get("state"),
                    "records": [{"offset": x["offset"], "epoch": x["epoch"], "value": x["value"],
                                 "digest": x["digest"], "acked": (x["offset"], x["digest"]) in acked}
                                for x in r["records"]],
                })
            lanes.append(lane)
        return lanes

    def close(self) -> None:
        self._close_run()


def command_label(cmd: dict[str, Any]) -> str:
    """A command of the run in a few words (step list, narration of free commands)."""
    c = cmd.get("cmd")
    if c in ("crash", "restart", "shutdown", "isolate"):
        return f"{c} broker {cmd['broker']}"
    if c == "advance":
        return f"advance the clock {cmd['ms']} ms"
    if c == "produce":
        acks = {-1: "all", "all": "all"}.get(cmd.get("acks"), cmd.get("acks"))
        what = cmd.get("value") or ", ".join(cmd.get("values") or []) or "a record"
        return f"produce {what} (acks={acks})"
    if c == "consume":
        return f"consume from offset {cmd.get('offset', 0)}"
    if c == "create_topic":
        assignment = cmd.get("assignment") or []
        on = f" on brokers {', '.join(map(str, assignment[0]))}" if assignment else ""
        return f"create topic {cmd['topic']}{on}"
    if c == "set_config":
        changes = ", ".join(f"{k}={v}" for k, v in (cmd.get("changes") or {}).items())
        return f"set {changes} on {cmd.get('scope')} {cmd.get('target')}"
    return str(c).replace("_", " ")


def finding_text(f: dict[str, Any]) -> str:
    """A checker finding as a sentence: the timeline's own wording, without its prefix."""
    text = describe(f).removeprefix("CHECKER: ")
    return text[:1].upper() + text[1:]