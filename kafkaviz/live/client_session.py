"""The ``client-session`` sandbox kind (lesson 16): a real client's session, replayed.

What lesson 16 shows is what confluent-kafka (librdkafka) really said to the engine:
``wire/script.py`` runs the client against a loopback listener, acts as the operator
between phases (a broker crash, a preferred-leader election, a cut link) and records
every connection, request and operator command with its virtual arrival time, plus a
named *mark* at the end of each phase. The recording the lesson plays is committed
(``kafkaviz/lessons/recordings/client-session.json``, made by ``python -m wire.script``)
so that every process -- a room's failover, a shared run opened elsewhere -- replays the
same session, event for event; ``tests/wire/test_wire_script.py`` records a fresh one
with the real client and checks it still shows what the lesson says.

A guided step is ``{cmd = "replay_to", mark = "<phase>"}``: the recorded entries are
applied to a fresh cluster (``wire.replay.Replayer``) up to that mark. Back rebuilds from
the record (a fresh replayer up to the step's mark), so Back and Step never run the client
again. The marks are not engine commands, so the kind has its own small step model over
the base's bookkeeping (``begin``/``step``/``goto``, export and import).

State: the guided-cluster kind's (every replica's log of the lesson's topic, HW, leaders,
ISR), plus the client's connections open now, the requests of the current step paired with
their answers (API, version, correlation id, error; an answer the network lost stays
"no answer"), and the consumer group (``group_views.group_view``) for the group steps.
"""
from __future__ import annotations

import base64
import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from wire.replay import Replayer, settings_of

from .group_views import group_view, protocol_steps
from .guided_cluster import GuidedClusterSandbox
from .kinds import command
from .validation import CommandError, Field

__all__ = ["ClientSessionSandbox", "RECORDING", "load_recording"]

RECORDING = Path(__file__).resolve().parent.parent / "lessons" / "recordings" / "client-session.json"
MAX_REQUESTS = 80          # request rows a frame carries (the step's newest; the timeline has all)


@lru_cache(maxsize=4)
def load_recording(path: str = str(RECORDING)) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != "kafkaviz-client-session":
        raise ValueError(f"{path} is not a recorded client session")
    return data


class _Replay:
    """What the base kind (and guided-cluster's views) read as ``self.run``: the cluster a
    fresh :class:`Replayer` rebuilds from the record, and the marks replayed so far as
    its log (one ``replay_to`` per lesson step; ``position`` counts them)."""

    def __init__(self, entries: list[dict[str, Any]], wire_dir: Path) -> None:
        shutil.rmtree(wire_dir, ignore_errors=True)
        self.wire_dir = wire_dir
        self.entries = entries
        self.cursor = 0                       # entries applied
        self.replayer = Replayer(settings_of(entries), wire_dir)
        self.cluster = self.world = self.replayer.server.cluster
        self.events = self.cluster.events
        self.log: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []

    @property
    def position(self) -> int:
        return len(self.log)

    def advance(self, mark: str) -> None:
        """Apply the record up to (and including) the mark named ``mark``."""
        while self.cursor < len(self.entries):
            e = self.entries[self.cursor]
            self.cursor += 1
            self.replayer.apply(e)
            if e["kind"] == "mark" and e["name"] == mark:
                return
        raise CommandError("invalid", _("The recorded session has no mark %(mark)s.") % {"mark": mark},
                           "mark", "replay_to")

    def replay_to(self, mark: str) -> None:
        self.advance(mark)
        self.log.append({"cmd": "replay_to", "mark": mark})
        self.results.append({})

    def close(self) -> None:
        try:
            self.cluster.disk.close_all()
        except Exception:  # noqa: BLE001 - the run is being discarded
            pass
        shutil.rmtree(self.wire_dir, ignore_errors=True)


class ClientSessionSandbox(GuidedClusterSandbox):
    """A recorded real-client session, stepped mark by mark. Its steps are marks of the
    record, not engine commands, so it keeps its own small step model over the base's
    bookkeeping (``ends``, ``step_seqs``): Step replays the record on to the next mark,
    Back (``goto``) rebuilds a fresh replayer up to the step's mark, unheard."""

    name: ClassVar[str] = "client-session"

    # ---- the record and its steps ------------------------------------------------------
    def begin(self) -> None:
        rec = load_recording(self.scenario.get("recording") and str(RECORDING.parent / self.scenario["recording"])
                             or str(RECORDING))
        self.entries = rec["entries"]
        self.marks = []
        for s in self.lesson.steps:
            do = [dict(c) for c in s.do]
            if len(do) != 1 or do[0].get("cmd") != "replay_to" or do[0].get("mark") not in rec["phases"]:
                raise ValueError(f"step {s.id}: a client-session step is one replay_to of a recorded mark")
            self.marks.append(do[0]["mark"])
        self._fresh()

    def _fresh(self) -> None:
        """A new run: a fresh replayer at the record's "start" mark, the lesson's steps ahead."""
        self.close_run()
        self.run_id += 1
        # a directory per run: an import builds the new one beside the current (replace_run)
        self.run = _Replay(self.entries, self.data_dir / f"wire-{self.run_id}")     # type: ignore[assignment]
        self.run.advance("start")
        self.origin = 0
        self.script_ids = [s.id for s in self.lesson.steps]
        self.script_ends = self.ends = list(range(1, len(self.marks) + 1))
        self.own_at = None
        self.step_seqs = [self.run.events.seq]
        self._subscribed = None
        self._sync_events(forward_history=True)

    def step(self) -> str:
        before = self.position
        if before >= self.total_steps:
            raise CommandError("invalid", _("There is no next step: this run is at its end. Step back, or press "
                                            "Reset."), command="step")
        self.run.replay_to(self.marks[before])
        self._step_done(before, "step")
        return _("Step %(n)s of %(total)s done.") % {"n": self.position, "total": self.total_steps}

    def goto(self, step: int) -> None:
        """Back to the end of ``step``: the record replayed again by a fresh replayer, unheard
        (its events are the same, so the step boundaries ``step_seqs`` stay)."""
        seqs = self.step_seqs[:step + 1]
        self._muted = True
        try:
            self._fresh()
            for mark in self.marks[:step]:
                self.run.replay_to(mark)
        finally:
            self._muted = False
            self._hear()
        self.step_seqs = seqs

    def settle(self) -> None:
        """No checkpoints: Back replays the record."""

    def own(self, cmd: dict[str, Any]) -> str:
        raise CommandError("invalid", _("This lesson replays a recorded session; it takes no commands of your "
                                        "own."), command=cmd.get("cmd"))

    def close_run(self) -> None:
        run = self.__dict__.get("run")
        if run is not None:
            run.close()
            self.run = None

    # ---- export / import -------------------------------------------------------------
    def export_run(self) -> dict[str, Any]:
        return {"log": [{"id": sid, "do": [dict(c)], "scripted": True}
                        for sid, c in zip(self.script_ids, self.run.log)], "step": self.position}

    # Import is every kind's (``SandboxKind.import_run``): a run of this lesson is how far it
    # went, each step the lesson's own, and the new run is a fresh replayer (``_fresh``).
    def script(self) -> list[tuple[str | None, list[dict]]]:
        return [(s.id, [{"cmd": "replay_to", "mark": m}]) for s, m in zip(self.lesson.steps, self.marks)]

    def step_commands(self, n: int, do: list, script_do: list[dict] | None) -> tuple[list[dict], bool]:
        if do != script_do:
            raise CommandError("invalid", f"Step {n} of the run is not step {n} of this lesson.", command="import")
        return do, True

    def new_run(self, steps: list, own_at: int | None = None) -> None:
        self._fresh()

    @command(Field("mark", "str", gettext_lazy("Up to"), required=True, choices=tuple(
        ("bootstrap", "produce", "leader-kill", "leader-move", "lost-response", "group", "leave",
         "session-timeout", "max-poll"))),
        help="Replay the recorded client session up to the end of one of its phases.")
    def replay_to(self, mark: str) -> str:
        """Replay on to the end of the phase ``mark`` (a later step of the lesson)."""
        n = self.marks.index(mark) + 1 if mark in self.marks else 0
        if n <= self.position:
            raise CommandError("invalid", _("The recorded session is already past %(mark)s; step back first.")
                               % {"mark": mark}, "mark", "replay_to")
        return self.seek(n)

    # ---- state ---------------------------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        out = super().kind_state()
        cluster = self.run.cluster
        out["connections"] = [{"node": n, "broker": s.broker_id}
                              for n, s in sorted(self.run.replayer.sessions.items())]
        out["requests"] = self._requests()
        out["group"] = self._group(group_view(cluster, self.topic, self.scenario.get("group")))
        out["protocol"] = protocol_steps(cluster.events, self.lang)
        # The record's clock is the wall-clock time it was made at: the page counts from there.
        out["time_origin_ms"] = settings_of(self.entries)["start_ms"]
        return out

    def _group(self, g: dict[str, Any] | None) -> dict[str, Any] | None:
        """The group as the coordinator has it, its members named by the client id they
        sent (``member-a-1015``: client id, connection) rather than the listener's
        ``wire-1015``, and each connection's member in the words of what became of it:
        stable in the group and owning what it was assigned, left (its LeaveGroup sent, its
        connection open) or closed after its LeaveGroup, expired after its session timed out,
        disconnected (its connection closed, the coordinator not yet told)."""
        if g is None:
            return None
        reasons: dict[str, str] = {}
        for env in self.events.envelopes:
            ev = env.event
            if ev.kind == "member_removed":
                reasons[ev.member.rsplit("-", 1)[0]] = ev.reason
            elif ev.kind in ("join_group_completed",):
                for m in ev.members:
                    reasons.pop(m.rsplit("-", 1)[0], None)
        names = {c["name"]: self._client_name(c["name"]) for c in g["consumers"]}
        members = {m["client"]: m for m in g["members"]}
        for c in g["consumers"]:
            m = members.get(c["name"])
            if m is not None:
                c.update(alive=True, member_id=m["member"], owned=list(m["partitions"]), in_group=True,
                         status="stable" if g["state"] == "Stable" else "rebalancing")
            elif c["name"] in reasons:
                # A LeaveGroup with the connection still open is a member that left (lesson 16's
                # max.poll.interval.ms); with it closed, one that closed. Removed for silence, it
                # expired: the coordinator heard nothing for session.timeout.ms (a killed process
                # and a cut cable look the same to it), never "crashed".
                gone = reasons[c["name"]]
                connected = c["status"] != "disconnected"
                status = ("left" if connected else "closed") if gone == "leave_group" else "expired"
                c.update(alive=gone == "leave_group", status=status, member_id=None, owned=[])
            c["name"] = names[c["name"]]
        for m in g["members"]:
            m["client"] = names.get(m["client"], m["client"])
        for p in g["partitions"]:
            p["owner"] = names.get(p["owner"], p["owner"])
        return g

    def _client_name(self, name: str) -> str:
        """``wire-<node>`` -> ``<client id>-<node>``, the client id from the connection's
        first recorded request header."""
        if not name.startswith("wire-"):
            return name
        node = int(name.split("-")[1])
        if not hasattr(self, "_client_ids"):
            self._client_ids: dict[int, str] = {}
            for e in self.entries:
                if e["kind"] == "request" and e["node"] not in self._client_ids:
                    frame = base64.b64decode(e["frame"])
                    n = int.from_bytes(frame[8:10], "big", signed=True)
                    self._client_ids[e["node"]] = frame[10:10 + n].decode("utf-8", "replace") if n > 0 else ""
        cid = self._client_ids.get(node) or "client"
        return f"{cid}-{node}"

    def _requests(self) -> list[dict[str, Any]]:
        """The current step's client requests, each with its answer (or none yet)."""
        pos = self.position
        lo = self.step_seqs[min(max(pos - 1, 0), len(self.step_seqs) - 1)]
        rows: dict[tuple[int, int], dict[str, Any]] = {}
        order: list[tuple[int, int]] = []
        for env in self.events.between(lo, self.events.seq):
            ev = env.event
            if ev.kind == "client_request":
                key = (ev.node, ev.correlation_id)
                rows[key] = {"t": env.time_ms, "node": ev.node, "broker": ev.broker, "api": ev.api,
                             "version": ev.version, "correlation_id": ev.correlation_id, "error": None}
                order.append(key)
            elif ev.kind == "client_response":
                row = rows.get((ev.node, ev.correlation_id))
                if row is not None:
                    row["error"] = ev.error
        return [rows[k] for k in order][-MAX_REQUESTS:]
