"""The test tree's own rule: pytest imports a test module by its name from the first folder
up that is not a package (most test folders have no ``__init__.py``), so two modules that get
one name stop the whole run at collection."""
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def test_no_two_test_modules_import_under_one_name():
    seen = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[module_name(path)].append(str(path.relative_to(TESTS)))
    assert not {name: paths for name, paths in seen.items() if len(paths) > 1}
