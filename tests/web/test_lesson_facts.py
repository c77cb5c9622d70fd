"""A lesson's facts live in its TOML only (issue 18, item 7): the catalogue holds the
order, and no title or summary is copied into code or templates, where it would drift;
a diagram's files are declared once, in kafkaviz/lessons/diagrams.py."""
from __future__ import annotations

import ast
import re
import dataclasses
from pathlib import Path

import pytest
from django.test import Client

from kafkaviz.lessons import catalogue
from kafkaviz.lessons.content import CONTENT_DIR, LANGUAGES, ContentError, content_slugs, load_content
from django.template import engines
from django.utils import translation

from kafkaviz.lessons.diagrams import BLOCK_TEMPLATE, DIAGRAMS, Words, diagram_assets

ROOT = Path(__file__).resolve().parents[2]
SLUGS = sorted(content_slugs())


def _facts() -> list[tuple[str, str, str, str]]:
    """(slug, language, which, text) for every title and summary of every content file."""
    out = []
    for slug in SLUGS:
        for lang in LANGUAGES:
            c = load_content(slug, lang)
            out += [(slug, lang, "title", c.title), (slug, lang, "summary", c.summary)]
    return out


def _code_files() -> list[Path]:
    """Python, templates and scripts of the web side (the lesson files themselves excluded)."""
    files = [p for p in (ROOT / "kafkaviz").rglob("*.py")]
    files += [p for p in (ROOT / "templates").rglob("*.html")]
    files += [p for p in (ROOT / "static" / "js").rglob("*.js")]
    return [p for p in files if CONTENT_DIR not in p.parents]


def test_the_catalogue_entry_is_only_a_slug():
    assert [f.name for f in dataclasses.fields(catalogue.Lesson)] == ["slug", "lang"]


def test_the_catalogue_source_holds_no_title_or_summary():
    tree = ast.parse((ROOT / "kafkaviz" / "lessons" / "catalogue.py").read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    copied = [(slug, lang, which) for slug, lang, which, text in _facts() if text in strings]
    assert not copied, f"lesson facts written into catalogue.py: {copied}"


def test_the_order_names_every_lesson_file_and_nothing_else():
    assert set(catalogue.ORDER) | {catalogue.SANDBOX.slug} == set(SLUGS)
    assert len(set(catalogue.ORDER)) == len(catalogue.ORDER)


def test_a_lessons_number_is_its_place_in_the_order():
    assert [load_content(slug).number for slug in catalogue.ORDER] == list(range(1, len(catalogue.ORDER) + 1))
    assert load_content(catalogue.SANDBOX.slug).number == 0


def _course(tmp_path, monkeypatch, numbers: dict[str, int]) -> tuple[str, ...]:
    for slug, number in numbers.items():
        (tmp_path / f"{slug}.en.toml").write_text(f'number = {number}\ntitle = "{slug}"\n')
    monkeypatch.setattr(catalogue, "CONTENT_DIR", tmp_path)
    monkeypatch.setattr(catalogue, "content_slugs", lambda: frozenset(numbers))
    return catalogue.course_order()


def test_the_order_is_the_files_numbers_and_a_clash_or_gap_is_one_clear_line(tmp_path, monkeypatch):
    """A lesson's place is written once, as ``number`` in its file: adding a lesson is adding its file."""
    assert _course(tmp_path, monkeypatch, {"b": 2, "a": 3, "c": 1, "sandbox": 0}) == ("c", "b", "a")
    clash = tmp_path / "clash"
    clash.mkdir()
    with pytest.raises(ContentError, match=r"lessons x, y all claim number 1$"):
        _course(clash, monkeypatch, {"x": 1, "y": 1})
    gap = tmp_path / "gap"
    gap.mkdir()
    with pytest.raises(ContentError, match="no lesson has number 2"):
        _course(gap, monkeypatch, {"p": 1, "q": 3})
    bad = tmp_path / "bad"
    bad.mkdir()
    with pytest.raises(ContentError, match="'number' must be"):
        _course(bad, monkeypatch, {"p": "\"one\""})


def test_catalogue_py_names_no_lesson():
    tree = ast.parse((ROOT / "kafkaviz" / "lessons" / "catalogue.py").read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & set(catalogue.ORDER), "a lesson's place is its file's number, not a line in catalogue.py"


def test_no_summary_is_written_outside_its_lesson_file():
    texts = {p: p.read_text(encoding="utf-8") for p in _code_files()}
    copied = [(slug, lang, p.relative_to(ROOT).as_posix()) for slug, lang, which, text in _facts()
              if which == "summary" for p, t in texts.items() if text in t]
    assert not copied, f"a summary copied outside its TOML: {copied}"


def test_no_long_title_is_written_outside_its_lesson_file():
    # One-word titles ("Segments", "Retention") are also ordinary words of the code; a title
    # of three words or more is the lesson's own and has no business outside its file.
    texts = {p: p.read_text(encoding="utf-8") for p in _code_files()}
    copied = [(slug, lang, p.relative_to(ROOT).as_posix()) for slug, lang, which, text in _facts()
              if which == "title" and (len(text.split()) >= 3 or lang != "en")
              for p, t in texts.items() if f'"{text}"' in t or f"'{text}'" in t or f">{text}<" in t]
    assert not copied, f"a title copied outside its TOML: {copied}"


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_the_home_page_shows_each_lessons_own_title_and_summary(lang):
    html = Client().get(f"/?lang={lang}").content.decode()
    for slug in catalogue.ORDER:
        c = load_content(slug, lang)
        assert f'id="lesson-{c.number}"' in html
        for text in (c.title, c.summary):
            assert text.replace("'", "&#x27;").replace('"', "&quot;") in html, (slug, lang, text)


# ---- a diagram's files: one manifest (kafkaviz/lessons/diagrams.py) -------------------------

NAMED = sorted({d for slug in SLUGS for d in load_content(slug).diagrams})


@pytest.mark.parametrize("name", NAMED)
def test_every_diagram_a_lesson_names_is_declared_with_files_that_exist(name):
    d = DIAGRAMS[name]
    assert (ROOT / "templates" / d.template).is_file()
    for path in (*d.scripts, *d.styles):
        assert (ROOT / "static" / path).is_file(), f"{name}: {path} is missing"


def test_every_declared_diagram_has_a_template_and_no_template_is_undeclared():
    on_disk = {p.stem for p in (ROOT / "templates" / "diagrams").glob("*.html")}
    own = {name for name, d in DIAGRAMS.items() if d.template != BLOCK_TEMPLATE}
    assert on_disk == own
    for name, d in DIAGRAMS.items():       # a diagram in the shared block says its title in both languages
        assert (d.template == BLOCK_TEMPLATE) == (d.title is not None), name


def test_a_diagram_that_only_draws_needs_no_template(monkeypatch):
    """Its manifest line (title and words, both languages) and its script are the diagram."""
    from kafkaviz.lessons import diagrams

    meter = diagrams._diagram("meter-test", title=Words("Faults now", "当前故障"),
                              words={"cut": Words("links cut", "条链路被切断")})
    assert meter.template == BLOCK_TEMPLATE and meter.scripts == ("js/meter-test.js",)
    monkeypatch.setitem(diagrams.DIAGRAMS, "meter-test", meter)
    template = engines["django"].from_string("{% load diagrams %}{% for d in names %}{% include d|diagram_template %}{% endfor %}")
    for lang, title, cut in (("en", "Faults now", "links cut"), ("zh-hans", "当前故障", "条链路被切断")):
        with translation.override(lang):
            html = template.render({"names": ["meter-test"]})
        assert f'<h2 id="meter-test-title">{title}</h2>' in html, html
        assert 'id="meter-test" data-diagram="meter-test"' in html and f'data-cut="{cut}"' in html, html


def test_diagram_templates_load_no_files_themselves():
    for name, d in DIAGRAMS.items():
        html = (ROOT / "templates" / d.template).read_text()
        assert "<script" not in html and 'rel="stylesheet"' not in html, f"{name}: declare its files in the manifest"


def test_pages_include_a_diagram_through_its_manifest_entry_only():
    built = [p.relative_to(ROOT).as_posix() for p in (ROOT / "templates").rglob("*.html")
             if '"diagrams/"|add' in p.read_text() or "'diagrams/'|add" in p.read_text()]
    assert not built, f"a diagram's template path built by hand (use d|diagram_template): {built}"


def test_assets_come_once_each_with_every_diagrams_own_script_first():
    assets = diagram_assets(["replica-lanes", "cluster", "consumer-group", "lag-chart"])
    assert assets["scripts"] == ["js/replica-lanes.js", "js/cluster.js", "js/consumer-group.js", "js/lag-chart.js",
                                 "js/flow.js"]
    assert assets["styles"] == ["css/diagrams-storage.css", "css/diagrams-groups.css"]


@pytest.mark.parametrize("slug", ["segments", "committing-offsets"])
def test_the_lesson_page_loads_its_diagrams_files_in_the_head(slug):
    html = Client().get(f"/lessons/{slug}/").content.decode()
    head = html.split("</head>", 1)[0]
    for path in (*diagram_assets(load_content(slug).diagrams)["scripts"],
                 *diagram_assets(load_content(slug).diagrams)["styles"]):
        assert f"/static/{path}" in head and html.count(f"/static/{path}") == 1, path


# ---- the storage diagram's clock jumps come from the lesson's own settings -------------------

def _jumps(slug: str, lang: str = "en") -> list[tuple[str, str, bool]]:
    html = Client().get(f"/lessons/{slug}/?lang={lang}").content.decode()
    select = re.search(r'<select name="ms">(.*?)</select>', html, re.S)[1]
    return [(v, " ".join(label.split()), bool(sel))
            for v, sel, label in re.findall(r'<option value="(\d+)"( selected)?>(.*?)</option>', select, re.S)]


def test_lesson_twos_clock_jumps_are_its_retention_settings():
    assert _jumps("segments") == [("5000", "5 s (one retention check)", False),
                                  ("30000", "30 s (past file.delete.delay.ms)", False),
                                  ("65000", "65 s (past retention.ms)", True)]


def test_another_lesson_on_the_same_diagram_shows_its_own_settings():
    config = load_content("retention").scenario["config"]
    delay = config["file.delete.delay.ms"]
    retention = config["retention.ms"] + config["log.retention.check.interval.ms"]
    jumps = _jumps("retention")
    assert (str(delay), f"{delay // 1000} s (past file.delete.delay.ms)", False) in jumps
    assert (str(retention), f"{retention // 1000} s (past retention.ms)", True) in jumps
    assert ("30000", "30 s (past file.delete.delay.ms)", False) not in jumps


def test_the_clock_jumps_are_translated():
    assert ("65000", "65 秒（超过 retention.ms）", True) in _jumps("segments", "zh")


def test_a_lesson_whose_own_diagram_has_the_controls_gets_no_second_set():
    html = Client().get("/lessons/compaction/").content.decode()
    assert 'id="produce-form"' not in html and html.count('id="advance-error"') == 1
