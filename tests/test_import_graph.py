"""The library's import structure: layers, no import cycle, and no import hidden inside a function.

Every module of `kerncast.analysis` and `kerncast.server` is parsed with `ast`. Its module-level imports,
those written for annotations only included (an import under `if TYPE_CHECKING:` is refused: a type a module
names is a dependency all the same), form the import graph; importing `a.b.c` also runs the `__init__` of
`a.b`. The graph must have no cycle, and no module may import one of a higher layer (`LAYERS`): the shared
words at the bottom, then the source and toolchain, PTX, the models, the report and the stage contract, the
findings wing, the stages, the pipeline and the server. A cycle hidden by moving one import into a function
is a cycle all the same, so a function-local import of a Kerncast or standard-library module is refused too.
The exception is an import that is deliberately late because it loads a heavy optional dependency (XGBoost,
LIME, the LSP library, NVML) or a runtime the caller may not need: it carries a `# lazy import: <why>` comment
on its line or in the comment just above it.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"kerncast.analysis": REPO / "analysis", "kerncast.server": REPO / "server"}
MARKER = "# lazy import:"

#: The layers, lowest first, as patterns of module names (relative to `kerncast.analysis`, or absolute): a
#: module imports only from its own layer and those below. A name given exactly wins over a pattern, so that a
#: module can stand apart from its folder (the power validation runs the whole pipeline).
LAYERS: list[tuple[str, list[str]]] = [
    ("shared words and data", ["kerncast.analysis", "rules", "finding", "json_form", "strict_json", "lru", "collector",
                               "intops", "cfloat", "demangle", "input_files", "gpus", "gpus.*"]),
    ("source and toolchain", ["cexpr", "csyntax", "source_model", "header_macros", "neighbours", "edits",
                              "preflight", "includes", "compile_hints", "compile", "compile_db", "toolchain",
                              "targets", "launch"]),
    ("PTX and its dataflow", ["ptx", "ptx.*", "cfg", "loops", "deps", "isa", "matrix_ops", "sampling",
                              "dataflow", "dataflow.*"]),
    ("models", ["options", "tripcount", "kernel_homes", "occupancy", "assumed_loops", "memory", "memory.*",
                "timing", "timing.*", "power", "power.*"]),
    ("report and stage contract", ["report", "context", "places", "locate"]),
    ("findings wing", ["findings", "findings.*"]),
    ("stages", ["stages", "stages.*"]),
    ("pipeline", ["pipeline", "kernel_cache", "kernel_shift", "fixing", "power.validation", "power.public",
                  "calibration", "calibration.*"]),
    ("front ends", ["kerncast.server", "kerncast.server.*"]),
]


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
    """Imports at module level: top level, and inside top-level `if`/`try` blocks (`if TYPE_CHECKING:` too)."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
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


def layer_of(module: str) -> int | None:
    """The index in `LAYERS` of a module's layer (None: it has none)."""
    name = module.removeprefix("kerncast.analysis.")
    for exact in (True, False):
        for i, (_, patterns) in enumerate(LAYERS):
            for pattern in patterns:
                if (name == pattern or module == pattern) if exact else (
                        fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(module, pattern)):
                    return i
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a (layer) -> b (layer)` for each import of a module from a higher layer."""
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                out.append(f"{a} ({LAYERS[la][0]}) -> {b} ({LAYERS[lb][0]})")
    return out


def test_the_walker_finds_a_cycle_and_a_self_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["d"]]


def test_the_graph_sees_the_pipeline_import_its_stages() -> None:
    graph = import_graph()
    assert "kerncast.analysis.stages.launch" in graph["kerncast.analysis.pipeline"]
    assert "kerncast.analysis.stages.memory" in graph["kerncast.analysis.pipeline"]
    assert "kerncast.analysis.context" in graph["kerncast.analysis.stages.memory"]


def test_every_module_has_a_layer() -> None:
    assert not [m for m in MODULES if layer_of(m) is None]


def test_the_layer_check_sees_an_upward_import() -> None:
    graph = {"kerncast.analysis.finding": {"kerncast.analysis.report"},
             "kerncast.server.hover": {"kerncast.analysis.report"}}
    assert upward_imports(graph) == ["kerncast.analysis.finding (shared words and data) -> "
                                     "kerncast.analysis.report (report and stage contract)"]


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    found = upward_imports(import_graph())
    assert not found, "imports from a higher layer: " + "; ".join(found)


def test_no_import_for_type_checking_only() -> None:
    found = [name for name, path in MODULES.items() if "TYPE_CHECKING" in path.read_text(encoding="utf-8")]
    assert not found, f"modules with imports for type checking only (import the type, or move it down): {found}"


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
