"""The test tree's own rule: pytest imports test modules by basename (no ``__init__.py`` in
tests/), so two test files with one name make the whole run stop at collection."""
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_modules_share_a_basename():
    seen = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(TESTS)))
    assert not {name: paths for name, paths in seen.items() if len(paths) > 1}
