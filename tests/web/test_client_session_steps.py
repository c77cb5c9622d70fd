"""Lesson 16's kind (kafkaviz/live/client_session.py) on the base kind's step model: its
steps are marks of a recorded session, not engine commands, so Step replays the record on
to the next mark and Back rebuilds a fresh replayer up to the step's mark. Each test fails
if Back stops rebuilding from the record, if the step boundaries drift, or if export and
import lose where the learner was."""
from __future__ import annotations

import pytest

from kafkaviz.lessons.catalogue import LESSONS
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.kinds import Limits, get_kind
from kafkaviz.live.validation import CommandError

from .test_lesson_digests import GOLDEN

SLUG = "what-your-client-says"


def make(tmp_path, name="box"):
    lesson = next(x for x in LESSONS if x.slug == SLUG).content()
    return get_kind(lesson.kind)(tmp_path / name, seed=1, limits=Limits(1000, 10**8), lesson=lesson)


def test_back_rebuilds_from_the_record_and_step_gives_the_same_events_again(tmp_path):
    kind = make(tmp_path)
    try:
        kind.seek(5)
        assert kind.events.digest()[:16] == GOLDEN[SLUG][4]
        requests_at_2 = None
        first_cluster = kind.run.cluster
        kind.seek(2)
        assert kind.position == 2
        assert kind.run.cluster is not first_cluster          # a fresh replayer, not the same cluster
        assert kind.events.digest()[:16] == GOLDEN[SLUG][1]
        requests_at_2 = kind.kind_state()["requests"]
        assert requests_at_2 and kind.step_events()
        kind.back()
        kind.step()
        assert kind.kind_state()["requests"] == requests_at_2   # the step's boundaries did not drift
        while kind.position < kind.total_steps:
            kind.step()
            assert kind.events.digest()[:16] == GOLDEN[SLUG][kind.position - 1]
        with pytest.raises(CommandError):
            kind.step()
    finally:
        kind.close()


def test_replay_to_goes_forward_to_a_mark_and_refuses_one_behind(tmp_path):
    kind = make(tmp_path)
    try:
        spec = kind.commands["replay_to"]
        run_spec(kind, spec, {"mark": "leader-kill"})
        assert kind.position == kind.marks.index("leader-kill") + 1
        with pytest.raises(CommandError):
            run_spec(kind, spec, {"mark": "produce"})
        assert kind.position == kind.marks.index("leader-kill") + 1
    finally:
        kind.close()


def test_export_and_import_keep_the_step_and_a_tampered_run_changes_nothing(tmp_path):
    kind, other = make(tmp_path), make(tmp_path, "other")
    try:
        kind.seek(4)
        data = kind.export_run()
        assert data["step"] == 4 and len(data["log"]) == 4
        other.import_run(data)
        assert other.position == 4
        assert other.events.digest() == kind.events.digest()
        bad = {"log": [dict(e) for e in data["log"]], "step": 4}
        bad["log"][1] = {**bad["log"][1], "do": [{"cmd": "replay_to", "mark": "max-poll"}]}
        with pytest.raises(CommandError):
            other.import_run(bad)
        assert other.position == 4 and other.events.digest() == kind.events.digest()
        other.step()
        assert other.events.digest()[:16] == GOLDEN[SLUG][4]
    finally:
        kind.close()
        other.close()


def test_each_member_that_is_gone_is_said_as_what_became_of_it(tmp_path):
    # The group box names each real client's member by what happened to it, never "crashed":
    # member-b closes and sends LeaveGroup (step 7); kcat's process is killed and the
    # coordinator removes it after session.timeout.ms (step 8); member-c stops polling and
    # leaves the group itself, its connection still open (step 9).
    kind = make(tmp_path)
    try:
        said = {}
        for n in (7, 8, 9):
            kind.seek(n)
            said[n] = {c["name"].rsplit("-", 1)[0]: (c["status"], c["alive"]) for c in kind.kind_state()["group"]["consumers"]}
        assert said[7]["member-b"] == ("closed", True)
        assert said[8]["member-k"] == ("expired", False)
        assert said[9]["member-c"] == ("left", True) and said[9]["member-a"] == ("stable", True)
        assert not any(status == "dead" for step in said.values() for status, _alive in step.values())
    finally:
        kind.close()


def test_the_page_counts_the_recorded_sessions_time_from_its_start(tmp_path):
    # The record's clock is wall-clock time (1.7e12 ms); the state names where it starts, so the
    # page's virtual clock and timeline read seconds into the session, not "1795702382.4 s".
    kind = make(tmp_path)
    try:
        kind.seek(kind.total_steps)
        st = kind.state()
        assert st["time_origin_ms"] > 10**12
        assert 0 < st["clock_ms"] - st["time_origin_ms"] < 120_000
        assert all(0 <= e["time_ms"] - st["time_origin_ms"] < 120_000 for e in kind.step_events())
    finally:
        kind.close()
