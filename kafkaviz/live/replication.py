"""The ``replication`` sandbox kind: a replicated cluster playing a named scenario
(``engine/cluster/scenarios.py``) step by step, with rewind.

The kind owns one :class:`engine.cluster.run.Run` (seed + config + command log + a
snapshot after every command). The scenario's commands are the run's *future*; a
lesson step is one command, or a few when a command shows nothing until the clock moves
(see ``script_ends``): step = ``Run.redo()`` up to the step's last command, back/seek =
``Run.seek(k)`` (the snapshot taken after command k is restored, engine state and
files), a learner's own command = ``Run.apply()`` (added at the current step as a step
of its own; the rest of the scenario is dropped).

**One command vocabulary.** The learner's commands are the engine's own
(``engine/cluster/commands.py``): their fields, types and bounds are generated from
that module's metadata, and the engine's checks refuse what cannot be done (an
unknown broker, restarting a running one, producing to a missing topic). Nothing here
checks the cluster a second time.

Scenario keys (from the lesson file):

* ``choices`` -- scenario names the learner may pick (the first is loaded first);
* ``truncations`` -- follower truncation rules offered ("hw", "epoch"); default ["epoch"];
* ``topic`` / ``partition`` -- the partition the diagrams show;
* ``commands`` -- engine commands the learner may send (fault buttons, produce, ...);
* ``broker_names`` -- e.g. {1 = "A", 2 = "B"}, shown beside broker ids;
* ``configurable`` -- config names ``set_config`` may change from the page.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from engine import narration
from engine.cluster.commands import COMMANDS as ENGINE_COMMANDS
from engine.cluster.commands import command_to_dict, parse_command
from engine.cluster.run import Run, build_summary, make_config
from engine.cluster.scenarios import Scenario, Step, get_scenario

from .group_views import deliveries, group_view, lag_series, protocol_steps
from .kinds import MAX_STEPS, SandboxKind, command
from .quorum_view import quorum_view
from .replication_views import consumer_view, hw_view, offset_series, produce_table
from .validation import CommandError, CommandSpec, Field, TextRule, command_fields, validate_command

__all__ = ["ReplicationSandbox", "engine_command_spec", "WEB_CAPS"]

# Index files are preallocated sparse, as Kafka does; at Kafka's 10 MiB each, four of them
# made a run look like 40 MiB on disk. One block each keeps ls, du and quotas in step.
SANDBOX_LOG_CONFIG = {"segment.index.bytes": 4096}

# Bounds the web puts on engine fields with no (or a very large) upper bound: one
# command of a shared demo host must stay cheap (a 7-day advance would be millions of
# heartbeat events). Node ids reach 199: dedicated KRaft controllers are 100, 101, ...
WEB_CAPS = {"ms": 60_000, "delay_ms": 60_000, "count": 100, "value_size": 1_000, "timeout_ms": 60_000,
            "to_ms": 10**9, "offset": 10**9, "max_records": 100, "partition": 999, "broker": 199, "a": 199, "b": 199}
CLUSTER_TEXT = TextRule(40, r"[A-Za-z0-9._-]*", "may only hold letters, digits, '.', '_' and '-'")


def engine_command_spec(name: str, defaults: dict[str, Any]) -> CommandSpec | None:
    """A :class:`CommandSpec` for engine command ``name``, its fields generated from the
    engine's field metadata (:func:`~kafkaviz.live.validation.command_fields`); a command
    needing a field a form cannot send is not offered (None).
    ``defaults`` fills fields the page leaves out (the lesson's topic)."""
    cls = ENGINE_COMMANDS[name]
    fields = command_fields(cls, defaults=defaults, caps=WEB_CAPS, text=CLUSTER_TEXT)
    if fields is None:
        return None
    return CommandSpec(name, fields, handler=lambda kind, **values: kind.engine(name, values),
                       help=cls.summary, extra={"engine": cls})


def _load_fields(scenario: dict) -> tuple[Field, ...]:
    choices = tuple(scenario.get("choices") or ())
    truncations = tuple(scenario.get("truncations") or ("epoch",))
    return (Field("scenario", "str", "Scenario", default=choices[0] if choices else None, choices=choices),
            Field("truncation", "str", "Truncation rule", default=truncations[0], choices=truncations))


MAX_PARTITIONS = 3     # of a cluster the learner builds; the diagrams show one at a time


def _shape_fields(scenario: dict) -> tuple[Field, ...]:
    truncations = tuple(scenario.get("truncations") or ("epoch",))
    return (Field("brokers", "int", "Brokers", default=3, min=2, max=5),
            Field("partitions", "int", "Partitions", default=1, min=1, max=MAX_PARTITIONS),
            Field("replication_factor", "int", "Replication factor", default=2, min=1, max=3),
            Field("min_insync_replicas", "int", "min.insync.replicas", default=1, min=1, max=3),
            Field("unclean", "bool", "Unclean leader election", default=False),
            Field("truncation", "str", "Truncation rule", default=truncations[0], choices=truncations))


# Short timers, as in the engine's two-replica scenarios, so failures show within seconds.
SHAPE_TIMERS = {"replica.high.watermark.checkpoint.interval.ms": 100, "broker.session.timeout.ms": 3000,
                "broker.heartbeat.interval.ms": 500, "replica.lag.time.max.ms": 5000}


def shape_scenario(shape: dict[str, Any], topic: str, seed: int) -> Scenario:
    """A scenario for a cluster the learner shaped: create the topic, let leaders be elected."""
    config = {"min.insync.replicas": shape["min_insync_replicas"],
              "unclean.leader.election.enable": shape["unclean"]}
    steps = (Step({"cmd": "create_topic", "topic": topic, "partitions": shape["partitions"],
                   "replication_factor": shape["replication_factor"], "config": config},
                  "Create the topic; the controller assigns replicas."),
             Step({"cmd": "advance", "ms": 1000}, "Leaders are elected and followers start fetching."))
    title = (f"{shape['brokers']} brokers, {shape['partitions']} partition(s), RF {shape['replication_factor']}, "
             f"min.insync.replicas {shape['min_insync_replicas']}" + (", unclean election" if shape["unclean"] else ""))
    return Scenario(name="custom", title=title, summary=title, steps=steps, expected={},
                    config={"brokers": shape["brokers"], **SHAPE_TIMERS}, seed=seed)


def _config_fields(scenario: dict) -> tuple[Field, ...]:
    names = tuple(scenario.get("configurable") or ())
    return (Field("name", "str", "Setting", required=True, choices=names or ("",)),
            Field("value", "int", "Value", required=True, min=0, max=10**9),
            Field("broker", "int", "Broker", default=None, min=0, max=99))


# Commands that show nothing until the clock moves: a produce is only sent when time
# passes; a group configuration, a paused or a slowed follower show on the next fetch or
# heartbeat. In a scenario each emits no event of its own, so a lesson step never stops
# after one: it runs on through the next command (a step that changes nothing would only
# make the learner press Step twice). The commands and their order are the scenario's, so
# the event stream is the same, byte for byte.
JOINS_NEXT = frozenset({"produce", "configure_groups", "pause_follower", "slow_follower"})


def script_ends(script: list[dict[str, Any]]) -> list[int]:
    """The run positions at which the steps of ``script`` end (1-based, increasing)."""
    return [i + 1 for i, c in enumerate(script) if c.get("cmd") not in JOINS_NEXT or i == len(script) - 1]


class ReplicationSandbox(SandboxKind):
    """A cluster running one scenario step by step, with rewind and free play."""

    name: ClassVar[str] = "replication"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sc = self.scenario
        self.topic, self.partition = sc.get("topic", "t"), sc.get("partition", 0)
        self.run_id = 0
        self.custom_shape: dict[str, Any] | None = None     # the learner's own cluster shape, when they built one
        self.run: Run | None = None
        self._subscribed: Any = None
        self._start(sc["choices"][0], (sc.get("truncations") or ["epoch"])[0])

    @classmethod
    def command_specs(cls, scenario: dict) -> dict[str, CommandSpec]:
        specs = super().command_specs(scenario)
        defaults = {"topic": scenario.get("topic", "t"), "partition": scenario.get("partition", 0)}
        for name in scenario.get("commands") or ():
            spec = engine_command_spec(name, defaults)
            if spec is not None:
                specs[name] = spec
        if not scenario.get("configurable"):
            specs.pop("set_config", None)
        if not scenario.get("shape"):
            specs.pop("shape", None)
        return specs

    # ---- the run -------------------------------------------------------------------
    def _run_dir(self) -> Path:
        return self.data_dir / f"run-{self.run_id}"

    def _start(self, scenario: "str | Scenario", truncation: str) -> None:
        self._close_run()
        self.scenario_def = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.custom_shape = None if isinstance(scenario, str) else self.custom_shape
        self.truncation = truncation
        self.run_id += 1
        run_dir = self._run_dir()
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        self.script = [command_to_dict(parse_command(c)) for c in self.scenario_def.commands()]
        run = Run(self.scenario_def.seed, make_config({**SANDBOX_LOG_CONFIG, **self.scenario_def.config},
                                                      truncation=truncation),
                  str(run_dir), snapshot_every=1, max_snapshots=MAX_STEPS + 2, os_fsync=False)
        run.queue(self.script)
        self.run = run
        self.ends = script_ends(self.script)
        self.step_seqs = [run.cluster.events.seq]
        self._sync_events(forward_history=True)

    def _sync_events(self, forward_history: bool = False) -> None:
        """Point the kind's event log at the run's cluster (a restore makes a new one)."""
        events = self.run.cluster.events
        if events is self._subscribed:
            return
        self.events = events
        self._subscribed = events
        if forward_history:
            for env in list(events.envelopes):
                self._emit(env)
        events.subscribe(self._emit)

    def _close_run(self) -> None:
        if self.run is None:
            return
        try:
            self.run.cluster.disk.close_all()
        except Exception:  # noqa: BLE001 - the run is being discarded
            pass
        shutil.rmtree(self._run_dir(), ignore_errors=True)
        self.run = None
        self._subscribed = None

    def _ends_of_log(self) -> list[int]:
        """Step ends of the run's log: the script's grouping while the log follows the
        script, then one step per command of the learner's own."""
        log, script = self.run.log, self.script
        k = 0
        while k < min(len(log), len(script)) and log[k] == script[k]:
            k += 1
        ends = [e for e in script_ends(script) if e <= k]
        if k and (not ends or ends[-1] != k):
            ends.append(k)
        return ends + list(range(k + 1, len(log) + 1))

    @property
    def position(self) -> int:  # type: ignore[override]
        """The lesson step the run is at (its commands are ``run.position``)."""
        if self.run is None or self.run.position == 0:
            return 0
        pos = self.run.position
        return next((i + 1 for i, e in enumerate(self.ends) if e == pos), sum(1 for e in self.ends if e <= pos))

    @property
    def total_steps(self) -> int:
        return len(self.ends)

    @position.setter
    def position(self, value: int) -> None:
        pass  # the run keeps its own position

    # ---- commands ------------------------------------------------------------------
    @command(_load_fields, help="Start a scenario from the beginning under a truncation rule.")
    def load(self, scenario: str, truncation: str) -> str:
        self._start(scenario, truncation)
        self.tracker.own = False
        self._moved(0, "load")
        return _("Loaded %(scenario)s (%(truncation)s truncation): press Step.") % {"scenario": scenario,
                                                                                "truncation": truncation}

    @command(_shape_fields, help="Build your own cluster: brokers, partitions, replication factor, min ISR.")
    def shape(self, **values: Any) -> str:
        # Through import_run: the engine creates the topic, and refuses (say) RF > brokers, on a
        # run built beside the current one, which stays if the engine says no.
        seed = self.seed & 0xFFFF
        script = [command_to_dict(parse_command(c)) for c in shape_scenario(values, self.topic, seed).commands()]
        self.import_run({"shape": values, "seed": seed, "log": script, "step": len(script)})
        return _("Your cluster: %(title)s.") % {"title": self.scenario_def.title}

    @command(_config_fields, help="Change a setting (Kafka name) of the cluster, or of one broker.")
    def set_config(self, name: str, value: int, broker: int | None = None) -> str:
        scope = {"scope": "broker", "target": broker} if broker is not None else {"scope": "cluster"}
        return self.engine("set_config", {**scope, "changes": {name: value}})

    @command(Field("partition", "int", gettext_lazy("Partition"), required=True, min=0, max=MAX_PARTITIONS - 1),
             help="Show another partition of the topic in the diagrams (changes nothing in the cluster).")
    def view_partition(self, partition: int) -> str:
        count = self._partition_count()
        if partition >= count:
            raise CommandError("invalid", _("Topic %(t)s has partitions 0 to %(last)s.") % {
                "t": self.topic, "last": count - 1}, "partition", "view_partition")
        self.partition = partition
        if self.touch_hook is not None:
            self.touch_hook()
        return _("Showing partition %(t)s-%(p)s.") % {"t": self.topic, "p": partition}

    def _partition_count(self) -> int:
        return len(self.run.cluster.state()["topics"].get(self.topic, {}).get("partitions", ())) or 1

    def execute(self, spec: CommandSpec, values: dict[str, Any]) -> str:
        if spec.type in ("load", "shape", "step", "back", "seek", "view_partition"):
            return spec.handler(self, **values)
        before = self.position
        self.tracker.own = True
        text = spec.handler(self, **values)
        self._step_done(before, "command")
        return text

    def engine(self, name: str, values: dict[str, Any]) -> str:
        """The learner's own engine command, added at the current step (the rest of the
        scenario is dropped). The engine validates it against the cluster."""
        if self.run.position >= MAX_STEPS:
            raise CommandError("quota", _("This run has %(n)s steps, the most it keeps; load the scenario again "
                                          "to start over.") % {"n": self.run.position}, command=name)
        cmd = {"cmd": name, **{k: v for k, v in values.items() if v is not None}}
        if name == "consumer_join":
            cmd = self._join_like_the_group(cmd)
        self.run.apply(cmd)
        self.ends = self._ends_of_log()
        self._sync_events()
        return narration.command_label(cmd, self.lang)

    def _join_like_the_group(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """A form cannot send lists: a new consumer subscribes to what the group's members
        subscribe to, with their assignment strategies (else the lesson's topic), so it
        joins the group the lesson shows rather than failing INCONSISTENT_GROUP_PROTOCOL."""
        svc = getattr(self.run.cluster, "groups", None)
        peers = [c for c in (svc.consumers.values() if svc is not None else ()) if c.group == cmd.get("group")]
        if svc is not None and cmd.get("name") in svc.consumers:
            return cmd        # a restart keeps the consumer's own subscription and strategies
        if peers:
            cmd.setdefault("topics", list(peers[0].topics))
            cmd.setdefault("strategies", list(peers[0].config.strategies))
        else:
            cmd.setdefault("topics", [self.topic])
        return cmd

    def _step_done(self, from_step: int, how: str) -> None:
        del self.step_seqs[self.position:]
        self.step_seqs.append(self.run.cluster.events.seq)
        self._moved(from_step, how)

    def step(self) -> str:
        run = self.run
        before = self.position
        if before >= self.total_steps:
            raise CommandError("invalid", _("There is no next step: this run is at its end. Step back, or load "
                                            "the scenario again."), command="step")
        while run.position < self.ends[before]:
            run.redo()
            self._sync_events()
        self._step_done(before, "step")
        return _("Step %(n)s of %(total)s done.") % {"n": self.position, "total": self.total_steps}

    def goto(self, step: int) -> None:
        self.run.seek(self.ends[step - 1] if step else 0)
        self._sync_events()
        del self.step_seqs[step + 1:]

    # ---- export / import -------------------------------------------------------------
    def export_run(self) -> dict[str, Any]:
        out = {"scenario": self.scenario_def.name, "truncation": self.truncation,
               "log": [dict(c) for c in self.run.log], "step": self.run.position}
        if self.custom_shape is not None:
            out.update(shape=dict(self.custom_shape), seed=self.scenario_def.seed)
        return out

    def import_run(self, run: Any) -> None:
        from .kinds import _checked_run

        log, step = _checked_run(run, MAX_STEPS)
        if run.get("shape") is not None:
            if not isinstance(run["shape"], dict) or "shape" not in self.commands:
                raise CommandError("invalid", _("This run builds its own cluster; open it in the sandbox."),
                                   command="import")
            _spec, shape = validate_command(self.commands, {"type": "shape", **run["shape"]})
            seed = run.get("seed") if isinstance(run.get("seed"), int) and 0 <= run["seed"] < 2**16 else 0
            target: Any = shape_scenario(shape, self.topic, seed)
            choice = {"truncation": shape["truncation"]}
        else:
            shape = None
            _spec, choice = validate_command(self.commands, {"type": "load", "scenario": run.get("scenario"),
                                                         "truncation": run.get("truncation")})
            target = choice["scenario"]
        allowed = set(self.scenario.get("commands") or ())
        scenario_obj = get_scenario(target) if isinstance(target, str) else target
        script = [command_to_dict(parse_command(c)) for c in scenario_obj.commands()]
        for i, cmd in enumerate(log):
            if not isinstance(cmd, dict):
                raise CommandError("invalid", _("Step %(n)s of the run is not a command.") % {"n": i + 1},
                                   command="import")
            on_script = i < len(script) and cmd == script[i]
            if not on_script and cmd.get("cmd") not in allowed:
                raise CommandError("invalid", _("Step %(n)s: %(cmd)r is not a command of this lesson.") % {
                    "n": i + 1, "cmd": cmd.get("cmd")}, command="import")
        # Build the new run beside the current one, muted; keep the current one until the
        # new one has replayed, so a refused file leaves the learner's run untouched.
        keep = ("run", "run_id", "scenario_def", "truncation", "script", "ends", "step_seqs", "_subscribed", "events",
                "custom_shape")
        saved = {name: getattr(self, name) for name in keep}
        self.run = None
        self._muted = True
        try:
            self.custom_shape = shape
            self._start(target, choice["truncation"])
            self.run.queue(log)          # the engine parses every command here
            self.ends = self._ends_of_log()
            while self.run.position < step:
                self.step()              # ... and checks each against the cluster as it runs
        except Exception:
            self._close_run()
            for name, value in saved.items():
                setattr(self, name, value)
            raise
        finally:
            self._muted = False
        new_run, new_id = self.run, self.run_id
        self.run, self.run_id = saved["run"], saved["run_id"]
        self._close_run()
        self.run, self.run_id = new_run, new_id
        self._subscribed = self.events = new_run.cluster.events   # subscribed once, in _start
        self.tracker.own = any(not self._on_script(i + 1) for i in range(len(self.run.log)))
        for env in list(self.run.cluster.events.envelopes):
            self._emit(env)
        self._moved(0, "load")

    # ---- state ---------------------------------------------------------------------
    def _on_script(self, upto: int) -> bool:
        """Whether the first ``upto`` commands of the run are the script's."""
        return upto <= len(self.script) and self.run.log[:upto] == self.script[:upto]

    def _step_on_script(self, n: int) -> bool:
        """Whether step ``n`` is the lesson's own: the script's commands, ending where a
        script step ends (a learner's produce that happens to match the script is a step of
        its own, not the lesson's produce-and-advance)."""
        if not 1 <= n <= len(self.ends):
            return False
        end = self.ends[n - 1]
        return self._on_script(end) and end in script_ends(self.script)

    def prediction_of(self, n: int) -> tuple[str, Any] | None:
        """A prediction is keyed like a note: ``<scenario>:<step>[:<rule>]``, on script only."""
        if not self._step_on_script(n):
            return None
        name, preds = self.scenario_def.name, self.lesson.predictions
        p = preds.get(f"{name}:{n}:{self.truncation}") or preds.get(f"{name}:{n}")
        return None if p is None else (f"{name}:{n}:{self.truncation}", p)

    def run_state(self) -> dict[str, Any]:
        run = self.run
        steps, start = [], 0
        for i, end in enumerate(self.ends):
            scripted = self._step_on_script(i + 1)
            steps.append({"n": i + 1, "label": "; ".join(narration.command_label(c, self.lang)
                                                          for c in run.log[start:end]),
                          "say": self._note(i + 1) if scripted else "",
                          "scripted": scripted})
            start = end
        return {"step": self.position, "total": self.total_steps, "steps": steps,
                "on_script": self._on_script(len(run.log)) and len(run.log) == len(self.script),
                "step_seqs": list(self.step_seqs), "last_seq": run.cluster.events.seq,
                "happened": narration.summarize(self.step_events(), self.lang) if run.position else []}

    def _note(self, n: int) -> str:
        """What step ``n`` of the scenario shows: the lesson's note, else the note of the
        course lesson that teaches this scenario (the sandbox plays the lessons' scenarios
        and says the same), in the page's language."""
        name, rule = self.scenario_def.name, self.truncation
        for notes in (self.lesson.notes, _course_notes(name, self.lang)):
            say = notes.get(f"{name}:{n}:{rule}") or notes.get(f"{name}:{n}")
            if say:
                return say
        return ""

    def step_events(self) -> list[dict[str, Any]]:
        pos = self.position
        if pos == 0 or len(self.step_seqs) <= pos:
            return []
        lo, hi = self.step_seqs[pos - 1], self.step_seqs[pos]
        return [env.to_dict() for env in self.run.cluster.events.between(lo, hi)]

    def kind_state(self) -> dict[str, Any]:
        run = self.run
        cluster = run.cluster
        summary = build_summary(run)
        cstate = cluster.state()
        count = len(cstate["topics"].get(self.topic, {}).get("partitions", ()))
        if self.partition >= max(count, 1):
            self.partition = 0     # a run with fewer partitions than the one shown before
        topic, pnum = self.topic, self.partition
        part = next((p for p in summary["partitions"] if p["topic"] == topic and p["partition"] == pnum), None)
        pmeta = cstate["topics"][topic]["partitions"][pnum] if part is not None else None
        controller = cstate["controller"]
        # Under KRaft a broker leads once it has applied the record that says so (lesson 17): the
        # crown follows the broker's own replica, not the controller's decision it has not fetched.
        kraft = bool(getattr(cluster.config, "kraft", False))
        brokers = []
        for i in range(len(cluster.brokers)):
            bs = cstate["brokers"][str(i)]
            reg = controller["brokers"].get(str(i), {})
            brokers.append({"id": i, "alive": bs["alive"], "incarnation": bs["incarnation"],
                            "fenced": bool(reg.get("fenced")), "controller": controller["active"] == i,
                            "replica": pmeta is not None and i in pmeta["replicas"],
                            "leader": pmeta is not None and (_leads_itself(part, i) if kraft else pmeta["leader"] == i)})
        at_end = run.position == len(run.log)
        expected = self.scenario_def.expected.get(self.truncation)
        return {
            "clock_ms": cluster.now_ms(),
            "run_id": self.run_id,
            "scenario": {"name": self.scenario_def.name, "title": self.scenario_def.title},
            "truncation": self.truncation,
            "topic": topic,
            "partition_ids": list(range(count)),     # the diagrams show "partition"; a switcher picks it
            "controller": {"active": controller["active"], "epoch": controller["controller_epoch"]},
            "brokers": brokers,
            "links": cstate["network"]["faults"],
            "partition": None if part is None else {
                "topic": topic, "partition": pnum, "replicas": list(pmeta["replicas"]),
                "leader": part["leader"], "leader_epoch": part["leader_epoch"], "isr": part["isr"],
                "high_watermark": part["high_watermark"], "diverged": part["diverged"]},
            "lanes": [] if part is None else _lanes(part, pmeta, {b["id"] for b in brokers if b["alive"]}),
            "consumer": consumer_view(cluster.events, topic, pnum) if part is not None else None,
            "acknowledged": [] if part is None else part["acknowledged"],
            "verdict": _verdict(part, summary["findings"], self.lang),
            "expected_note": expected.note if expected is not None and at_end and self._on_script(len(run.log))
            and self.lang == "en" else None,
            **self._extra_views(cluster, part),
        }

    def _extra_views(self, cluster: Any, part: dict | None) -> dict[str, Any]:
        """Views only some lessons draw (replication_views.py), computed when a diagram asks."""
        diagrams = set(self.lesson.diagrams)
        out: dict[str, Any] = {}
        if "hw-calc" in diagrams:
            out["hw_view"] = hw_view(cluster, self.topic, self.partition)
        if "replication-chart" in diagrams:
            out["series"] = offset_series(cluster.events, self.topic, self.partition)
        if "consumer-group" in diagrams or "lag-chart" in diagrams:
            view = group_view(cluster, self.topic, self.scenario.get("group"))
            out["group"] = view
            out["protocol"] = protocol_steps(cluster.events, self.lang)
            if "lag-chart" in diagrams:
                out["lag_series"] = lag_series(cluster.events, self.topic)
                out["deliveries"] = deliveries(cluster.events, self.topic, view["group"] if view else None)
        if "metadata-log" in diagrams or getattr(cluster.config, "kraft", False):
            out["quorum"] = quorum_view(cluster)     # lesson 17: the controller quorum and its log
        if "produce-results" in diagrams:
            out["produce"] = produce_table(cluster, part["acknowledged"] if part else [], self.topic, self.partition)
        return out

    def close(self) -> None:
        self._close_run()


def _course_notes(scenario: str, lang: str) -> dict[str, str]:
    """The notes of the first course lesson whose scenarios include ``scenario``."""
    from kafkaviz.lessons.catalogue import LESSONS

    for lesson in LESSONS:
        content = lesson.content(lang)
        if content is not None and scenario in (content.scenario.get("choices") or ()):
            return content.notes
    return {}


def _leads_itself(part: dict | None, broker: int) -> bool:
    return part is not None and any(r["broker"] == broker and r["alive"] and r.get("role") == "leader"
                                    for r in part["replicas"])


def _verdict(part: dict | None, findings: list[dict], lang: str) -> dict[str, Any]:
    """The one judgement of the diagram's partition, right now: which acknowledged
    records a reader can no longer get, whether replicas diverged, and whether there is
    a leader to read from at all. The page words it; the facts are decided here."""
    if part is None or not part["acknowledged"]:
        kind = "none_acked"
    elif part["leader"] is None or not any(r["broker"] == part["leader"] and r["alive"] for r in part["replicas"]):
        kind = "no_leader"      # no leader, or the one the metadata names is down: nothing can be read
    else:
        kind = "lost" if any(a["lost"] for a in part["acknowledged"]) else "ok"
    return {"kind": kind,
            "lost": [] if part is None else [a["value"] for a in part["acknowledged"] if a["lost"]],
            "diverged": bool(part and part["diverged"]),
            "findings": [narration.finding_text(f, lang) for f in findings]}


def _lanes(part: dict[str, Any], pmeta: dict[str, Any], up: set[int]) -> list[dict[str, Any]]:
    """One lane per assigned replica: its log as the engine's files hold it. A replica the
    summary shows without a log is either on a broker that is down or on one that is up
    but has not yet learned the partition from the controller (the step that creates the
    topic): ``pending`` tells the two apart, so a live broker is never drawn as down."""
    replica_states = pmeta["replica_states"]
    acked = {(a["offset"], a["digest"]) for a in part["acknowledged"]}
    lanes = []
    for r in part["replicas"]:
        b = r["broker"]
        lane: dict[str, Any] = {"broker": b, "alive": r["alive"]}
        if not r["alive"] and b in up:
            lane["pending"] = True
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
