"""Lessons kept as data: one TOML file per lesson and language.

``kafkaviz/lessons/content/<slug>.en.toml`` holds everything a lesson is -- its
title, explanation, sources, the scenario its sandbox sets up, guided steps (each may
ask "what will happen?" with choices the engine's events decide), try-it tasks with the
checks that decide them, and a quiz -- in English. A translation,
``<slug>.<lang>.toml``, holds only text, keyed by the same ids (steps, tasks,
quiz questions); facts (commands, checks, answers, scenario) live once, in the
English file. The page template ``templates/lessons/lesson.html`` renders any lesson.
docs/web.md ("Adding a lesson") documents every key.

Explanation prose uses a tiny markup rendered here, after escaping: blank lines
separate paragraphs, ``**bold**``, ``*emphasis*``, ```code```, and ``[text](/path/)``
links to pages of this site only.
"""
from __future__ import annotations

import html
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from .checks import CheckError, validate_check

from .diagrams import DIAGRAMS

__all__ = ["LessonContent", "Step", "Task", "Question", "Prediction", "Source", "load_content", "content_slugs",
           "render_markup", "LANGUAGES", "DJANGO_LANG", "ContentError"]

CONTENT_DIR = Path(__file__).resolve().parent / "content"
LANGUAGES = {"en": "English", "zh": "简体中文"}
DJANGO_LANG = {"en": "en", "zh": "zh-hans"}   # our language codes → Django's (locale/zh_Hans/)


class ContentError(ValueError):
    """A lesson file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Source:
    title: str                      # what learners see, e.g. a blog post's title
    url: str = ""
    seed: str = ""                  # test metadata: which seed (and section) states the facts


@dataclass(frozen=True)
class Step:
    """A guided step: a few commands of the lesson's sandbox kind, and what to look at.
    ``say`` introduces the step; what the engine did is narrated from its events."""

    id: str
    do: tuple[dict, ...]
    say: str


@dataclass(frozen=True)
class Task:
    """A try-it task. ``check`` is declarative (``kafkaviz/lessons/checks.py``)."""

    id: str
    text: str
    check: dict
    hint: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    choices: tuple[str, ...]
    answer: int                     # index into choices
    explain: str
    points_at: str = ""             # element id of the live diagram the explanation points at


@dataclass(frozen=True)
class Prediction:
    """"What will happen?" before a guided step. Each choice's ``check`` (the try-it DSL,
    ``kafkaviz/lessons/checks.py``) is evaluated on that step's events and the state after
    it: which choice was right is the engine's to say, never the lesson file's."""

    question: str
    choices: tuple[str, ...]
    checks: tuple[dict, ...]        # checks[i] decides choices[i]

    def ask(self) -> dict[str, Any]:
        return {"question": self.question, "choices": [{"text": t} for t in self.choices]}


MAX_PREDICT_CHOICES = 5


def _prediction(raw: Any, over: Any, where: str) -> Prediction:
    """A step's ``predict`` table, with the translation's question and choice texts."""
    if not isinstance(raw, dict):
        raise ContentError(f"{where}: 'predict' must be a table with 'question' and 'choices'")
    question = _need(raw, "question", str, where)
    choices = _need(raw, "choices", list, where)
    if not 2 <= len(choices) <= MAX_PREDICT_CHOICES:
        raise ContentError(f"{where}: a prediction has 2 to {MAX_PREDICT_CHOICES} choices, not {len(choices)}")
    texts, checks = [], []
    for i, c in enumerate(choices):
        w = f"{where}.choices[{i}]"
        if not isinstance(c, dict):
            raise ContentError(f"{w}: each choice is a table {{ text = \"...\", check = {{ ... }} }}")
        texts.append(_need(c, "text", str, w))
        check = _need(c, "check", dict, w)
        try:
            validate_check(check, f"{w}.check")
        except CheckError as exc:
            raise ContentError(str(exc)) from exc
        checks.append(check)
    over = over if isinstance(over, dict) else {}
    if "choices" in over:
        if not isinstance(over["choices"], list) or len(over["choices"]) != len(texts) \
                or not all(isinstance(t, str) for t in over["choices"]):
            raise ContentError(f"{where}: the translation's 'choices' must list {len(texts)} texts, "
                               "in the English file's order")
        texts = list(over["choices"])
    return Prediction(str(over.get("question") or question), tuple(texts), tuple(checks))


@dataclass(frozen=True)
class LessonContent:
    slug: str
    lang: str
    number: int
    title: str
    summary: str
    explanation: str
    kind: str | None                # sandbox kind, kafkaviz/live/kinds.py
    diagrams: tuple[str, ...]
    sources: tuple[Source, ...]
    scenario: dict                  # handed to the sandbox kind as it is
    steps: tuple[Step, ...]
    tasks: tuple[Task, ...]
    quiz: tuple[Question, ...]
    text: dict = field(default_factory=dict)   # lesson-specific UI text (labels of scenario choices etc.)
    notes: dict = field(default_factory=dict)  # "<scenario>:<step>[:<rule>]" -> what to look at in that step
    # "What will happen?" before a step: keyed by a step's id, or by a note's key (as ``notes``)
    predictions: dict = field(default_factory=dict)
    languages: tuple[str, ...] = ("en",)

    @property
    def partition_numbers(self) -> list[int]:
        return list(range(int(self.scenario.get("partitions", 1))))

    @property
    def scenario_choices(self) -> list[tuple[str, str]]:
        """(scenario name, label) for lessons that let the learner pick a scenario;
        labels come from the lesson's ``[text]`` table under the scenario's name."""
        return [(name, self.text.get(name, name)) for name in self.scenario.get("choices", ())]

    def prediction_for(self, pid: str) -> Prediction | None:
        """The prediction a kind names ``pid`` in the frame state (a step's id, or
        ``<scenario>:<step>:<rule>`` for a note, which may be keyed without its rule)."""
        if not isinstance(pid, str):
            return None
        return self.predictions.get(pid) or (self.predictions.get(pid.rsplit(":", 1)[0]) if pid.count(":") == 2
                                             else None)

    def explanation_html(self) -> SafeString:
        return render_markup(self.explanation)

    def page_data(self) -> dict[str, Any]:
        """The lesson facts the page's scripts need (sent once as JSON)."""
        return {
            "slug": self.slug, "lang": self.lang, "kind": self.kind,
            "steps": [{"id": s.id, "say": s.say} for s in self.steps],
            "tasks": [{"id": t.id, "text": t.text} for t in self.tasks],
            "quiz": [{"id": q.id, "answer": q.answer, "explain": q.explain, "points_at": q.points_at}
                     for q in self.quiz],
            "brokers": {str(k): v for k, v in (self.scenario.get("broker_names") or {}).items()},
            "text": self.text,
        }


def _need(data: dict, key: str, typ: type, where: str) -> Any:
    if key not in data:
        raise ContentError(f"{where}: missing key {key!r}")
    value = data[key]
    if not isinstance(value, typ):
        raise ContentError(f"{where}: {key!r} must be {typ.__name__}, got {type(value).__name__}")
    return value


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ContentError(f"{path.name}: {exc}") from exc


@lru_cache(maxsize=1)
def content_slugs() -> frozenset[str]:
    """Slugs that have an English content file (read once per process)."""
    return frozenset(p.name.removesuffix(".en.toml") for p in CONTENT_DIR.glob("*.en.toml"))


def _languages(slug: str) -> tuple[str, ...]:
    return tuple(code for code in LANGUAGES if (CONTENT_DIR / f"{slug}.{code}.toml").exists())


@lru_cache(maxsize=64)
def load_content(slug: str, lang: str = "en") -> LessonContent | None:
    """The lesson ``slug`` in ``lang`` (text falls back to English where a translation
    is missing); None when the lesson has no content file."""
    path = CONTENT_DIR / f"{slug}.en.toml"
    if not re.fullmatch(r"[a-z0-9-]+", slug) or not path.exists():
        return None
    base = _read(path)
    where = path.name
    over: dict = {}
    if lang != "en" and lang in LANGUAGES and (CONTENT_DIR / f"{slug}.{lang}.toml").exists():
        over = _read(CONTENT_DIR / f"{slug}.{lang}.toml")
    else:
        lang = "en" if lang not in LANGUAGES else lang

    def text(key: str, default: str | None = None) -> str:
        if key in over:
            return str(over[key])
        if default is not None and key not in base:
            return default
        return _need(base, key, str, where)

    def by_id(section: str, item_id: str) -> dict:
        return (over.get(section) or {}).get(item_id) or {}

    steps = []
    predictions: dict[str, Prediction] = {}
    for i, s in enumerate(base.get("steps", [])):
        w = f"{where} steps[{i}]"
        sid = _need(s, "id", str, w)
        do = _need(s, "do", list, w)
        if not all(isinstance(c, dict) and isinstance(c.get("cmd"), str) and "type" not in c for c in do):
            raise ContentError(f"{w}: every entry of 'do' must be an engine command, a table with a 'cmd' "
                               "(docs/commands.md)")
        steps.append(Step(sid, tuple(do), by_id("steps", sid).get("say") or _need(s, "say", str, w)))
        if "predict" in s:
            predictions[sid] = _prediction(s["predict"], by_id("steps", sid).get("predict"), f"{w}.predict")
    tasks = []
    for i, t in enumerate(base.get("tasks", [])):
        w = f"{where} tasks[{i}]"
        tid = _need(t, "id", str, w)
        o = by_id("tasks", tid)
        tasks.append(Task(tid, o.get("text") or _need(t, "text", str, w), _need(t, "check", dict, w),
                          o.get("hint") or t.get("hint", "")))
    quiz = []
    for i, q in enumerate(base.get("quiz", [])):
        w = f"{where} quiz[{i}]"
        qid = _need(q, "id", str, w)
        o = by_id("quiz", qid)
        choices = tuple(o.get("choices") or _need(q, "choices", list, w))
        answer = _need(q, "answer", int, w)
        if not 0 <= answer < len(choices) or len(choices) != len(_need(q, "choices", list, w)):
            raise ContentError(f"{w}: answer {answer} is not one of {len(choices)} choices "
                               "(a translation must keep the number and order of choices)")
        quiz.append(Question(qid, o.get("question") or _need(q, "question", str, w), choices, answer,
                             o.get("explain") or _need(q, "explain", str, w), q.get("points_at", "")))
    if not 2 <= len(quiz) <= 5 and quiz:
        raise ContentError(f"{where}: a quiz has 2 to 5 questions, not {len(quiz)}")
    sources = tuple(Source(_need(s, "title", str, f"{where} sources"), s.get("url", ""), s.get("seed", ""))
                    for s in base.get("sources", []))
    ui_text = {**(base.get("text") or {}), **(over.get("text") or {})}
    notes = {}
    for i, n in enumerate(base.get("notes", [])):
        w = f"{where} notes[{i}]"
        key = f"{_need(n, 'scenario', str, w)}:{_need(n, 'step', int, w)}" + (f":{n['rule']}" if n.get("rule") else "")
        o = (over.get("notes") or {}).get(key) or {}
        notes[key] = o.get("say") or _need(n, "say", str, w)
        if "predict" in n:
            predictions[key] = _prediction(n["predict"], o.get("predict"), f"{w}.predict")
    diagrams = tuple(base.get("diagrams", ()))
    undeclared = [d for d in diagrams if d not in DIAGRAMS]
    if undeclared:
        raise ContentError(f"{where}: diagrams {undeclared} are not declared in kafkaviz/lessons/diagrams.py")
    return LessonContent(
        slug=slug, lang=lang, number=_need(base, "number", int, where), title=text("title"),
        summary=text("summary"), explanation=text("explanation"), kind=base.get("kind"),
        diagrams=diagrams, sources=sources, scenario=dict(base.get("scenario") or {}),
        steps=tuple(steps), tasks=tuple(tasks), quiz=tuple(quiz), text=ui_text, notes=notes,
        predictions=predictions, languages=_languages(slug))


# ---- the explanation's markup ----------------------------------------------------------

_INLINE = re.compile(r"\*\*(?P<b>.+?)\*\*|\*(?P<i>[^*]+?)\*|`(?P<c>[^`]+?)`|\[(?P<lt>[^\]]+?)\]\((?P<lu>/[^)\s]*)\)")


def _inline(text: str) -> str:
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        if m["b"] is not None:
            out.append(f"<strong>{_inline(m['b'])}</strong>")
        elif m["i"] is not None:
            out.append(f"<em>{html.escape(m['i'])}</em>")
        elif m["c"] is not None:
            out.append(f"<code>{html.escape(m['c'])}</code>")
        else:
            out.append(f'<a href="{html.escape(m["lu"])}">{html.escape(m["lt"])}</a>')
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def render_markup(text: str) -> SafeString:
    """Paragraphs (blank-line separated) with bold, emphasis, code and site-local links;
    everything else is escaped, so a lesson file cannot inject markup."""
    paras = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return mark_safe("\n".join(f"<p>{_inline(' '.join(p.split()))}</p>" for p in paras))
