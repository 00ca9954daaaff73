"""The package's shape (issue #14): no import cycles between srcjax's modules, no module over 900 lines.

The import graph is read from the source with :mod:`ast` (nothing is imported): every ``import`` and
``from ... import`` of a srcjax module, at top level or inside a function (a deferred import is still
a cycle, only hidden), except those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "srcjax"
MAX_LINES = 900

# Imports that close a cycle today, (importer, imported) -> why it is still there. The test leaves
# them out of the graph, so it passes now and fails when a new cycle appears (one that does not go
# through one of these). Remove an entry when its cycle is gone.
KNOWN_CYCLE_EDGES: dict[tuple[str, str], str] = {}  # none left (add one only with the reason)

# Modules allowed over MAX_LINES for now, and why. Remove an entry when the module is split.
KNOWN_LONG: dict[str, str] = {}  # none left


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module and package under srcjax/."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree``, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the srcjax modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

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
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def a_cycle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One shortest cycle through the component's first module, as a path that ends where it starts."""
    start = min(comp)
    prev: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if v != start else [start, start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError("not a cycle")


def test_no_import_cycles() -> None:
    graph = import_graph()
    for a, b in KNOWN_CYCLE_EDGES:
        graph[a].discard(b)
    new = strongly_connected(graph)
    report = "\n".join(f"  {' -> '.join(a_cycle(graph, c))}   (modules in the cycle: {', '.join(sorted(c))})"
                       for c in new)
    assert not new, f"import cycles between srcjax modules:\n{report}"


def test_the_graph_sees_deferred_imports() -> None:
    # the checker itself: a deferred import counts, a TYPE_CHECKING one does not
    tree = ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\ndef f():\n    from . import c\n")
    assert [ast.unparse(n) for n in _imports(tree)] == ["import b", "from . import c"]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [{"a", "b", "c"}]
    assert a_cycle(graph, {"a", "b", "c"}) == ["a", "b", "c", "a"]


def test_no_long_modules() -> None:
    long = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        n = len(path.read_text().splitlines())
        if n > MAX_LINES and rel not in KNOWN_LONG:
            long[rel] = n
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): " + \
        ", ".join(f"srcjax/{p} ({n})" for p, n in long.items())


def test_underscore_names_cross_modules_only_with_a_reason() -> None:
    """``from .x import _name`` between srcjax modules needs a comment saying why, on the import or
    in the three lines above it; otherwise make the name public where it is defined."""
    bare = []
    for path in sorted(ROOT.rglob("*.py")):
        lines = path.read_text().split("\n")
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("srcjax")):
                continue
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            near = lines[max(0, node.lineno - 4):node.end_lineno or node.lineno]
            if private and not any("#" in ln for ln in near):
                bare.append(f"srcjax/{path.relative_to(ROOT)}:{node.lineno} ({', '.join(private)})")
    assert not bare, "underscore names imported across modules without a reason: " + "; ".join(bare)

