"""The ``replication`` sandbox kind: a replicated cluster playing a named scenario
(``engine/cluster/scenarios.py``) step by step, with rewind.

The kind owns one :class:`engine.cluster.run.Run` (seed + config + command log +
checkpoints at its step ends) and steps it as every kind does (``kinds.py``). The
scenario's commands are the run's *future*; a lesson step is one command, or a few when a
command shows nothing until the clock moves (see ``script_ends``): step = ``Run.redo()``
up to the step's last command, back/seek = ``Run.seek(k)`` (the checkpoint of that step
is restored, engine state and files), a learner's own command = ``Run.apply()`` (added at
the current step as a step of its own; the rest of the scenario is dropped). Export and
import are every kind's (``kinds.py``): this kind adds only which world a run plays
(``world_spec``/``world_of``: a scenario and truncation rule, or the learner's shape) and
reads the format it exported before (``upgrade_run``).

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
* ``configurable`` -- config names the engine's ``set_config`` may change from the page.
"""
from __future__ import annotations

from itertools import accumulate
from pathlib import Path
from typing import Any, ClassVar

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from engine import narration
from engine.cluster.commands import command_to_dict, parse_command
from engine.cluster.run import Run, build_summary, make_config
from engine.cluster.scenarios import Scenario, Step, get_scenario

from wire.session import FIRST_NODE_ID
from wire.traffic import Traffic, TrafficError

from . import client_listener
from .client_listener import ClientPort
from .group_views import deliveries, group_view, lag_series, protocol_steps
from .kinds import CHECKPOINTS_BY_HAND, MAX_STEPS, WEB_CAPS, SandboxKind, _checked_run, cluster_spec, command
from .quorum_view import quorum_view
from .replication_views import consumer_view, hw_view, offset_series, produce_table
from .validation import CommandError, CommandSpec, Field, validate_command

__all__ = ["ReplicationSandbox", "WEB_CAPS"]

# Index files are preallocated sparse, as Kafka does; at Kafka's 10 MiB each, four of them
# made a run look like 40 MiB on disk. One block each keeps ls, du and quotas in step.
SANDBOX_LOG_CONFIG = {"segment.index.bytes": 4096}

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


def scenario_steps(scenario: Scenario) -> list[tuple[str, list[dict[str, Any]]]]:
    """The lesson steps of ``scenario``: (``<name>:<n>``, its commands as the engine writes them)."""
    script = [command_to_dict(parse_command(c)) for c in scenario.commands()]
    starts = [0] + script_ends(script)
    return [(f"{scenario.name}:{n}", script[a:b]) for n, (a, b) in enumerate(zip(starts, starts[1:]), 1)]


class ReplicationSandbox(SandboxKind):
    """A cluster running one scenario step by step, with rewind and free play."""

    name: ClassVar[str] = "replication"
    command_defaults: ClassVar[dict[str, Any]] = {"topic": "t", "partition": 0}
    run_fields = SandboxKind.run_fields + ("scenario_def", "truncation", "custom_shape")
    # The runtime's (runtime.py ``_build``): the sandbox's lock and a thread-safe request to
    # publish frames, for what a client of the listener makes the engine do between commands.
    lock: Any = None
    flush_hook: Any = None

    def begin(self) -> None:
        sc = self.scenario
        self.topic, self.partition = sc.get("topic", "t"), sc.get("partition", 0)
        self.custom_shape: dict[str, Any] | None = None     # the learner's own cluster shape, when they built one
        # "Connect your own client" (client_listener.py), when the lesson file offers it
        self.client_port_: ClientPort | None = None
        self._served_run = 0      # run_id of the last run a client listener served (its checkpoints are off)
        self.enter((get_scenario(sc["choices"][0]), (sc.get("truncations") or ["epoch"])[0], None))
        super().begin()

    @classmethod
    def command_specs(cls, scenario: dict) -> dict[str, CommandSpec]:
        specs = super().command_specs(scenario)
        if scenario.get("configurable"):
            # The engine's set_config, at cluster or broker scope, of the settings the lesson names.
            specs["set_config"] = cluster_spec("set_config", {"scope": "cluster"}, {
                "scope": {"choices": ("cluster", "broker")},
                "changes": {"choices": tuple(scenario["configurable"])},
                "target": {"min": 0, "max": WEB_CAPS["broker"]}})
        if not scenario.get("shape"):
            specs.pop("shape", None)
        if not scenario.get("client_listener"):
            specs.pop("client_port", None)
        return specs

    # ---- the world a run builds ------------------------------------------------------
    def enter(self, world: tuple[Scenario, str, dict | None]) -> None:
        """The next run plays ``world``: (scenario, truncation rule, the learner's shape or None)."""
        self.scenario_def, self.truncation, self.custom_shape = world

    def script(self) -> list[tuple[str | None, list[dict]]]:
        """The scenario's commands grouped into lesson steps (``script_ends``), ids
        ``<scenario>:<n>``: the run's future."""
        return scenario_steps(self.scenario_def)

    def world_spec(self) -> dict[str, Any]:
        if self.custom_shape is not None:
            return {"shape": dict(self.custom_shape), "seed": self.scenario_def.seed}
        return {"scenario": self.scenario_def.name, "truncation": self.truncation}

    def world_of(self, spec: Any) -> tuple[Scenario, str, dict | None]:
        """The world an export names: a scenario of this lesson under one of its truncation
        rules, or (where the lesson offers it) a cluster the learner shaped, checked by the
        same forms as ``load`` and ``shape``."""
        if not isinstance(spec, dict):
            raise CommandError("invalid", _("This run does not say which cluster it plays (its \"world\")."),
                               command="import")
        if spec.get("shape") is not None:
            if not isinstance(spec["shape"], dict) or "shape" not in self.commands:
                raise CommandError("invalid", _("This run builds its own cluster; open it in the sandbox."),
                                   command="import")
            _spec, shape = validate_command(self.commands, {"cmd": "shape", **spec["shape"]})
            seed = spec.get("seed")
            seed = seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**16 else 0
            return shape_scenario(shape, self.topic, seed), shape["truncation"], shape
        _spec, choice = validate_command(self.commands, {"cmd": "load", "scenario": spec.get("scenario"),
                                                         "truncation": spec.get("truncation")})
        return get_scenario(choice["scenario"]), choice["truncation"], None

    def step_commands(self, n: int, do: list, script_do: list[dict] | None) -> tuple[list[dict], bool]:
        """A step of an imported run: the scenario's own step as it is, else commands the
        learner could send here; the engine parses each (and checks it as it runs)."""
        if not all(isinstance(c, dict) for c in do):
            raise CommandError("invalid", _("Step %(n)s of the run is not a command.") % {"n": n}, command="import")
        if script_do is not None and [c.get("cmd") for c in do] == [c["cmd"] for c in script_do] and \
                [command_to_dict(parse_command(c)) for c in do] == script_do:
            return script_do, True
        for c in do:
            spec = self.commands.get(c.get("cmd"))
            if spec is None or "engine" not in spec.extra:
                raise CommandError("invalid", _("Step %(n)s: %(cmd)r is not a command of this lesson.") % {
                    "n": n, "cmd": str(c.get("cmd"))[:40]}, command="import")
        return [command_to_dict(parse_command(c)) for c in do], False

    def upgrade_run(self, run: Any) -> Any:
        """A run exported before this kind spoke the common step format -- ``{"scenario",
        "truncation", "log": [command, ...], "step", "commands"}``, or ``"shape"`` and ``"seed"``
        for a cluster the learner built -- in today's: the scenario's steps as long as the
        log follows them, then one step per command. ``step`` counted lesson steps when
        ``commands`` is there, commands before that."""
        if not isinstance(run, dict) or "world" in run or not ("scenario" in run or "shape" in run):
            return run
        log, step = _checked_run(run, MAX_STEPS)
        world = {"shape": run["shape"], "seed": run.get("seed")} if run.get("shape") is not None else \
            {"scenario": run.get("scenario"), "truncation": run.get("truncation")}
        steps, done = [], 0
        for sid, do in scenario_steps(self.world_of(world)[0]):
            if log[done:done + len(do)] != do:
                break
            steps.append({"id": sid, "do": do, "scripted": True})
            done += len(do)
        steps += [{"id": None, "do": [c], "scripted": False} for c in log[done:]]
        if not (isinstance(run.get("commands"), int) and not isinstance(run.get("commands"), bool)) and step:
            ends = list(accumulate(len(e["do"]) for e in steps))
            step = next((k for k, end in enumerate(ends, 1) if end >= step), len(ends) + 1)
        clients = {"clients": run["clients"]} if "clients" in run else {}     # a real client's traffic
        return {"world": world, "log": steps, "step": step, **clients}

    def export_run(self) -> dict[str, Any]:
        out = super().export_run()
        clients = self.run.outside.export()
        if clients is not None:
            out["clients"] = clients        # what real clients did, replayed by an import
        return out

    def imported(self, run: dict[str, Any]) -> None:
        clients = run.get("clients")
        if clients is None:
            return
        if not self.scenario.get("client_listener"):
            raise CommandError("invalid", _("This run holds a real client's requests; open it in the sandbox."),
                               command="import")
        try:
            self.run.outside.load(clients, len(self.run.log), len(self.run.cluster.brokers))
        except TrafficError as exc:
            raise CommandError("invalid", _("The run's client requests cannot be replayed: %(why)s.")
                               % {"why": exc}, command="import") from None
        self.run.outside.after(self.run)     # a client before the first command

    def make_run(self, run_dir: Path) -> Run:
        sc = self.scenario_def
        run = Run(sc.seed, make_config({**SANDBOX_LOG_CONFIG, **sc.config}, truncation=self.truncation),
                  str(run_dir), snapshot_every=CHECKPOINTS_BY_HAND, max_snapshots=MAX_STEPS + 2, os_fsync=False)
        # What a real client does to the cluster is the run's too (wire/traffic.py): Back,
        # export, a share link and an import replay it.
        # (The replay's listener writes no files; its directory is the live one's, outside the run's.)
        run.outside = Traffic(client_listener.replay_server(self.data_dir / "wire"),
                              live=lambda: self._client_attached(run))
        return run

    def _client_attached(self, run: Run) -> bool:
        port = self.client_port_
        return port is not None and port.attached > 0 and port.cluster is run.world

    def _on_client_record(self, entry: dict, endpoints: dict) -> None:
        """An entry of the live listener (its thread, the sandbox's lock held)."""
        run = self.run
        if run is not None and self.client_port_ is not None and self.client_port_.cluster is run.world:
            run.outside.record(run, entry, endpoints)

    # ---- commands ------------------------------------------------------------------
    @command(_load_fields, help="Start a scenario from the beginning under a truncation rule.")
    def load(self, scenario: str, truncation: str) -> str:
        self._no_client("load")
        self.enter((get_scenario(scenario), truncation, None))
        self.new_run(self.script())
        self.tracker.own = False
        self._moved(0, "load")
        return _("Loaded %(scenario)s (%(truncation)s truncation): press Step.") % {"scenario": scenario,
                                                                                "truncation": truncation}

    @command(_shape_fields, help="Build your own cluster: brokers, partitions, replication factor, min ISR.")
    def shape(self, **values: Any) -> str:
        self._no_client("shape")
        # Beside the current run: the engine creates the topic, and refuses (say) RF > brokers,
        # on a run built beside the current one, which stays if the engine says no.
        world = (shape_scenario(values, self.topic, self.seed & 0xFFFF), values["truncation"], dict(values))
        self.replace_run(lambda: (self.enter(world), self.new_run(self.script())),
                         lambda: self.position < self.total_steps)
        return _("Your cluster: %(title)s.") % {"title": self.scenario_def.title}

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

    @command(Field("on", "bool", gettext_lazy("Listen"), default=True),
             help="Start (or stop) a Kafka listener of this sandbox's cluster for your own client.")
    def client_port(self, on: bool = True) -> str:
        if not on:
            if self.client_port_ is not None:
                self.client_port_.close()
            return _("The client listener is stopped.")
        port = self.client_port_
        if port is None:
            port = self.client_port_ = ClientPort(self.data_dir, self.lock, self.flush_hook)
            port.on_record = self._on_client_record
            port.first_node = lambda: self.run.outside.next_node()
        bootstrap = port.open(self.run.cluster)
        # What the client does is recorded with the run (``Traffic``): a cluster holding it
        # takes no checkpoints, and Back is refused while a client is attached (its
        # connection lives in the cluster being served).
        self._served_run = self.run_id
        if self.touch_hook is not None:
            self.touch_hook()
        return _("Listening: point your client at %(bootstrap)s.") % {"bootstrap": bootstrap}

    def _partition_count(self) -> int:
        return len(self.run.cluster.state()["topics"].get(self.topic, {}).get("partitions", ())) or 1

    def _no_client(self, command: str) -> None:
        port = self.client_port_
        if port is not None and port.attached:
            raise CommandError("busy", _("A client is connected: the run cannot go back or start over until "
                                         "it disconnects."),
                               command=command)

    def back(self) -> str:
        self._no_client("back")
        return super().back()

    def seek(self, step: int) -> str:
        self._no_client("seek")
        return super().seek(step)

    def command_done(self, failure: BaseException | None) -> None:
        # A new run's (or a restored checkpoint's) cluster is the one served. After a failed
        # command the command's own error is the one the learner sees: a listener that found
        # no free ports for the new cluster is closed, and the page shows it closed.
        try:
            self._follow()
        except CommandError:
            if failure is None:
                raise

    def _follow(self) -> None:
        port = self.client_port_
        if port is not None and port.is_open and self.run is not None:
            port.follow(self.run.cluster)
            self._served_run = self.run_id

    def own(self, cmd: dict[str, Any]) -> str:
        """The learner's own engine command (the engine validates it against the cluster)."""
        cmd = {k: v for k, v in cmd.items() if v is not None}
        if cmd["cmd"] == "consumer_join":
            cmd = self._join_like_the_group(cmd)
        return super().own(cmd)

    def check_quota(self, cmd: dict[str, Any]) -> None:
        """A cluster's commands are bounded by the forms' caps (WEB_CAPS) and MAX_STEPS."""

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

    # ---- state ---------------------------------------------------------------------
    def prediction_of(self, n: int) -> tuple[str, Any] | None:
        """A prediction is keyed like a note: ``<scenario>:<step>[:<rule>]``, on script only."""
        if not self._scripted(n):
            return None
        name, preds = self.scenario_def.name, self.lesson.predictions
        p = preds.get(f"{name}:{n}:{self.truncation}") or preds.get(f"{name}:{n}")
        return None if p is None else (f"{name}:{n}:{self.truncation}", p)

    def step_say(self, n: int) -> str:
        """What step ``n`` of the scenario shows: the lesson's note, else the note of the
        course lesson that teaches this scenario (the sandbox plays the lessons' scenarios
        and says the same), in the page's language."""
        name, rule = self.scenario_def.name, self.truncation
        for notes in (self.lesson.notes, _course_notes(name, self.lang)):
            say = notes.get(f"{name}:{n}:{rule}") or notes.get(f"{name}:{n}")
            if say:
                return say
        return ""

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
            # the links the picture draws (a client connection's mirror of -1's is not one)
            "links": [f for f in cstate["network"]["faults"] if f["src"] < FIRST_NODE_ID and f["dst"] < FIRST_NODE_ID],
            "partition": None if part is None else {
                "topic": topic, "partition": pnum, "replicas": list(pmeta["replicas"]),
                "leader": part["leader"], "leader_epoch": part["leader_epoch"], "isr": part["isr"],
                "high_watermark": part["high_watermark"], "diverged": part["diverged"]},
            "lanes": [] if part is None else _lanes(part, pmeta, {b["id"] for b in brokers if b["alive"]}),
            "consumer": consumer_view(cluster.events, topic, pnum) if part is not None else None,
            "acknowledged": [] if part is None else part["acknowledged"],
            "verdict": _verdict(part, summary["findings"], self.lang),
            "expected_note": expected.note if expected is not None and at_end and self.own_at is None
            and self.lang == "en" else None,
            **self._extra_views(cluster, part),
            **({"client_port": self.client_port_.state() if self.client_port_ is not None
                else {"available": client_listener.enabled(), "open": False}}
               if self.scenario.get("client_listener") else {}),
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

    # ---- the client listener and the run --------------------------------------------
    # A new run (load, shape, import) closes the old run only (``close_run``): the client
    # listener stays open and follows the new cluster (``_follow``); ``close`` ends both.
    def settle(self) -> None:
        # A run a client listener serves takes no checkpoints from then on (a client may be
        # mid-request at any moment); a cluster holding client traffic takes none either
        # (``Run.checkpoint``). Back restores one from before and replays commands and traffic.
        if self._served_run != self.run_id:
            super().settle()

    def goto(self, step: int) -> None:
        if self._served_run == self.run_id or self.run.outside.entries:
            self.run.disk_changed()      # the client wrote files the run's checkpoints do not know of
        super().goto(step)

    def close(self) -> None:
        if self.client_port_ is not None:
            self.client_port_.close()
        super().close()


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
