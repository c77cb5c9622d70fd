"""Predict, then watch: a lesson step's "what will happen?" is data in the lesson file,
checked when the lesson loads; which choice happened is decided on the server by each
choice's check on that step's own events and the state after it -- forwards, after Back
and Step again, and through the WebSocket as the page gets it."""
from __future__ import annotations

import dataclasses

import pytest
from django.conf import settings as django_settings
from django.test import Client

import engine.cluster.run  # noqa: F401  (registers every cluster event kind)
from engine.events import EVENT_TYPES
from kafkaviz.asgi import application
from kafkaviz.lessons import content as content_mod
from kafkaviz.lessons.content import ContentError, content_slugs, load_content
from kafkaviz.lessons.checks import CheckError, evaluate, validate_check
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.guided_cluster import GuidedClusterSandbox
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import ReplicationSandbox

from .conftest import ORIGIN
from .framing import TrackedCommunicator
from .test_lesson10 import command

# (lesson, scenario, truncation, the step asked before, the choice the engine makes happen)
REPLICATION_CASES = [
    ("leader-epoch", "kip101-data-loss", "hw", 9, 0),         # B cuts m2 and leads without it
    ("leader-epoch", "kip101-data-loss", "epoch", 9, 1),      # same step, the epoch rule keeps m2
    ("leader-epoch", "kip101-divergence", "hw", 12, 0),       # A keeps m2 below its HW: replicas diverge
    ("leader-epoch", "kip101-divergence", "epoch", 12, 1),    # A asks where epoch 0 ends and cuts m2
    ("isr-and-acks", "isr-shrink-acks-all", "epoch", 6, 0),  # ISR {0, 1} >= min.insync 2: acked
    ("isr-and-acks", "isr-shrink-acks-all", "epoch", 9, 1),  # ISR {0} < 2: NOT_ENOUGH_REPLICAS
    ("leader-election", "unclean-election-loss", "epoch", 8, 0),   # unclean: m2, m3 lost
]
GUIDED_CASES = [("plain-retry", 0), ("safe-retry", 1)]    # lesson 14: a duplicate, then none


# ---- lesson files --------------------------------------------------------------------------

def _load_bad(tmp_path, monkeypatch, body: str, zh: str | None = None):
    (tmp_path / "bad.en.toml").write_text('number = 99\ntitle = "t"\nsummary = "s"\nexplanation = "e"\n'
                                          'kind = "segments"\n' + body)
    if zh is not None:
        (tmp_path / "bad.zh.toml").write_text(zh)
    monkeypatch.setattr(content_mod, "CONTENT_DIR", tmp_path)
    content_mod.load_content.cache_clear()
    try:
        return content_mod.load_content("bad", "zh" if zh is not None else "en")
    finally:
        content_mod.load_content.cache_clear()


STEP = '[[steps]]\nid = "s1"\ndo = [{ cmd = "produce" }]\nsay = "x"\n'


def test_a_prediction_with_a_bad_check_is_refused_naming_the_place(tmp_path, monkeypatch):
    body = STEP + ('predict = { question = "q", choices = [{ text = "a", check = { event = "x" } }, '
                   '{ text = "b", check = { evnt = "typo" } }] }\n')
    with pytest.raises(ContentError, match=r"steps\[0\]\.predict\.choices\[1\]\.check: a check needs 'event', "
                                           r"'state', 'all', 'any' or 'not' \(it has 'evnt'\)"):
        _load_bad(tmp_path, monkeypatch, body)


@pytest.mark.parametrize("predict, message", [
    ('{ question = "q", choices = [{ text = "a", check = { event = "x" } }] }', "2 to 5 choices, not 1"),
    ('{ choices = [] }', "missing key 'question'"),
    ('{ question = "q", choices = ["a", "b"] }', r"choices\[0\]: each choice is a table"),
    ('{ question = "q", choices = [{ text = "a" }, { text = "b", check = { event = "x" } }] }',
     r"choices\[0\]: missing key 'check'"),
    ('{ question = "q", choices = [{ text = "a", check = { state = "x", op = "near" } }, '
     '{ text = "b", check = { event = "x" } }] }', "op must be one of"),
    ('{ question = "q", choices = [{ text = "a", check = { any = [] } }, { text = "b", check = { event = "x" } }] }',
     "'any' must be a non-empty list"),
])
def test_malformed_predictions_are_refused(tmp_path, monkeypatch, predict, message):
    with pytest.raises(ContentError, match=message):
        _load_bad(tmp_path, monkeypatch, STEP + f"predict = {predict}\n")


def test_a_translation_keeps_the_number_of_choices(tmp_path, monkeypatch):
    body = STEP + ('predict = { question = "q", choices = [{ text = "a", check = { event = "x" } }, '
                   '{ text = "b", check = { not = { event = "x" } } }] }\n')
    ok = _load_bad(tmp_path, monkeypatch, body, zh='title = "标题"\n[steps.s1.predict]\nquestion = "问"\n'
                                                   'choices = ["甲", "乙"]\n')
    p = ok.predictions["s1"]
    assert p.question == "问" and p.choices == ("甲", "乙") and p.checks[1] == {"not": {"event": "x"}}
    with pytest.raises(ContentError, match="must list 2 texts"):
        _load_bad(tmp_path, monkeypatch, body, zh='title = "标题"\n[steps.s1.predict]\nchoices = ["甲"]\n')


def _event_leaves(check):
    for key in ("all", "any"):
        if key in check:
            return [leaf for c in check[key] for leaf in _event_leaves(c)]
    if "not" in check:
        return _event_leaves(check["not"])
    return [check] if "event" in check else []


@pytest.mark.parametrize("slug", sorted(content_slugs()))
def test_prediction_checks_name_real_events_and_fields(slug):
    """A misspelt event kind or field would never match and silently decide a choice."""
    for key, p in load_content(slug).predictions.items():
        for check in p.checks:
            for leaf in _event_leaves(check):
                kinds = leaf["event"] if isinstance(leaf["event"], list) else [leaf["event"]]
                for kind in kinds:
                    assert kind in EVENT_TYPES, f"{slug} {key}: no event kind {kind!r}"
                    fields = {f.name for f in dataclasses.fields(EVENT_TYPES[kind])} | {"kind", "seq", "time_ms"}
                    assert set(leaf.get("where") or {}) <= fields, f"{slug} {key}: {kind} has no field in {leaf['where']}"


def test_the_lessons_ask_before_the_steps_that_teach():
    assert set(load_content("leader-epoch").predictions) == {"kip101-data-loss:9", "kip101-divergence:12"}
    assert set(load_content("isr-and-acks").predictions) == {"isr-shrink-acks-all:6", "isr-shrink-acks-all:9"}
    assert set(load_content("leader-election").predictions) == {"unclean-election-loss:8"}
    assert set(load_content("idempotence-and-transactions").predictions) == {"plain-retry", "safe-retry"}
    zh = load_content("leader-epoch", "zh").predictions["kip101-data-loss:9"]
    assert zh.checks == load_content("leader-epoch").predictions["kip101-data-loss:9"].checks
    assert "m2" in zh.question and zh.question != load_content("leader-epoch").predictions["kip101-data-loss:9"].question


# ---- the checks on one step's events ----------------------------------------------------------

def test_evaluate_counts_only_the_events_given_and_returns_the_deciding_ones():
    evs = [{"seq": 1, "kind": "leader_elected", "rule": "unclean"}, {"seq": 2, "kind": "fetch_sent"},
           {"seq": 3, "kind": "check_acked_record_lost", "value": "m2"}]
    lost = {"all": [{"event": "leader_elected", "where": {"rule": "unclean"}}, {"event": "check_acked_record_lost"}]}
    assert evaluate(lost, evs, {}) == (True, [evs[0], evs[2]])
    assert evaluate({"not": {"event": "check_acked_record_lost"}}, evs, {})[0] is False
    assert evaluate({"not": {"event": "check_acked_record_lost"}}, evs[:2], {}) == (True, [])
    assert evaluate({"any": [{"event": "nope"}, {"state": "a.0", "op": "eq", "value": 5}]}, [], {"a": [5]})[0]
    assert not evaluate({"event": "check_acked_record_lost", "at_least": 2}, evs, {})[0]
    with pytest.raises(CheckError, match="'not'"):
        validate_check({"nto": {}})


# ---- the kinds, driven directly -----------------------------------------------------------------

def _replication(tmp_path, slug, scenario, truncation, lang="en"):
    kind = ReplicationSandbox(tmp_path / "box", seed=1, limits=Limits(1000, 10**8),
                              lesson=load_content(slug, lang), lang=lang)
    kind.load(scenario, truncation)
    return kind


def _only_happened(pred):
    return [i for i, c in enumerate(pred["choices"]) if c["happened"]]


@pytest.mark.parametrize("slug, scenario, truncation, n, right", REPLICATION_CASES)
def test_the_engine_marks_exactly_the_choice_that_happened(tmp_path, slug, scenario, truncation, n, right):
    kind = _replication(tmp_path, slug, scenario, truncation)
    kind.seek(n - 1)
    before = kind.state()["prediction"]
    assert "outcome" not in (before or {}) or before["outcome"]["step"] != n
    up = before["upcoming"]
    assert up["step"] == n and up["id"] == f"{scenario}:{n}:{truncation}" and len(up["choices"]) == 3
    assert all(set(c) == {"text"} for c in up["choices"])      # nothing about the answer before the step
    kind.step()
    out = kind.state()["prediction"]["outcome"]
    assert out["step"] == n and _only_happened(out) == [right]
    assert out["evidence"] and all(isinstance(t, str) and t for t in out["evidence"])
    # Back: the question again, no outcome; Step again: the very same outcome (rewind is replay).
    kind.back()
    again = kind.state()["prediction"]
    assert "outcome" not in again and again["upcoming"] == up
    kind.step()
    assert kind.state()["prediction"]["outcome"] == out
    # From further back (a restore from the start), and past the step: no outcome once it is behind.
    kind.seek(0)
    kind.seek(n)
    assert kind.state()["prediction"]["outcome"] == out
    if n < kind.total_steps:
        kind.step()
        assert "outcome" not in (kind.state()["prediction"] or {})


def test_evidence_is_narrated_in_the_page_language(tmp_path):
    kind = _replication(tmp_path, "leader-epoch", "kip101-data-loss", "hw", lang="zh")
    kind.seek(9)
    out = kind.state()["prediction"]["outcome"]
    assert _only_happened(out) == [0] and "m2" in out["question"] and "截掉" in out["choices"][0]["text"]
    assert any("检查器" not in t and "丢失" in t for t in out["evidence"])


def test_a_learners_own_command_drops_the_lessons_question(tmp_path):
    kind = _replication(tmp_path, "leader-election", "unclean-election-loss", "epoch")
    kind.seek(7)
    assert kind.state()["prediction"]["upcoming"]["step"] == 8
    run_spec(kind, kind.commands["advance"], {"ms": 4000})   # the learner's own step 8, not the lesson's
    assert kind.position == 8 and kind.state()["prediction"] is None


@pytest.mark.parametrize("step_id, right", GUIDED_CASES)
def test_guided_steps_ask_and_decide_the_same_way(tmp_path, step_id, right):
    kind = GuidedClusterSandbox(tmp_path / "box", seed=1, limits=Limits(1000, 10**8),
                                lesson=load_content("idempotence-and-transactions"))
    n = [s.id for s in kind.lesson.steps].index(step_id) + 1
    kind.seek(n - 1)
    assert kind.state()["prediction"]["upcoming"]["id"] == step_id
    kind.step()
    out = kind.state()["prediction"]["outcome"]
    assert _only_happened(out) == [right] and out["evidence"]
    kind.back()
    kind.step()
    assert kind.state()["prediction"]["outcome"] == out


# ---- over the WebSocket, as the page gets it ------------------------------------------------------

@pytest.fixture
def lenient(runtime_settings):
    runtime_settings.update(COMMAND_BURST=1000, COMMANDS_PER_SECOND=1000.0)
    return runtime_settings


@pytest.mark.asyncio
async def test_frames_carry_the_question_then_the_engines_answer(lenient, runtime):
    response = Client().get("/lessons/isr-and-acks/")
    html = response.content.decode()
    assert 'id="predict"' in html and "js/predict.js" in html and 'id="predict-lock"' in html
    cookie = response.cookies[django_settings.SESSION_COOKIE_NAME].value
    headers = [(b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]
    comm = TrackedCommunicator(application, "/ws/lessons/isr-and-acks/", headers=headers)
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)
    await command(comm, {"cmd": "load", "scenario": "isr-shrink-acks-all", "truncation": "epoch"})
    _, frame = await command(comm, {"cmd": "seek", "step": 8})
    up = frame["state"]["prediction"]["upcoming"]
    assert up["step"] == 9 and "NOT_ENOUGH_REPLICAS" in up["choices"][1]["text"]
    _, frame = await command(comm, {"cmd": "step"})
    out = frame["state"]["prediction"]["outcome"]
    assert _only_happened(out) == [1] and any("NOT_ENOUGH_REPLICAS" in t for t in out["evidence"])
    _, frame = await command(comm, {"cmd": "back"})
    assert frame["state"]["prediction"] == {"upcoming": up}
    _, frame = await command(comm, {"cmd": "step"})
    assert frame["state"]["prediction"]["outcome"] == out
    await comm.disconnect()


def test_the_outcome_is_worked_out_once_per_step(tmp_path, monkeypatch):
    """Frames of the next step come while the position still names this one: they reuse
    the outcome instead of re-reading the step's events (or judging a half-run state)."""
    kind = _replication(tmp_path, "isr-and-acks", "isr-shrink-acks-all", "epoch")
    kind.seek(9)
    first = kind.state()["prediction"]["outcome"]

    def no_reread():
        raise AssertionError("the step's events were read again")

    monkeypatch.setattr(kind, "step_events", no_reread)
    monkeypatch.setattr(kind, "run_state", lambda: {})     # it narrates from step_events too
    assert kind.state()["prediction"]["outcome"] is first


# ---- every outcome says why -------------------------------------------------------------------

def _predicting_runs():
    from kafkaviz.lessons.catalogue import LESSONS
    out = []
    for lesson in LESSONS:
        content = load_content(lesson.slug)
        if content is None or not content.kind or not content.predictions:
            continue
        if content.kind == "replication":
            out += [(lesson.slug, name, rule) for name in content.scenario["choices"]
                    for rule in (content.scenario.get("truncations") or ["epoch"])]
        else:
            out.append((lesson.slug, None, None))
    return out


@pytest.mark.parametrize("slug, scenario, truncation", _predicting_runs())
def test_every_outcome_names_the_events_that_decided_it(tmp_path, slug, scenario, truncation):
    # A choice whose check is only an absence ("nobody leads", "nothing happens") would leave
    # the page's "decided by these events" list empty: each names the events that show why,
    # each sentence once (an event repeated is counted, not listed twice).
    from kafkaviz.live.kinds import get_kind

    lesson = load_content(slug)
    kind = get_kind(lesson.kind)(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=lesson)
    if isinstance(kind, ReplicationSandbox):
        kind.load(scenario, truncation)
    try:
        while kind.position < kind.total_steps:
            kind.step()
            out = (kind.state()["prediction"] or {}).get("outcome")
            if out and out["step"] == kind.position:
                where = f"{slug} {scenario or ''} step {out['step']}"
                assert out["evidence"], f"{where}: '{out['question']}' is decided by no event"
                assert len(set(out["evidence"])) == len(out["evidence"]), where
    finally:
        kind.close()
