"""Sandbox kinds: what a lesson's live sandbox is made of.

A *sandbox kind* owns the engine objects one lesson plays with (a single ``Log``, a
``Cluster``, ...), declares the commands a learner may send, and describes its state
as plain JSON for the frames. The runtime (``runtime.py``) does everything common:
ids, data directories, locking, command-rate quotas, frames, reset, idle reclaim.

Every kind also gets the **guided steps** of its lesson and the controls that walk
them: ``step`` (run the next step), ``back`` and ``seek`` (go to any earlier or later
step of the run). A step is a few commands of the kind; a learner's own command is
added as a step at the current position and drops the rest of the script, like an
editor's undo history. This base class implements rewind by *replay*: same seed, same
commands, same events, so rebuilding the engine and replaying the first k steps gives
exactly the state the learner saw at step k. A kind whose engine has snapshots
(``replication``) overrides :meth:`goto`.

A kind registers by declaring its ``name`` (the lesson file's ``kind``): the class joins
:data:`SANDBOX_KINDS` when its module is imported, and the app imports every kind module
when it starts (``apps.py``). Its commands are the
engine's (``engine/storage_commands.py``, ``engine/cluster/commands.py``): a method
decorated with :func:`handles` runs one engine command class, and gets the parsed,
frozen command; the form fields and their limits come from that class's field metadata
(:func:`~kafkaviz.live.validation.command_fields`), narrowed only by the demo host's caps
(:data:`STORAGE_CAPS`) and the world's shape (:meth:`SandboxKind.narrow`). A page-only
control (a view, a scenario choice) is a method decorated with :func:`command` and its
own :class:`Field`s. Either way the runtime calls ``spec.handler(kind, **values)`` -- no
lookup by name. See docs/web.md ("Adding a sandbox kind").
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Callable, ClassVar

from engine.clock import Scheduler, VirtualClock
from engine.events import Envelope, Event, EventLog, event
from engine import narration

from engine.cluster.commands import Command
from engine.storage_commands import STORAGE_COMMANDS, parse_storage_command

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .checks import TaskTracker, evaluate
from .validation import CommandError, CommandSpec, Field, TextRule, command_fields, validate_command

__all__ = ["SandboxKind", "Limits", "SANDBOX_KINDS", "get_kind", "command", "handles", "RunMoved", "STEPPING",
           "STORAGE_CAPS", "STORAGE_TEXT"]

# name -> class; each kind joins when its class is defined (its ``name``).
SANDBOX_KINDS: dict[str, type["SandboxKind"]] = {}

MAX_EVIDENCE = 6  # sentences under a prediction's outcome (the step's narration has the rest)
MAX_STEPS = 200   # a run's steps (script + the learner's own); keeps replay and snapshots bounded


class Limits:
    """Quotas of one sandbox (from settings.KAFKAVIZ_RUNTIME)."""

    def __init__(self, max_messages: int, max_disk_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_disk_bytes = max_disk_bytes


@event("run_moved")
class RunMoved(Event):
    """Not an engine event: the lesson's run is now at ``step`` (it was at
    ``from_step``); ``how`` is "step", "back" (restored), "load" or "command" (the
    learner's own). Browsers drop timeline events after ``last_seq``."""
    step: int
    from_step: int
    last_seq: int
    how: str


def command(*fields: Field | Callable[[dict], tuple[Field, ...]], help: str = "",
            name: str | None = None) -> Callable[[Callable], Callable]:
    """Mark a kind's method as the handler of a command. ``fields`` are :class:`Field`s,
    or one callable ``scenario -> fields`` when limits follow the lesson's config."""

    def wrap(fn: Callable) -> Callable:
        fn._command = (name or fn.__name__, fields, help)
        return fn

    return wrap


def handles(command_cls: type[Command]) -> Callable[[Callable], Callable]:
    """Mark a kind's method as the runner of an engine command class; the method takes
    the parsed command (``def produce(self, cmd: Produce) -> str``)."""

    def wrap(fn: Callable) -> Callable:
        fn._handles = command_cls
        return fn

    return wrap


# The demo host's caps on one storage command (its only web-side policy: the engine's
# bounds are the field metadata). A storage world is cheap; these keep one command short.
STORAGE_CAPS = {"count": 50, "ms": 3_600_000, "value_size": 2_000, "max_records": 50,
                "retention_bytes": 100_000, "retention_ms": 86_400_000}
STORAGE_TEXT = TextRule(40, r"[ -~]*", gettext_lazy("may only hold printable ASCII characters"))
STORAGE_LABELS = {"count": gettext_lazy("Number of messages"), "value_size": gettext_lazy("Value size (bytes)"),
                  "partition": gettext_lazy("Partition"), "key": gettext_lazy("Key"), "value": gettext_lazy("Value"),
                  "ms": gettext_lazy("Jump (ms)"), "offset": gettext_lazy("Offset"),
                  "timestamp": gettext_lazy("Timestamp (ms)"), "consumer": gettext_lazy("Consumer"),
                  "segment": gettext_lazy("Segment base offset"), "key_mode": gettext_lazy("Keys")}


def _storage_caps() -> dict[str, int]:
    return {**STORAGE_CAPS, "count": settings.KAFKAVIZ_RUNTIME.get("MAX_MESSAGES_PER_COMMAND", STORAGE_CAPS["count"])}


def engine_values(command_cls: type[Command], values: dict[str, Any]) -> dict[str, Any]:
    """A form's cleaned values as the engine command's fields: an optional field left
    blank is left out (the engine's default applies)."""
    optional = {f.name for f in dataclasses.fields(command_cls) if f.metadata.get("kind", "").endswith("?")}
    return {k: v for k, v in values.items() if not (k in optional and v in (None, ""))}


def _storage_spec(command_cls: type[Command], fn: Callable, fields: tuple[Field, ...]) -> CommandSpec:
    name = command_cls.cmd

    def run(kind: "SandboxKind", **values: Any) -> str:
        return fn(kind, parse_storage_command({"cmd": name, **engine_values(command_cls, values)}))

    return CommandSpec(name, fields, handler=run, help=command_cls.summary, extra={"engine": command_cls})


# The stepping commands every kind understands (handled by the base class).
STEPPING = ("step", "back", "seek")


class SandboxKind:
    """Base of the engine holders. One instance per sandbox; recreated on reset.

    Handlers run in a worker thread under the sandbox's lock, one at a time, so they
    may call the engine freely. They return a short sentence for the person who sent
    the command, or raise ``CommandError`` / an engine ``KafkaError`` (both reach that
    person as a clear error message; the sandbox stays usable)."""

    name: ClassVar[str] = ""
    events_kept: ClassVar[int] = 500
    _handlers: ClassVar[dict[str, tuple]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls) and cls.name:
            SANDBOX_KINDS[cls.name] = cls
        handlers = dict(getattr(cls, "_handlers", {}))
        for attr in vars(cls).values():
            if callable(attr) and hasattr(attr, "_command"):
                handlers[attr._command[0]] = (attr, *attr._command[1:])
            elif callable(attr) and hasattr(attr, "_handles"):
                assert STORAGE_COMMANDS.get(attr._handles.cmd) is attr._handles, attr._handles
                handlers[attr._handles.cmd] = (attr, attr._handles)
        cls._handlers = handlers

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits, lesson: Any,
                 listener: Callable[[Envelope], None] | None = None, lang: str = "en") -> None:
        self.data_dir = data_dir
        self.seed = seed
        self.limits = limits
        self.lesson = lesson
        self.scenario = dict(lesson.scenario)
        self.lang = lang
        self._listener = listener
        self.tracker = TaskTracker(lesson.tasks)
        self.commands = self.command_specs(self.scenario)
        # The run: guided steps as the future, the learner's own commands replace it.
        self.log: list[dict[str, Any]] = [{"id": s.id, "do": [dict(c) for c in s.do], "scripted": True}
                                          for s in lesson.steps]
        self.script_len = len(self.log)
        self.position = 0
        self.step_seqs = [0]
        self._muted = False
        self._outcome_memo: tuple[tuple, dict[str, Any]] | None = None   # see prediction_state
        self.cut_hook: Callable[[], None] | None = None   # the runtime's: end a frame here
        self.touch_hook: Callable[[], None] | None = None  # the runtime's: send a frame though no event came
        self.clock = VirtualClock()
        self.scheduler = Scheduler(self.clock)
        self.events = EventLog(self.clock, keep=self.events_kept)
        self.events.subscribe(self._emit)

    # ---- commands ------------------------------------------------------------
    @classmethod
    def command_specs(cls, scenario: dict) -> dict[str, CommandSpec]:
        """Every command this kind accepts for a lesson's scenario, handlers bound."""
        specs = {}
        narrow = cls.narrow(scenario)
        for cname, (fn, *decl) in cls._handlers.items():
            if len(decl) == 1:          # an engine storage command (@handles): its fields come from the engine
                fields = command_fields(decl[0], caps=_storage_caps(), narrow=narrow.get(cname),
                                        text=STORAGE_TEXT, labels=STORAGE_LABELS)
                specs[cname] = _storage_spec(decl[0], fn, fields)
                continue
            fields, help_text = decl
            if len(fields) == 1 and callable(fields[0]) and not isinstance(fields[0], Field):
                fields = tuple(fields[0](scenario))
            specs[cname] = CommandSpec(cname, tuple(fields), handler=fn, help=help_text)
        specs.update(_stepping_specs())
        return specs

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        """Command → field → form attributes the world's shape fixes (a partition below
        the topic's count, a value that fits a segment), or None for an optional field the
        world has no use for; overridden by kinds."""
        return {}

    def execute(self, spec: CommandSpec, values: dict[str, Any]) -> str:
        """Run one validated command: stepping, or the learner's own (recorded as a step)."""
        if spec.type in STEPPING:
            return spec.handler(self, **values)
        if len(self.log[:self.position]) >= MAX_STEPS:
            raise CommandError("quota", _("This run has %(n)s steps, the most it keeps; step back or press Reset "
                                          "to start over.") % {"n": self.position}, command=spec.type)
        before = self.position
        self.tracker.own = True
        text = spec.handler(self, **values)
        engine_cls = spec.extra.get("engine")
        own = {"cmd": spec.type, **(engine_values(engine_cls, values) if engine_cls else values)}
        self.log[self.position:] = [{"id": None, "do": [own], "scripted": False}]
        self._step_done(before, "command")
        return text

    def _run_step(self, entry: dict[str, Any]) -> list[str]:
        out = []
        for cmd in entry["do"]:
            spec, values = validate_command(self.commands, cmd)
            out.append(spec.handler(self, **values))
        return out

    def _step_done(self, from_step: int, how: str) -> None:
        self.position = from_step + 1 if how in ("step", "command") else self.position
        del self.step_seqs[self.position:]
        self.step_seqs.append(self.events.seq)
        self._moved(from_step, how)

    def _moved(self, from_step: int, how: str) -> None:
        """A ``run_moved`` marker to the frame builder only (never into the engine's log)."""
        if self._listener is not None and not self._muted:
            self._listener(Envelope(self.events.seq, self.events.clock.now_ms(),
                                    RunMoved(self.position, from_step, self.events.seq, how)))

    def cut_frame(self) -> None:
        """End a frame at this point of a long command (see ``FrameBuilder.cut``)."""
        if self.cut_hook is not None and not self._muted:
            self.cut_hook()

    def _emit(self, env: Envelope) -> None:
        if self._muted:
            return
        self.tracker.on_envelope(env)
        self.on_event(env)
        if self._listener is not None:
            self._listener(env)

    # ---- stepping (the base implementation replays; see the module doc) ------
    def step(self) -> str:
        if self.position >= len(self.log):
            raise CommandError("invalid", _("There is no next step: this run is at its end. Step back, or press "
                                            "Reset."), command="step")
        before = self.position
        self._run_step(self.log[before])
        self._step_done(before, "step")
        return _("Step %(n)s of %(total)s done.") % {"n": self.position, "total": len(self.log)}

    def back(self) -> str:
        if self.position == 0:
            raise CommandError("invalid", _("This is the start of the run; there is no step before it."),
                               command="back")
        return self.seek(self.position - 1)

    @property
    def total_steps(self) -> int:
        return len(self.log)

    def seek(self, step: int) -> str:
        total = self.total_steps
        if not 0 <= step <= total:
            raise CommandError("invalid", _("Step must be between 0 and %(total)s, got %(step)s.") % {
                "total": total, "step": step}, "step", "seek")
        before = self.position
        if step > before:
            while self.position < step:
                self.step()
            return _("At step %(n)s of %(total)s.") % {"n": step, "total": total}
        if step < before:
            self.goto(step)
            self._moved(before, "back")
        return _("Back to step %(n)s of %(total)s.") % {"n": step, "total": total}

    def goto(self, step: int) -> None:
        """Make the engine's state that after ``step`` steps (step < position)."""
        self.close()
        for child in self.data_dir.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        self.clock = VirtualClock()
        self.scheduler = Scheduler(self.clock)
        self.events = EventLog(self.clock, keep=self.events_kept)
        self.events.subscribe(self._emit)
        self._muted = True
        try:
            self.open()
            self.position = 0
            self.step_seqs = [self.events.seq]
            for i in range(step):
                self._run_step(self.log[i])
                self.position = i + 1
                self.step_seqs.append(self.events.seq)
        finally:
            self._muted = False

    # ---- export / import (share links, JSON files) ------------------------------
    def export_run(self) -> dict[str, Any]:
        """The run as plain data: the commands of every step and where the learner is.
        With the lesson's scenario (config, seed) it reproduces exactly what they see."""
        return {"log": [{"id": e["id"], "do": [dict(c) for c in e["do"]], "scripted": e["scripted"]}
                        for e in self.log], "step": self.position}

    def import_run(self, run: Any) -> None:
        """Replace the run with an exported one and replay it to its step. Every command
        is validated against this kind's specs and run by the engine, so a tampered file
        can do nothing a learner could not; on any error the sandbox is as it was."""
        log, step = _checked_run(run, MAX_STEPS)
        entries = []
        ids = {s.id for s in self.lesson.steps}
        for i, e in enumerate(log):
            if not isinstance(e, dict) or not isinstance(e.get("do"), list) or not 1 <= len(e["do"]) <= 10:
                raise CommandError("invalid", f"Step {i + 1} of the run must list 1 to 10 commands.", command="import")
            e = {**e, "do": [legacy_command(c) for c in e["do"]]}
            for cmd in e["do"]:
                spec, _values = validate_command(self.commands, cmd)
                if spec.type in STEPPING:
                    raise CommandError("invalid", f"Step {i + 1}: {spec.type} cannot be a step of a run.",
                                       command="import")
            scripted = bool(e.get("scripted")) and e.get("id") in ids
            entries.append({"id": e.get("id") if scripted else None, "do": [dict(c) for c in e["do"]],
                            "scripted": scripted})
        if step > len(entries):
            raise CommandError("invalid", f"The run is at step {step} but has {len(entries)} steps.", command="import")
        saved = (self.log, self.position)
        self.log = entries
        try:
            self.goto(0)
            self._moved(saved[1], "back")
            self.seek(step)
        except Exception:
            self.log = saved[0]
            self.goto(0)
            while self.position < saved[1]:
                self.step()
            raise

    # ---- what a kind provides --------------------------------------------------
    def open(self) -> None:
        """Build the engine on ``self.data_dir`` with ``self.scheduler``/``self.events``."""
        raise NotImplementedError

    def kind_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def step_label(self, entry: dict[str, Any]) -> str:
        """A step of the run in a few words (the step list, the scrubber)."""
        return "; ".join(narration.command_label(c, self.lang) for c in entry["do"])

    def on_event(self, env: Envelope) -> None:
        """Called for every engine event the learner sees."""

    def close(self) -> None:
        """Release files; the runtime removes the data directory afterwards."""

    # ---- state ---------------------------------------------------------------
    def step_events(self) -> list[dict[str, Any]]:
        """The engine events of the current step (what narrates it)."""
        lo = self.step_seqs[self.position - 1] if self.position > 0 and len(self.step_seqs) > self.position else None
        if lo is None:
            return []
        hi = self.step_seqs[self.position]
        return [env.to_dict() for env in self.events.between(lo, hi)]

    def run_state(self) -> dict[str, Any]:
        says = {s.id: s.say for s in self.lesson.steps}
        steps = [{"n": i + 1, "label": self.step_label(e), "say": says.get(e["id"], "") if e["scripted"] else "",
                  "scripted": e["scripted"]} for i, e in enumerate(self.log)]
        return {
            "step": self.position, "total": len(self.log), "steps": steps,
            "on_script": all(e["scripted"] for e in self.log),
            "step_seqs": list(self.step_seqs), "last_seq": self.events.seq,
            "happened": narration.summarize(self.step_events(), self.lang) if self.position else [],
        }

    # ---- predict, then watch --------------------------------------------------
    def prediction_of(self, n: int) -> tuple[str, Any] | None:
        """``(id, Prediction)`` the lesson asks before step ``n`` (1-based) of the run, when
        that step is still the lesson's own; ``id`` names it for the page (its storage key)."""
        if not 1 <= n <= len(self.log) or not self.log[n - 1]["scripted"]:
            return None
        sid = self.log[n - 1]["id"]
        p = self.lesson.predictions.get(sid)
        return None if p is None else (sid, p)

    def prediction_state(self, st: dict[str, Any]) -> dict[str, Any] | None:
        """The question before the next step (``upcoming``) and, once a step with a
        question has run, what the engine did (``outcome``): each choice's check evaluated
        on that step's events alone and the state after it, with the events that decided
        it narrated. A pure function of the run's position, so Back and Step give it again.

        The outcome is worked out once, by the first state after the step, and kept: the
        frames of the *next* step (cut mid-command, or one per event in step mode) come
        while the position still names this one, and must neither re-read its events for
        every frame nor judge it on a half-run state."""
        out: dict[str, Any] = {}
        pos = self.position
        done = self.prediction_of(pos) if pos else None
        if done is not None:
            pid, p = done
            key = (pid, pos, tuple(self.step_seqs[:pos + 1]), id(self.events), self.lang)
            if self._outcome_memo is None or self._outcome_memo[0] != key:
                self._outcome_memo = (key, self._outcome(pid, pos, p, st))
            out["outcome"] = self._outcome_memo[1]
        upcoming = self.prediction_of(pos + 1)
        if upcoming is not None:
            pid, p = upcoming
            out["upcoming"] = {"id": pid, "step": pos + 1, **p.ask()}
        return out or None

    def _outcome(self, pid: str, pos: int, p: Any, st: dict[str, Any]) -> dict[str, Any]:
        events = self.step_events()
        choices, decided = [], {}
        for text, check in zip(p.choices, p.checks):
            held, matched = evaluate(check, events, st)
            choices.append({"text": text, "happened": held})
            decided.update((ev.get("seq"), ev) for ev in matched)
        evidence = [narration.finding_text(ev, self.lang) for _seq, ev in sorted(decided.items())]
        return {"id": pid, "step": pos, "question": p.question, "choices": choices,
                "evidence": evidence[:MAX_EVIDENCE], "more_evidence": max(0, len(evidence) - MAX_EVIDENCE)}

    def state(self) -> dict[str, Any]:
        st = self.kind_state()
        st["run"] = self.run_state()
        st["tasks"] = self.tracker.state(st)
        st["prediction"] = self.prediction_state(st)
        return st


def legacy_command(cmd: Any) -> Any:
    """A command of a run exported before the storage lessons spoke the engine's vocabulary
    (``{"type": "advance", "seconds": 5}``) as it is now (``{"cmd": "advance", "ms": 5000}``),
    so old share links and files still open; anything else is returned as it is."""
    if not isinstance(cmd, dict) or "cmd" in cmd or not isinstance(cmd.get("type"), str):
        return cmd
    out = {"cmd": cmd["type"], **{k: v for k, v in cmd.items() if k != "type"}}
    seconds = out.get("seconds")
    if out["cmd"] == "advance" and isinstance(seconds, int) and not isinstance(seconds, bool) and "ms" not in out:
        del out["seconds"]
        out["ms"] = seconds * 1000
    return out


def _checked_run(run: Any, max_steps: int) -> tuple[list, int]:
    if not isinstance(run, dict) or not isinstance(run.get("log"), list) or not isinstance(run.get("step"), int) \
            or isinstance(run.get("step"), bool):
        raise CommandError("invalid", "A run needs a \"log\" (list of steps) and a \"step\" (whole number).",
                           command="import")
    if len(run["log"]) > max_steps or run["step"] < 0:
        raise CommandError("invalid", f"A run has 0 to {max_steps} steps and a step within them.", command="import")
    return run["log"], run["step"]


def _stepping_specs() -> dict[str, CommandSpec]:
    # Lambdas, so a kind's own step/back/seek (e.g. replication's snapshots) are the ones called.
    return {
        "step": CommandSpec("step", (), handler=lambda kind: kind.step(), help="Run the next step of the run."),
        "back": CommandSpec("back", (), handler=lambda kind: kind.back(), help="Go back one step."),
        "seek": CommandSpec("seek", (Field("step", "int", "Step", required=True, min=0, max=MAX_STEPS),),
                            handler=lambda kind, step: kind.seek(step), help="Go to any step of the run."),
    }


def get_kind(name: str) -> type[SandboxKind]:
    kind = SANDBOX_KINDS.get(name)
    if kind is None:
        raise KeyError(f"no sandbox kind {name!r}; known: {', '.join(sorted(SANDBOX_KINDS))}")
    return kind
