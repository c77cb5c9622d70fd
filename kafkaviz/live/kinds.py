"""Sandbox kinds: which world a lesson builds, and the views its diagrams draw.

A *sandbox kind* names the world of one lesson -- a storage world of
``engine/storage_world.py`` (a log, a topic with its partitioner, a standalone broker)
or a replicated ``Cluster`` -- and turns it into the plain JSON its diagrams draw
(:meth:`SandboxKind.kind_state`, a pure function of the run). Everything else is the
engine's :class:`~engine.cluster.run.Run`: seed, config, the command log, the position,
seek, redo, fork, checkpoints (Back restores the nearest one and replays the few
commands after it), export and import. The runtime (``runtime.py``) does what is
common to every sandbox: ids, data directories, locking, quotas, frames, reset.

A lesson's guided steps are the run's queued future: a step is the few commands of a
``[[steps]]`` entry, ``step`` redoes them, ``back``/``seek`` seek the run, and a
learner's own command is applied at the current step (the run forgets the rest, like an
editor's undo history). Its commands are the engine's (``engine/storage_commands.py``,
``engine/cluster/commands.py``): form fields and limits come from the command class's
field metadata (:func:`~kafkaviz.live.validation.command_fields`), narrowed only by the
demo host's caps (:data:`STORAGE_CAPS`) and the world's shape (:meth:`SandboxKind.narrow`).
A page-only control (a view, a scenario choice) is a method decorated with
:func:`command`. Either way the runtime calls ``spec.handler(kind, **values)`` -- no
lookup by name. A kind registers by its ``name`` (the lesson file's ``kind``). See
docs/web.md ("Adding a sandbox kind").
"""
from __future__ import annotations

import bisect
import dataclasses
import shutil
from pathlib import Path
from typing import Any, Callable, ClassVar

from engine.cluster.run import Run, RunMoved
from engine.errors import KafkaError
from engine.events import Envelope
from engine import narration

from engine.cluster.commands import COMMANDS as CLUSTER_COMMANDS
from engine.cluster.commands import Command

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kafkaviz.lessons.checks import TaskTracker, evaluate
from kafkaviz.lessons.diagrams import diagram_views
from .validation import CommandError, CommandSpec, Field, TextRule, command_fields, validate_command

__all__ = ["SandboxKind", "Limits", "SANDBOX_KINDS", "get_kind", "command", "RunMoved",
           "STORAGE_CAPS", "STORAGE_TEXT", "run_spec"]

# name -> class; each kind joins when its class is defined (its ``name``).
SANDBOX_KINDS: dict[str, type["SandboxKind"]] = {}

MAX_EVIDENCE = 6  # sentences under a prediction's outcome (the step's narration has the rest)
MAX_STEPS = 200   # a run's steps (script + the learner's own); keeps the command log bounded
MAX_SNAPSHOTS = 16   # checkpoints a run keeps (dense near the current step)
CHECKPOINTS_BY_HAND = 1 << 30   # a lesson's run checkpoints at its step ends (settle), not every n commands


class Limits:
    """Quotas of one sandbox (from settings.KAFKAVIZ_RUNTIME)."""

    def __init__(self, max_messages: int, max_disk_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_disk_bytes = max_disk_bytes


def command(*fields: Field | Callable[[dict], tuple[Field, ...]], help: str = "",
            name: str | None = None) -> Callable[[Callable], Callable]:
    """Mark a kind's method as the handler of a page-only command. ``fields`` are
    :class:`Field`s, or one callable ``scenario -> fields`` when limits follow the lesson."""

    def wrap(fn: Callable) -> Callable:
        fn._command = (name or fn.__name__, fields, help)
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


def engine_spec(command_cls: type[Command], fields: tuple[Field, ...]) -> CommandSpec:
    """The spec of an engine command: the learner's own, applied to the run."""
    name = command_cls.cmd

    def run(kind: "SandboxKind", **values: Any) -> str:
        return kind.own({"cmd": name, **engine_values(command_cls, values)})

    return CommandSpec(name, fields, handler=run, help=command_cls.summary, extra={"engine": command_cls})


# Bounds the web puts on a cluster's engine fields with no (or a very large) upper bound: one
# command of a shared demo host must stay cheap (a 7-day advance would be millions of
# heartbeat events). Node ids reach 199: dedicated KRaft controllers are 100, 101, ...
WEB_CAPS = {"ms": 60_000, "delay_ms": 60_000, "count": 100, "value_size": 1_000, "timeout_ms": 60_000,
            "to_ms": 10**9, "offset": 10**9, "max_records": 100, "partition": 999, "broker": 199, "a": 199, "b": 199}
CLUSTER_TEXT = TextRule(40, r"[A-Za-z0-9._-]*", "may only hold letters, digits, '.', '_' and '-'")


def cluster_spec(name: str, defaults: dict[str, Any],
                 narrow: dict[str, dict[str, Any] | None] | None = None) -> CommandSpec | None:
    """The spec of the cluster's engine command ``name``, its fields from the engine's field
    metadata (:func:`~kafkaviz.live.validation.command_fields`); None when it needs a field a
    form cannot send. ``defaults`` fills fields the page leaves out (the lesson's topic);
    ``narrow`` fits a field to the lesson (the settings ``set_config`` may change)."""
    cls = CLUSTER_COMMANDS[name]
    fields = command_fields(cls, defaults=defaults, caps=WEB_CAPS, text=CLUSTER_TEXT, narrow=narrow)
    if fields is None:
        return None
    return CommandSpec(name, fields, handler=lambda kind, **values: kind.own({"cmd": name, **values}),
                       help=cls.summary, extra={"engine": cls})


def _say(say: list) -> str:
    """A world's ``[template, params]`` sentence in the page's language."""
    text, params = say
    return _(text) % {k: _say(v) if isinstance(v, list) and len(v) == 2 and isinstance(v[1], dict) else v
                      for k, v in params.items()}


def _records(cmd: dict[str, Any]) -> int:
    """Records a command writes (the sandbox's message quota counts them)."""
    if cmd.get("cmd") == "produce":
        return int(cmd.get("count") or 1)
    return 1 if cmd.get("cmd") in ("put", "delete") else 0


class SandboxKind:
    """Base of the sandbox kinds: one :class:`Run` per sandbox (a new one on reset,
    load or import) and its lesson's guided steps over it.

    Commands run in a worker thread under the sandbox's lock, one at a time. They return
    a short sentence for the person who sent the command, or raise ``CommandError`` / an
    engine ``KafkaError`` (both reach that person as a clear error message; the run is
    as it was: the engine's Run applies a command whole or not at all)."""

    name: ClassVar[str] = ""
    world: ClassVar[type | None] = None      # a storage world class; None: a cluster
    events_kept: ClassVar[int] = 500
    command_defaults: ClassVar[dict[str, Any]] = {"topic": "t"}    # scenario keys a cluster command's form fills in
    _handlers: ClassVar[dict[str, tuple]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls) and cls.name:
            SANDBOX_KINDS[cls.name] = cls
        handlers = dict(getattr(cls, "_handlers", {}))
        for attr in vars(cls).values():
            if callable(attr) and hasattr(attr, "_command"):
                handlers[attr._command[0]] = (attr, *attr._command[1:])
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
        self._muted = False
        self._outcome_memo: tuple[tuple, dict[str, Any]] | None = None   # see prediction_state
        self.cut_hook: Callable[[], None] | None = None   # the runtime's: end a frame here
        self.touch_hook: Callable[[], None] | None = None  # the runtime's: send a frame though no event came
        self.run: Run | None = None
        self.run_id = 0
        self._subscribed: Any = None     # the event log the kind's _emit hears
        self._heard: Any = None          # the event log the frame builder hears
        self.defer_checkpoints = False    # the runtime's: it calls settle() after each frame
        self.begin()

    def __getattr__(self, name: str) -> Any:
        # The world's objects (``logs``, ``disk``, ``clock``, ...) read through the kind.
        run = self.__dict__.get("run")
        if run is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(run.world, name)

    # ---- the run -------------------------------------------------------------------
    def begin(self) -> None:
        """Start the lesson's run: its guided steps queued (a kind with its own script,
        like ``replication``, overrides this)."""
        self.new_run(self.script())

    def script(self) -> list[tuple[str | None, list[dict]]]:
        """The lesson's guided steps: (id, commands as the page's forms would send them)."""
        return [(s.id, [self.normal(c) for c in s.do]) for s in self.lesson.steps]

    def normal(self, cmd: Any) -> dict[str, Any]:
        """A command as the learner's form sends it to the engine: validated by the page's
        spec (its defaults filled), optional blanks left to the engine."""
        spec, values = validate_command(self.commands, legacy_command(cmd))
        if "engine" not in spec.extra:
            raise CommandError("invalid", f"{spec.type} cannot be a step of a run.", command=spec.type)
        return {"cmd": spec.type, **engine_values(spec.extra["engine"], values)}

    def make_run(self, run_dir: Path) -> Run:
        """The run this lesson's world lives in (a kind on a cluster overrides this)."""
        return Run(self.seed, None, str(run_dir), world=self.world, scenario=self.scenario,
                   snapshot_every=CHECKPOINTS_BY_HAND, max_snapshots=MAX_SNAPSHOTS, keep_events=self.events_kept,
                   os_fsync=False)

    def new_run(self, steps: list[tuple[str | None, list[dict]]], own_at: int | None = None) -> None:
        """Replace the run by a new one whose future is ``steps`` (id, commands); the
        steps from ``own_at`` (a step index) on are the learner's own."""
        self.close_run()
        self.run_id += 1
        run_dir = self.data_dir / f"run-{self.run_id}"
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        self.run = self.make_run(run_dir)
        self.origin = self.run.position           # a cluster's setup comes before step 1
        self.run.checkpoint()
        self.script_ids = [sid for sid, _ in steps]
        self.script_ends: list[int] = []
        for _sid, do in steps:
            self.script_ends.append((self.script_ends[-1] if self.script_ends else self.origin) + len(do))
        own = len(steps) if own_at is None else own_at
        self.own_at = None if own_at is None else (self.script_ends[own - 1] if own else self.origin)
        self.run.queue([c for _sid, do in steps for c in do])
        self.ends = list(self.script_ends)
        self.step_seqs = [self.run.events.seq]
        self._subscribed = None
        self._sync_events(forward_history=True)

    def _sync_events(self, forward_history: bool = False) -> None:
        """Listen to the run's events (a restored checkpoint brings a new event log)."""
        world = self.run.world
        if hasattr(world, "cut"):
            world.cut = self.cut_frame
        if hasattr(world, "learner"):
            world.learner = self.tracker.own
        events = world.events
        if events is not self._subscribed:
            self._subscribed = events
            if forward_history:
                self._forward(list(events.envelopes))
            events.subscribe(self._emit)
        self._hear()

    def _hear(self) -> None:
        """The frame builder (``listener``) hears the run's event log itself, after the kind's
        own bookkeeping (``_emit``); not while the kind works unheard (``_muted``)."""
        events = self._subscribed
        if self._listener is not None and not self._muted and events is not None and self._heard is not events:
            self._heard = events
            events.subscribe(self._listener)

    def _forward(self, envelopes: list[Envelope]) -> None:
        """Events that happened before anybody listened (a new run's history), heard now."""
        for env in envelopes:
            self._emit(env)
            if self._listener is not None and not self._muted:
                self._listener(env)

    @property
    def events(self) -> Any:
        return self.run.events

    @property
    def position(self) -> int:
        """The lesson step the run is at."""
        return bisect.bisect_right(self.ends, self.run.position)

    @property
    def total_steps(self) -> int:
        return len(self.ends)

    def _scripted(self, n: int) -> bool:
        """Whether step ``n`` (1-based) is the lesson's own."""
        return 1 <= n <= min(len(self.script_ends), len(self.ends)) and (self.own_at is None or self.ends[n - 1] <= self.own_at)

    # ---- commands ------------------------------------------------------------
    @classmethod
    def command_specs(cls, scenario: dict) -> dict[str, CommandSpec]:
        """Every command this kind accepts for a lesson's scenario, handlers bound."""
        specs = {}
        narrow = cls.narrow(scenario)
        for command_cls in (cls.world.commands() if cls.world is not None else ()):
            fields = command_fields(command_cls, caps=_storage_caps(), narrow=narrow.get(command_cls.cmd),
                                    text=STORAGE_TEXT, labels=STORAGE_LABELS)
            specs[command_cls.cmd] = engine_spec(command_cls, fields)
        for cname, (fn, fields, help_text) in cls._handlers.items():
            if len(fields) == 1 and callable(fields[0]) and not isinstance(fields[0], Field):
                fields = tuple(fields[0](scenario))
            specs[cname] = CommandSpec(cname, tuple(fields), handler=fn, help=help_text)
        specs.update(_stepping_specs(cls))
        defaults = {k: scenario.get(k, d) for k, d in cls.command_defaults.items()}
        for name in scenario.get("commands") or () if cls.world is None else ():    # a cluster's, by the lesson
            spec = cluster_spec(name, defaults)
            if spec is not None:
                specs[name] = spec
        return specs

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        """Command → field → form attributes the world's shape fixes (a partition below
        the topic's count, a value that fits a segment), or None for an optional field the
        world has no use for; overridden by kinds."""
        return {}

    def command_done(self, failure: BaseException | None) -> None:
        """After every command (done or refused), under the sandbox's lock: a kind whose
        run may now live in a new world (a restored checkpoint, a new run) follows it."""

    def check_quota(self, cmd: dict[str, Any]) -> None:
        """The demo host's quota: records a run may write."""
        n = _records(cmd)
        if not n:
            return
        sent = sum(_records(c) for c in self.run.log[self.origin:self.run.position])
        if sent + n > self.limits.max_messages:
            raise CommandError("quota", _("This sandbox takes at most %(max)s messages and has %(n)s; step back or "
                                          "press Reset to start over.") % {"max": self.limits.max_messages, "n": sent},
                               "count" if cmd.get("cmd") == "produce" else "key", cmd.get("cmd"))
        if cmd.get("cmd") == "produce" and getattr(self.world, "allocate", False):   # its disk counts real blocks
            used = self.run.world.disk.usage_bytes()
            if used + n * (int(cmd.get("value_size") or 100) + len(cmd.get("key") or "") + 100) \
                    > self.limits.max_disk_bytes:
                raise CommandError("quota", f"This sandbox may use {self.limits.max_disk_bytes} bytes of disk and "
                                   f"uses {used}; sending {n} more message(s) would pass that. Jump the clock so "
                                   "retention deletes old segments, or press Reset.", "count", "produce")

    def own(self, cmd: dict[str, Any]) -> str:
        """The learner's own engine command, applied at the current step as a step of its
        own (the rest of the run's future is dropped). The engine checks it first."""
        if self.position >= MAX_STEPS:
            raise CommandError("quota", _("This run has %(n)s steps, the most it keeps; step back or press Reset "
                                          "to start over.") % {"n": self.position}, command=cmd.get("cmd"))
        self.check_quota(cmd)
        before = self.position
        self.tracker.own = True
        self._sync_events()
        try:
            result = self.run.apply(cmd)
        except KafkaError as exc:
            if not hasattr(exc, "field"):
                raise
            raise CommandError("invalid", str(exc), exc.field, cmd.get("cmd")) from None
        finally:
            self._sync_events()
        at = self.run.position - 1
        self.own_at = at if self.own_at is None else min(self.own_at, at)
        self.ends = [e for e in self.script_ends if e <= self.own_at] + list(range(self.own_at + 1,
                                                                                  len(self.run.log) + 1))
        self._step_done(before, "command")
        return self.reply(cmd, result)

    def reply(self, cmd: dict[str, Any], result: dict[str, Any]) -> str:
        """What the sender of a command is told: the world's sentence, translated."""
        say = result.get("say") if isinstance(result, dict) else None
        if say:
            return _say(say)
        return narration.command_label(cmd, self.lang)

    def _step_done(self, from_step: int, how: str) -> None:
        del self.step_seqs[self.position:]
        self.step_seqs.append(self.run.events.seq)
        self._moved(from_step, how)
        if not self.defer_checkpoints:
            self.settle()

    def settle(self) -> None:
        """Checkpoint the run at its step end, so Back to here restores it and replays
        nothing. The runtime calls this after the step's frame has left
        (``defer_checkpoints``), keeping the checkpoint off the click's path."""
        if self.run is not None and self.run.position in self.ends:
            self.run.checkpoint()

    def _moved(self, from_step: int, how: str) -> None:
        """A ``run_moved`` marker to the frame builder only (never into the world's log)."""
        if self._listener is not None and not self._muted:
            events = self.run.events
            self._listener(Envelope(events.seq, events.clock.now_ms(),
                                    RunMoved(self.position, from_step, events.seq, how)))

    def cut_frame(self) -> None:
        """End a frame at this point of a long command (see ``FrameBuilder.cut``)."""
        if self.cut_hook is not None and not self._muted:
            self.cut_hook()

    def _emit(self, env: Envelope) -> None:
        if self._muted:
            return
        self.tracker.on_envelope(env)
        self.on_event(env)

    # ---- stepping ---------------------------------------------------------------
    def step(self) -> str:
        before = self.position
        if before >= self.total_steps:
            raise CommandError("invalid", _("There is no next step: this run is at its end. Step back, or press "
                                            "Reset."), command="step")
        run = self.run
        while run.position < self.ends[before]:
            self._sync_events()
            if self.own_at is not None and run.position >= self.own_at:
                self.check_quota(run.log[run.position])
            try:
                run.redo()
            finally:
                self._sync_events()
        self._step_done(before, "step")
        return _("Step %(n)s of %(total)s done.") % {"n": self.position, "total": self.total_steps}

    def back(self) -> str:
        if self.position == 0:
            raise CommandError("invalid", _("This is the start of the run; there is no step before it."),
                               command="back")
        return self.seek(self.position - 1)

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
        """Put the run at the end of ``step`` (< position): the run restores its nearest
        checkpoint and replays the few commands after it, unheard."""
        self.run.seek(self.ends[step - 1] if step else self.origin)
        self._sync_events()
        del self.step_seqs[step + 1:]

    # ---- export / import (share links, JSON files) ------------------------------
    def export_run(self) -> dict[str, Any]:
        """The run as plain data: the commands of every step and where the learner is, and
        which world it builds when the lesson offers several (``world_spec``). With the
        lesson's scenario (config, seed) it reproduces exactly what they see."""
        out: dict[str, Any] = {"log": [{"id": self.script_ids[n - 1] if scripted else None,
                                        "do": [self.compact(c) for c in do], "scripted": scripted}
                                       for n, do, scripted in self.steps()], "step": self.position}
        world = self.world_spec()
        if world is not None:
            out["world"] = world
        return out

    def steps(self) -> list[tuple[int, list[dict[str, Any]], bool]]:
        """The run's steps: (n, its commands, whether it is the lesson's own)."""
        log, starts = self.run.log, [self.origin] + self.ends[:-1]
        return [(i + 1, log[start:end], self._scripted(i + 1)) for i, (start, end) in enumerate(zip(starts, self.ends))]

    def compact(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """A command of the run's log as a form sends it: fields at their default left out."""
        parsed = self.run.rules.parse(cmd)
        out = {"cmd": parsed.cmd}
        for f in dataclasses.fields(parsed):
            v = cmd.get(f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
            if v is not None and f.name in cmd and getattr(parsed, f.name) != default:
                out[f.name] = v
        return out

    def import_run(self, run: Any) -> None:
        """Replace the run with an exported one and replay it to its step. Every command
        is validated against this kind's specs and parsed by the engine, so a tampered
        file can do nothing a learner could not; on any error the sandbox is as it was."""
        run = self.upgrade_run(run)
        log, step = _checked_run(run, MAX_STEPS)
        for i, e in enumerate(log):
            if not isinstance(e, dict) or not isinstance(e.get("do"), list) or not 1 <= len(e["do"]) <= 10:
                raise CommandError("invalid", f"Step {i + 1} of the run must list 1 to 10 commands.", command="import")
        if step > len(log):
            raise CommandError("invalid", f"The run is at step {step} but has {len(log)} steps.", command="import")
        world = self.world_of(run.get("world"))

        def build() -> None:
            self.enter(world)
            script = self.script()
            steps, own_at = [], None
            for i, e in enumerate(log):
                scripted = own_at is None and i < len(script) and bool(e.get("scripted")) and \
                    e.get("id") == script[i][0]
                do, on_script = self.step_commands(i + 1, e["do"], script[i][1] if scripted else None)
                if not on_script and own_at is None:
                    own_at = i
                steps.append((script[i][0] if on_script else None, [dict(c) for c in do]))
            self.new_run(steps, own_at)
            self.imported(run)

        self.replace_run(build, lambda: self.position < step)

    def step_commands(self, n: int, do: list, script_do: list[dict] | None) -> tuple[list[dict], bool]:
        """The commands of step ``n`` of an imported run, checked, and whether the step is
        the lesson's own (``script_do``: the lesson's step of the same id, or None)."""
        return [self.normal(c) for c in do], script_do is not None

    # Which world a run builds, for a kind whose lesson offers several (``replication``: a
    # scenario under a truncation rule, or a cluster the learner shaped). Base kinds have one.
    def world_spec(self) -> dict[str, Any] | None:
        """The world of the current run as plain data (the export's ``world``)."""
        return None

    def world_of(self, spec: Any) -> Any:
        """The world an imported run's ``world`` names, checked (raises ``CommandError``)."""
        return None

    def enter(self, world: Any) -> None:
        """Make ``world`` (from ``world_of``) the one the next run builds."""

    def upgrade_run(self, run: Any) -> Any:
        """An export in an older format of this kind, in today's (read once, on import)."""
        return run

    def imported(self, run: dict[str, Any]) -> None:
        """The new run of an import is built, its commands queued: what else the export
        carries (``replication``: a real client's traffic) joins it here."""

    # What a run of this kind is, beyond the Run itself (saved while a new one is built).
    run_fields: ClassVar[tuple[str, ...]] = ("run", "run_id", "origin", "script_ids", "script_ends", "own_at", "ends",
                                             "step_seqs", "_subscribed", "_heard")

    def replace_run(self, build: Callable[[], None], more: Callable[[], bool]) -> None:
        """Build a new run beside the current one, unheard, and step it while ``more()``;
        keep the current one until then, so a refused file leaves the learner's run as it
        was. Then the page gets the new run's history and a "load" marker."""
        saved = {k: getattr(self, k) for k in self.run_fields}
        self.run = None
        self._muted = True
        try:
            build()
            while more():
                self.step()
        except Exception:
            self.close_run()
            for k, v in saved.items():
                setattr(self, k, v)
            raise
        finally:
            self._muted = False
        new, new_id = self.run, self.run_id
        self.run, self.run_id = saved["run"], saved["run_id"]
        self.close_run()
        self.run, self.run_id = new, new_id
        self.tracker.own = self.own_at is not None and self.own_at < self.run.position
        self._forward(list(self.run.events.envelopes))
        self._hear()
        self._moved(0, "load")

    # ---- what a kind provides --------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        raise NotImplementedError

    def on_event(self, env: Envelope) -> None:
        """Called for every engine event the learner sees."""

    def close(self) -> None:
        """The sandbox ends (the runtime removes the data directory afterwards)."""
        self.close_run()

    def close_run(self) -> None:
        """Release the run's files (a new run replaces it, or the sandbox ends)."""
        run = self.__dict__.get("run")
        if run is None:
            return
        try:
            closer = getattr(run.world, "close", None) or run.world.disk.close_all
            closer()
        except Exception:  # noqa: BLE001 - the run is being discarded
            pass
        shutil.rmtree(Path(run.disk_root), ignore_errors=True)
        self.run = None

    # ---- state ---------------------------------------------------------------
    def step_events(self) -> list[dict[str, Any]]:
        """The engine events of the current step (what narrates it)."""
        pos = self.position
        if pos == 0 or len(self.step_seqs) <= pos:
            return []
        lo, hi = self.step_seqs[pos - 1], self.step_seqs[pos]
        return [env.to_dict() for env in self.run.events.between(lo, hi)]

    def step_say(self, n: int) -> str:
        """The sentence of the lesson's step ``n`` (1-based, on script)."""
        return next((s.say for s in self.lesson.steps if s.id == self.script_ids[n - 1]), "")

    def run_state(self) -> dict[str, Any]:
        sep = "；" if self.lang == "zh" else "; "
        steps = [{"n": n, "label": sep.join(narration.command_label(c, self.lang) for c in do),
                  "say": self.step_say(n) if scripted else "", "scripted": scripted} for n, do, scripted in self.steps()]
        return {
            "step": self.position, "total": self.total_steps, "steps": steps,
            "on_script": self.own_at is None,
            "step_seqs": list(self.step_seqs), "last_seq": self.run.events.seq,
            "happened": narration.summarize(self.step_events(), self.lang) if self.position else [],
        }

    # ---- predict, then watch --------------------------------------------------
    def prediction_of(self, n: int) -> tuple[str, Any] | None:
        """``(id, Prediction)`` the lesson asks before step ``n`` (1-based) of the run, when
        that step is still the lesson's own; ``id`` names it for the page (its storage key)."""
        if not self._scripted(n):
            return None
        sid = self.script_ids[n - 1]
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
        # One line per sentence, in order, counted when the same thing happened again (lesson 17
        # step 10: controller 100 loses its pre-vote twice), not the same line twice.
        said: dict[str, int] = {}
        for _seq, ev in sorted(decided.items()):
            text = narration.finding_text(ev, self.lang)
            said[text] = said.get(text, 0) + 1
        times = "{}（×{}）" if self.lang == "zh" else "{} (×{})"
        evidence = [text if n == 1 else times.format(text, n) for text, n in said.items()]
        return {"id": pid, "step": pos, "question": p.question, "choices": choices,
                "evidence": evidence[:MAX_EVIDENCE], "more_evidence": max(0, len(evidence) - MAX_EVIDENCE)}

    def state(self) -> dict[str, Any]:
        st = self.kind_state()
        views = diagram_views(getattr(self.lesson, "diagrams", ()), self.run)   # a diagram's own view(run) (lessons/diagrams.py)
        if views:
            st["views"] = views
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


def _stepping_specs(cls: type[SandboxKind]) -> dict[str, CommandSpec]:
    # The kind's own methods (a kind may override step, e.g. client-session's replayer).
    return {
        "step": CommandSpec("step", (), handler=cls.step, help="Run the next step of the run."),
        "back": CommandSpec("back", (), handler=cls.back, help="Go back one step."),
        "seek": CommandSpec("seek", (Field("step", "int", "Step", required=True, min=0, max=MAX_STEPS),),
                            handler=cls.seek, help="Go to any step of the run."),
    }


def get_kind(name: str) -> type[SandboxKind]:
    kind = SANDBOX_KINDS.get(name)
    if kind is None:
        raise KeyError(f"no sandbox kind {name!r}; known: {', '.join(sorted(SANDBOX_KINDS))}")
    return kind


def run_spec(kind: SandboxKind, spec: CommandSpec, values: dict[str, Any]) -> Any:
    """Run a validated command on ``kind`` as the runtime does (tests, tools): its handler,
    then the kind's ``command_done``."""
    failure = None
    try:
        return spec.handler(kind, **values)
    except BaseException as exc:
        failure = exc
        raise
    finally:
        kind.command_done(failure)
