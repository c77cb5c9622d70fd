"""The engine's modules import one another without a circle.

Every import counts: at module level, inside a function, under ``if TYPE_CHECKING``. A
circle hidden by moving an import into a function is still a circle (the two modules
cannot be understood, tested or replaced apart); the way back up goes through an
interface (``engine/cluster/host.py``) or through the object that built the caller.
"""
import ast
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _module_name(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(module: str, is_package: bool, node: ast.AST) -> list[str]:
    """The dotted names ``node`` may import (``from a import b`` may name module ``a.b``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        base = node.module
    return [base] + [f"{base}.{a.name}" for a in node.names]


def import_graph(root: pathlib.Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports anywhere in its source."""
    paths = {_module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}
    graph = {}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        names = {n for node in ast.walk(ast.parse(path.read_text())) for n in _imported(module, is_package, node)}
        graph[module] = {n for n in names if n in paths and n != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


# Circles known and owned elsewhere, each to be broken and then struck from here (the test
# also fails once one is gone, so the list cannot go stale).
KNOWN_CIRCLES: list[list[str]] = []


def test_engine_has_no_import_circle():
    graph = import_graph(ROOT, "engine")
    assert "engine.cluster.broker" in graph["engine.cluster.cluster"], "the graph reads no imports"
    assert circles(graph) == KNOWN_CIRCLES


def test_a_circle_hidden_inside_a_function_is_found(tmp_path):
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import B\n")
    (pkg / "b.py").write_text(textwrap.dedent("""\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from toy import c
        class B:
            def late(self):
                from . import a
        """))
    (pkg / "c.py").write_text("")
    graph = import_graph(tmp_path, "toy")
    assert graph["toy.b"] == {"toy", "toy.a", "toy.c"}   # "from toy import c" runs toy/__init__.py too
    assert circles(graph) == [["toy.a", "toy.b"]]
