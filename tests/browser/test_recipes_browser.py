"""docs/web.md's recipes in a real browser: the toy lesson, diagram and fault kind of
``tests/fixtures/recipes`` applied to a copy of the repository (as tests/web/test_recipes.py
does), whose own daphne and chromium then show the diagram drawing its view and the fault's
button working (``tests/fixtures/recipes/toy_browser_check.py``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.web.test_recipes import FIXTURE, ROOT, SKIP, apply

pytestmark = pytest.mark.browser


def test_the_recipes_toy_lesson_runs_in_a_browser(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=SKIP)
    apply(copy)
    shutil.copy(FIXTURE / "toy_browser_check.py", copy / "tests" / "browser" / "test_toy_browser.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "KAFKAVIZ_", "PYTEST_"))}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings",
                          "tests/browser/test_toy_browser.py"],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
