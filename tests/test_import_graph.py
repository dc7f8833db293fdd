"""The library's import structure: no import cycle, and no import hidden inside a function.

Every module of `kerncast.analysis` and `kerncast.server` is parsed with `ast`. Its module-level imports
(those under `if TYPE_CHECKING:` are for annotations only and are not run) form the import graph, which must
have no cycle: a cycle hidden by moving one import into a function is a cycle all the same, so a
function-local import of a Kerncast or standard-library module is refused too. The exception is an import
that is deliberately late because it loads a heavy optional dependency (XGBoost, LIME, the LSP library,
NVML): it carries a `# lazy import: <why>` comment on its line or in the comment just above it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"kerncast.analysis": REPO / "analysis", "kerncast.server": REPO / "server"}
MARKER = "# lazy import:"


def _modules() -> dict[str, Path]:
    """Every module's dotted name and file (a package is its `__init__.py`)."""
    out: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (`from pkg import mod` loads `pkg.mod` when that is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _with_packages(importer: str, target: str) -> list[str]:
    """`target` and the packages Python initialises before it (`a.b` for `a.b.c`: its `__init__` runs first),
    except those that hold the importer, which are already being initialised when it runs."""
    parts = target.split(".")
    out = [".".join(parts[:i]) for i in range(1, len(parts))]
    return [p for p in out if not importer.startswith(p + ".")] + [target]


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported: top level, and inside top-level `if`/`try` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the Kerncast modules it imports at module level."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = {p for node in _module_level_imports(tree) for t in _targets(node)
                       for p in _with_packages(name, t) if p in MODULES and p != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment lines directly above line `lineno` (1-based), joined."""
    above: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        above.append(lines[i].strip())
        i -= 1
    return " ".join(reversed(above))


def function_local_imports(paths: list[Path] | None = None) -> list[str]:
    """`file:line module` for each unmarked import inside a function of a Kerncast or standard-library module,
    in the given files (default: every module of the library)."""
    bad: list[str] = []
    for path in MODULES.values() if paths is None else paths:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text, str(path))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                marked = MARKER in lines[node.lineno - 1] or MARKER in _comment_above(lines, node.lineno)
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                top = {n.split(".")[0] for n in names}
                if not marked and (top & {"kerncast"} or top & set(sys.stdlib_module_names)):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} {', '.join(names)}")
    return bad


def test_the_walker_finds_a_cycle_and_a_self_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["d"]]


def test_the_graph_sees_the_pipeline_import_its_stages() -> None:
    graph = import_graph()
    assert "kerncast.analysis.stages.launch" in graph["kerncast.analysis.pipeline"]
    assert "kerncast.analysis.stages.memory" in graph["kerncast.analysis.pipeline"]
    assert "kerncast.analysis.context" in graph["kerncast.analysis.stages.memory"]


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_unmarked_function_local_import() -> None:
    bad = function_local_imports()
    assert not bad, ("imports inside functions (move them to the top of the module, or mark a heavy optional "
                     f"dependency with '{MARKER} <why>'): " + "; ".join(bad))


def test_no_unmarked_function_local_import_in_tests_benchmarks_or_validation() -> None:
    scripts = [p for folder in ("tests", "benchmarks", "validation") for p in sorted((REPO / folder).rglob("*.py"))]
    assert len(scripts) > 50
    bad = function_local_imports(scripts)
    assert not bad, "imports inside functions (move them to the top of the module): " + "; ".join(bad)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_e402_suppression(name: str) -> None:
    assert "noqa: E402" not in MODULES[name].read_text(encoding="utf-8"), f"{name} hides a late import"
