"""The ``client-session`` sandbox kind (lesson 16): a real client's session, replayed.

What lesson 16 shows is what confluent-kafka (librdkafka) really said to the engine:
``wire/script.py`` runs the client against a loopback listener, acts as the operator
between phases (a broker crash, a preferred-leader election, a cut link) and records
every connection, request and operator command with its virtual arrival time, plus a
named *mark* at the end of each phase. The recording the lesson plays is committed
(``kafkaviz/lessons/recordings/client-session.json``, made by ``python -m wire.script``)
so that every process -- a room's failover, a shared run opened elsewhere -- replays the
same session, event for event; ``tests/web/test_client_session.py`` records a fresh one
with the real client and checks it still shows what the lesson says.

A guided step is ``{cmd = "replay_to", mark = "<phase>"}``: the recorded entries are
applied to a fresh cluster (``wire.replay.Replayer``) up to that mark. Rewind is the base
class's replay (a fresh replayer, then the first k steps), so Back and Step rebuild from
the record and never run the client again.

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


def _phases() -> tuple[str, ...]:
    return tuple(load_recording()["phases"])


class _Held:
    """What GuidedClusterSandbox reads as ``self.run``: the cluster."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster


class ClientSessionSandbox(GuidedClusterSandbox):
    """A recorded real-client session, stepped mark by mark; rewind by replay."""

    name: ClassVar[str] = "client-session"

    # ---- the record ------------------------------------------------------------------
    def open(self) -> None:
        rec = load_recording(self.scenario.get("recording") and str(RECORDING.parent / self.scenario["recording"])
                             or str(RECORDING))
        wire_dir = self.data_dir / "wire"
        shutil.rmtree(wire_dir, ignore_errors=True)
        self.entries = rec["entries"]
        self.cursor = 0
        self.replayer = Replayer(settings_of(self.entries), wire_dir)
        cluster = self.replayer.server.cluster
        self.run = _Held(cluster)         # type: ignore[assignment]
        self.reads: dict[str, dict[str, Any]] = {}
        self.records_sent = 0
        self.retry_writes: dict[tuple, dict[int, int]] = {}
        self._retries: dict[int, int] = {}
        self.events = cluster.events
        self.events.subscribe(self._emit)
        self.events.subscribe(self._track_retries)
        self._advance("start")

    def _advance(self, mark: str) -> None:
        """Apply the record up to (and including) the mark named ``mark``."""
        names = [e.get("name") for e in self.entries[self.cursor:] if e["kind"] == "mark"]
        if mark not in names:
            raise CommandError("invalid", _("The recorded session is already past %(mark)s; step back first.")
                               % {"mark": mark}, "mark", "replay_to")
        while self.cursor < len(self.entries):
            e = self.entries[self.cursor]
            self.cursor += 1
            self.replayer.apply(e)
            if e["kind"] == "mark" and e["name"] == mark:
                return

    def close(self) -> None:
        replayer = getattr(self, "replayer", None)
        if replayer is not None:
            try:
                replayer.server.cluster.disk.close_all()
            except Exception:  # noqa: BLE001 - the run is being discarded
                pass
            self.replayer = None

    @command(Field("mark", "str", gettext_lazy("Up to"), required=True, choices=tuple(
        ("bootstrap", "produce", "leader-kill", "leader-move", "lost-response", "group", "leave",
         "session-timeout", "max-poll"))),
        help="Replay the recorded client session up to the end of one of its phases.")
    def replay_to(self, mark: str) -> str:
        self._advance(mark)
        return _("The client's session, replayed up to %(mark)s.") % {"mark": mark}

    # ---- state ---------------------------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        out = super().kind_state()
        cluster = self.run.cluster
        out["connections"] = [{"node": n, "broker": s.broker_id} for n, s in sorted(self.replayer.sessions.items())]
        out["requests"] = self._requests()
        out["group"] = self._group(group_view(cluster, self.topic, self.scenario.get("group")))
        out["protocol"] = protocol_steps(cluster.events, self.lang)
        return out

    def _group(self, g: dict[str, Any] | None) -> dict[str, Any] | None:
        """The group as the coordinator has it, its members named by the client id they
        sent (``member-a-1015``: client id, connection) rather than the listener's
        ``wire-1015``, and each connection's member in the words of what became of it:
        stable in the group and owning what it was assigned, closed after its LeaveGroup,
        dead after its session timed out."""
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
                gone = reasons[c["name"]]
                c.update(alive=gone == "leave_group", status="closed" if gone == "leave_group" else "dead",
                         member_id=None, owned=[])
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
