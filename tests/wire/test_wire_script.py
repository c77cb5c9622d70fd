"""wire/script.py records lesson 16's session with the real client (confluent-kafka, and
kcat for the killed member), and the record replayed mark by mark shows what the lesson
says each phase shows. The lesson plays a committed recording; this test proves that a
fresh one, made now with the real library, still tells the same story."""
from __future__ import annotations

import shutil
from collections import Counter

import pytest

from wire.replay import Replayer, settings_of
from wire.script import PHASES, record

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is a system package (make system-deps)")


def phase_events(rec: dict, tmp_path) -> dict[str, list[dict]]:
    rep = Replayer(settings_of(rec["entries"]), tmp_path / "replay")
    events = rep.server.cluster.events
    out, seq = {}, events.seq
    for e in rec["entries"]:
        rep.apply(e)
        if e["kind"] == "mark":
            out[e["name"]] = [env.to_dict() for env in events.between(seq, events.seq)]
            seq = events.seq
    return out


def test_a_fresh_recording_of_the_real_client_shows_every_phase(tmp_path):
    rec = record(tmp_path / "live")
    names = [e["name"] for e in rec["entries"] if e["kind"] == "mark"]
    assert names == ["start", *PHASES]
    ev = phase_events(rec, tmp_path)

    def errors(phase):
        return Counter((e["api"], e["error"]) for e in ev[phase] if e["kind"] == "client_response")

    def removed(phase):
        return [e["reason"] for e in ev[phase] if e["kind"] == "member_removed"]
    boot = [e for e in ev["bootstrap"] if e["kind"] == "client_request"]
    assert [e["api"] for e in boot[:2]] == ["ApiVersions", "Metadata"] and boot[0]["broker"] == 0
    produced = {e["broker"] for e in ev["produce"] if e["kind"] == "client_request" and e["api"] == "Produce"}
    assert len(produced) == 2                                # one batch to each partition's leader
    assert any(e["kind"] == "leader_elected" and e["rule"] == "clean" for e in ev["leader-kill"])
    assert errors("leader-move")[("Produce", "NOT_LEADER_OR_FOLLOWER")] >= 1
    dup = [e for e in ev["lost-response"] if e["kind"] == "produce_duplicate"]
    assert len(dup) == 1 and dup[0]["producer_id"] >= 0
    assert removed("leave") == ["leave_group"]
    assert removed("session-timeout") == ["session_timeout"]
    assert removed("max-poll") == ["leave_group"]


def test_the_in_memory_request_record_is_bounded_and_the_file_keeps_everything(tmp_path):
    import json

    from wire.server import Recorder
    rec = Recorder(tmp_path / "requests.jsonl", max_entries=3)
    for i in range(10):
        rec.add({"t": i, "kind": "request"})
    rec.close()
    assert [e["t"] for e in rec.entries] == [7, 8, 9] and rec.dropped == 7
    assert [json.loads(line)["t"] for line in (tmp_path / "requests.jsonl").read_text().splitlines()] == list(range(10))
