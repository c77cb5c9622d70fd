"""The engine stays pure: no web or plotting imports, no wall clock, no global randomness."""
import ast
import pathlib

ENGINE = pathlib.Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN_MODULES = {"django", "channels", "daphne", "plotly"}
FORBIDDEN_CALLS = {("time", "time"), ("time", "monotonic"), ("time", "sleep"), ("uuid", "uuid4"),
                   ("random", "random"), ("random", "randint"), ("random", "choice"), ("random", "shuffle")}


def _sources():
    files = sorted(ENGINE.rglob("*.py"))
    assert files, "engine sources not found"
    return files


def test_engine_never_imports_web_or_plotting_code():
    offenders = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN_MODULES]
    assert offenders == []


def test_engine_reads_no_wall_clock_and_no_global_randomness_outside_clock_module():
    offenders = []
    for path in _sources():
        if path.name == "clock.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) \
                    and (node.func.value.id, node.func.attr) in FORBIDDEN_CALLS:
                offenders.append(f"{path.name}:{node.lineno} {node.func.value.id}.{node.func.attr}()")
    assert offenders == []
