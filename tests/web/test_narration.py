"""Every guided step of every lesson tells its idea in its own words, in every language
the lesson has, and changes something.

The page shows a step's ``say`` (a ``[[steps]]`` entry's, or a replication scenario's
``[[notes]]``) and falls back to the step's command label when there is none
(``static/js/stepper.js``: ``cur.say || sentence(label)``), so a missing sentence reads
"advance the clock 1000 ms." These tests run each lesson's steps on its sandbox kind,
as the page does, and ask of each step: its own sentence, never the rendering of its
command; and events of its own, unless it is the last (a step that emits nothing would
have the learner press Step to watch nothing happen).
"""
from __future__ import annotations

from collections import Counter

import pytest

from engine import narration
from kafkaviz.lessons.catalogue import LESSONS, SANDBOX
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import Limits, get_kind
from kafkaviz.live.replication import ReplicationSandbox

GUIDED = [lesson.slug for lesson in LESSONS if lesson.content() is not None and lesson.content().kind]
# The sandbox plays the lessons' scenarios (their notes, borrowed) and one of its own.
PLAYED = [*GUIDED, SANDBOX.slug]


def _runs(slug: str) -> list[tuple[str | None, str | None]]:
    """(scenario, truncation rule) pairs a learner can step through; (None, None) for a
    lesson whose steps are its own ``[[steps]]``."""
    content = load_content(slug)
    if content.kind != "replication":
        return [(None, None)]
    return [(name, rule) for name in content.scenario["choices"]
            for rule in (content.scenario.get("truncations") or ["epoch"])]


RUNS = [(slug, scenario, rule) for slug in PLAYED for scenario, rule in _runs(slug)]
LANGUAGED = [(slug, scenario, rule, lang) for slug, scenario, rule in RUNS
             for lang in load_content(slug).languages]


def _kind(tmp_path, slug: str, scenario: str | None, rule: str | None, lang: str = "en"):
    lesson = load_content(slug, lang)
    kind = get_kind(lesson.kind)(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=lesson, lang=lang)
    if isinstance(kind, ReplicationSandbox):
        kind.load(scenario, rule)
    return kind


def _bare(text: str) -> str:
    return text.strip().rstrip(".。").strip().casefold()


def test_the_guided_lessons_are_all_here():
    assert len(GUIDED) == 17 and len(RUNS) > len(GUIDED)


@pytest.mark.parametrize("slug, scenario, rule, lang", LANGUAGED)
def test_every_step_has_its_own_sentence_never_its_command(tmp_path, slug, scenario, rule, lang):
    kind = _kind(tmp_path, slug, scenario, rule, lang)
    try:
        steps = kind.state()["run"]["steps"]
        assert steps and all(s["scripted"] for s in steps)
        commands = kind.run.log
        renderings = {_bare(narration.command_label(c, lang)) for c in commands}
        for s in steps:
            where = f"{slug} {scenario or ''} {rule or ''} {lang} step {s['n']}"
            assert s["say"].strip(), f"{where}: no sentence, the page would show {s['label']!r}"
            assert _bare(s["say"]) != _bare(s["label"]), f"{where}: the sentence is the command"
            assert _bare(s["say"]) not in renderings, f"{where}: the sentence is a command's label"
        repeated = [say for say, n in Counter(s["say"] for s in steps).items() if n > 1]
        assert not repeated, f"{slug} {scenario} {lang}: steps share a sentence: {repeated}"
    finally:
        kind.close()


@pytest.mark.parametrize("slug, scenario, rule", RUNS)
def test_every_step_but_the_last_emits_events(tmp_path, slug, scenario, rule):
    kind = _kind(tmp_path, slug, scenario, rule)
    try:
        total = kind.total_steps
        quiet = []
        for n in range(1, total + 1):
            kind.step()
            if n < total and not kind.step_events():
                quiet.append(kind.state()["run"]["steps"][n - 1]["label"])
        assert not quiet, f"{slug} {scenario} {rule}: steps that change nothing: {quiet}"
    finally:
        kind.close()


# ---- merging steps keeps the event stream ------------------------------------------------------

SCENARIOS = sorted({scenario for slug, scenario, _rule in RUNS if scenario is not None})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_merged_steps_play_the_scenario_with_the_same_event_digest(tmp_path, scenario):
    """A lesson step may run several of a scenario's commands; they are the scenario's own
    commands in its order, so the event stream is byte for byte the one a plain Run of the
    scenario gives (the engine's determinism: same seed and commands, same stream)."""
    from engine.cluster.run import Run, make_config
    from engine.cluster.scenarios import get_scenario
    from kafkaviz.live.replication import SANDBOX_LOG_CONFIG

    slug = next(slug for slug, name, _rule in RUNS if name == scenario)
    kind = _kind(tmp_path, slug, scenario, "epoch")
    try:
        while kind.position < kind.total_steps:
            kind.step()
        sc = get_scenario(scenario)
        plain = Run(sc.seed, make_config({**SANDBOX_LOG_CONFIG, **sc.config}, truncation="epoch"),
                    str(tmp_path / "plain"), os_fsync=False)
        plain.apply_all(sc.commands())
        assert kind.run.log == plain.log and kind.run.event_digest() == plain.event_digest()
    finally:
        kind.close()


def test_lesson_15_merged_step_gives_the_event_stream_of_its_commands_one_by_one(tmp_path):
    """Lesson 15's quiet 250 ms joined the next step: the same commands, one per step, give
    the same events."""
    merged = _kind(tmp_path / "a", "timing-wheel", None, None)
    single = _kind(tmp_path / "b", "timing-wheel", None, None)
    try:
        one_by_one = [{"id": None, "do": [c], "scripted": False} for e in merged.export_run()["log"] for c in e["do"]]
        single.import_run({"log": one_by_one, "step": len(one_by_one)})
        while merged.position < merged.total_steps:
            merged.step()
        assert merged.total_steps < single.total_steps
        assert merged.events.digest() == single.events.digest()
    finally:
        merged.close()
        single.close()


@pytest.mark.parametrize("lang", load_content(SANDBOX.slug).languages)
def test_a_shaped_cluster_says_each_setup_step_in_words(tmp_path, lang):
    # "Build your own cluster" plays its own two-step scenario ("custom"): its steps get the
    # sandbox's sentences, never the labels of create_topic and advance.
    lesson = load_content(SANDBOX.slug, lang)
    kind = get_kind(lesson.kind)(tmp_path / "box", seed=1, limits=Limits(1000, 10**8), lesson=lesson, lang=lang)
    try:
        kind.load(lesson.scenario["choices"][0], None)
        kind.shape(brokers=4, partitions=2, replication_factor=3, min_insync_replicas=2, unclean=False, truncation="epoch")
        steps = kind.state()["run"]["steps"]
        assert len(steps) == 2
        for s in steps:
            assert s["say"].strip() and _bare(s["say"]) != _bare(s["label"]), s
        assert steps[0]["say"] != steps[1]["say"]
    finally:
        kind.close()
