"""docs/web.md's recipes, tried: a toy lesson, a diagram and a fault kind added to a copy of
the repository exactly as the docs say (the edits are the fixture
``tests/fixtures/recipes/toy.toml``; each snippet must be the one the docs show), then the
copy's lesson page and socket run them (``tests/fixtures/recipes/toy_check.py``).

It counts the files the edits touch: the cost of a new lesson with its own diagram, of a new
fault kind, and of all three together. The issue's goal is at most 5 for all three (a lesson on
a new topic once touched about 15 web files, a fault kind 12-13; all three took 7 files while a
lesson's place was written in catalogue.py beside its number, and a diagram that only draws
needed a template of its own). A lesson is its file; a diagram that only draws is its script and
its manifest line (title and words in both languages); a fault kind is its command (label and
sentence in both languages) and its docs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "recipes"
EDITS = tomllib.loads((FIXTURE / "toy.toml").read_text())["edit"]
SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "*.pyc", ".ci")


def _snippet(edit: dict) -> str:
    return (edit.get("new") or edit["text"]).strip("\n")


def test_every_snippet_of_the_fixture_is_shown_in_the_docs():
    docs = (ROOT / "docs" / "web.md").read_text()
    for edit in EDITS:
        assert _snippet(edit) in docs, f"docs/web.md does not show the {edit['recipe']} recipe's edit of {edit['file']}"
        assert f"`{edit['file']}`" in docs, edit["file"]


def apply(copy: Path) -> dict[str, set[str]]:
    """Make the recipes' edits in ``copy``; the files each recipe touched."""
    touched: dict[str, set[str]] = {}
    for edit in EDITS:
        path = copy / edit["file"]
        if "new" in edit:
            assert not path.exists(), f"{edit['file']} already exists"
            path.write_text(_snippet(edit) + "\n")
        else:
            text = path.read_text()
            assert text.count(edit["after"]) == 1, f"{edit['file']}: the anchor must occur once: {edit['after']!r}"
            at = text.index(edit["after"]) + len(edit["after"])
            path.write_text(text[:at] + "\n" * (1 + edit.get("blank_lines", 0)) + _snippet(edit) + text[at:])
        touched.setdefault(edit["recipe"], set()).add(edit["file"])
    return touched


def test_the_recipes_touch_few_files_and_the_toy_lesson_runs(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=SKIP, symlinks=False)
    touched = apply(copy)
    for name, files in sorted(touched.items()):
        print(f"{name}: {len(files)} files: {', '.join(sorted(files))}")
    assert len(touched["lesson"] | touched["diagram"]) <= 5, touched       # a lesson on a new topic, its diagram
    assert len(touched["fault"]) <= 5, touched["fault"]
    everything = set().union(*touched.values())
    print(f"all three: {len(everything)} files")
    assert len(everything) <= 5, sorted(everything)                       # the toy lesson, its diagram and its fault
    assert touched["lesson"] == {"kafkaviz/lessons/content/stalled-brokers.en.toml"}, touched["lesson"]
    # Only the edits' files differ from the repository.
    changed = {str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()
               and (not (ROOT / p.relative_to(copy)).exists()
                    or (ROOT / p.relative_to(copy)).read_bytes() != p.read_bytes())}
    assert changed == set().union(*touched.values()), changed
    shutil.copy(FIXTURE / "toy_check.py", copy / "tests" / "web" / "test_toy_check.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_", "PYTEST_"))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings",
                          "tests/web/test_toy_check.py", "tests/web/test_command_vocabulary.py", "tests/web/test_fault_kinds.py",
                          "tests/web/test_content.py",
                          "tests/engine/test_import_graph.py"],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "stalled-brokers" in subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                                                "tests/web/test_content.py"], cwd=copy, env=env, capture_output=True,
                                               text=True, timeout=300).stdout     # the toy's content was checked
