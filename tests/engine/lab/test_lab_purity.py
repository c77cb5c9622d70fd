"""The lab's engine side never imports Spark: a run is the same inside an executor and outside."""
import ast
import pathlib

LAB = pathlib.Path(__file__).resolve().parents[3] / "engine"


def test_nothing_under_engine_imports_pyspark_or_django():
    offenders = []
    for path in sorted(LAB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("pyspark", "py4j", "django")]
    assert offenders == []
