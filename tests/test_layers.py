"""The package's layers, read from its imports (ast, imports inside functions included, those under
`if TYPE_CHECKING:` left out): no import cycle and no import across a layer boundary beyond the
few listed below, each with the reason it is still there. A new cycle or a new crossing fails;
fix it (docs/ARCHITECTURE.md says where each thing lives) rather than adding it to a list.

The layers, lowest first: `ir`, `language`, `dtypes`/`errors`/`config`/`launch_checks` ->
`frontend`, `passes` -> `cuda` (device queries, argument marshalling, the CuPy launcher) ->
`backends` (the registry, the shared `backends/llvm` and `backends/numpy_libdevice`, then each
backend) -> `runtime` -> `workbench` -> the package root and `cli`.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tileworkbench"
NAMED_BACKENDS = ("interpreter", "nvptx", "cpu")  # the registry's built-ins
# code under backends/ that several backends share: the LLVM lowering (NVPTX, cpu) and libdevice
# in NumPy (interpreter, cpu); it names no backend
SHARED = ("llvm", "numpy_libdevice")

# Cycles still open, each a set of modules (a cycle inside one of these is allowed too).
ALLOWED_CYCLES = [
    # the frontend's AST visitor and its call/expression/statement handlers call each other
    {"frontend.calls", "frontend.codegen", "frontend.descriptors", "frontend.expressions",
     "frontend.reductions", "frontend.statements"},
]

# (importer, imported) pairs that still cross a layer, to be moved where they belong (none now).
ALLOWED_CROSSINGS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        out[name.removesuffix(".__init__") if name != "__init__" else ""] = path
    return out


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return (name or "").removeprefix("tileworkbench").removeprefix(".")
    parts = module.split(".") if module else []
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _known(target: str, modules: dict[str, Path]) -> str | None:
    while target not in modules:
        if "." not in target:
            return "" if target == "" else None
        target = target.rpartition(".")[0]
    return target


@functools.cache
def _graph() -> dict[str, set[str]]:
    return _imports(_modules())


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports ("" is the package root)."""
    return {module: _imports_of(module, path, modules) for module, path in modules.items()}


def _imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "tileworkbench"]
            targets = [t.removeprefix("tileworkbench").removeprefix(".") for t in names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] != "tileworkbench":
                continue
            base = _resolve(module, is_package, node.level, node.module)
            # `from . import x` names a submodule, or else a name the package defines
            subs = [f"{base}.{a.name}" if base else a.name for a in node.names]
            targets = [t for t in subs if t in modules] or [base]
        else:
            continue
        for target in targets:
            hit = _known(target, modules)
            if hit is None or hit == module:
                continue
            if hit == "":  # the package root: `import tileworkbench`, `from .. import name`
                if module:
                    found.add("")
            elif not module.startswith(hit + "."):  # a package's parents come with it
                found.add(hit)
    return found


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def _layer(module: str) -> str:
    return module.split(".")[0] if module else "root"


def _backend(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "backends" else None


_BELOW_CUDA = ("frontend", "passes", "ir", "language")


def _crossings(edges: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """(importer, imported, the rule it breaks) for every import across a layer boundary."""
    out = []
    for module, targets in edges.items():
        layer, own = _layer(module), _backend(module)
        for target in sorted(targets):
            other = _backend(target)
            if layer in ("runtime", "workbench") and other is not None:
                out.append((module, target, "runtime/ and workbench/ ask the registry"))
            elif own is not None and other is not None and other != own:
                if own not in SHARED and other not in SHARED:
                    out.append((module, target, "a backend imports no other backend"))
                elif own in SHARED and other not in SHARED:
                    out.append((module, target, "shared backend code names no backend"))
            if layer not in ("workbench", "root", "cli") and _layer(target) == "workbench":
                out.append((module, target, "nothing below the workbench imports it"))
            if layer in ("backends", "cuda", "frontend", "passes", "ir", "language") and \
                    _layer(target) == "runtime":
                out.append((module, target, "no backend (or lower layer) imports the runtime"))
            if layer in ("cuda", *_BELOW_CUDA) and _layer(target) == "backends":
                out.append((module, target, "the CUDA layer and those below import no backend"))
            if layer in _BELOW_CUDA and _layer(target) == "cuda":
                out.append((module, target, "nothing below the CUDA layer imports it"))
            if layer not in ("root", "cli", "workbench") and target == "":
                out.append((module, target, "nothing below the workbench imports the package root"))
    return out


def test_the_import_graph_is_read():
    """The reader sees the imports the rules are about (a broken reader would pass every rule)."""
    edges = _graph()
    assert "backends.llvm.values" in edges["backends.llvm.lowering.arith"]
    assert "backends.llvm.lowering.tma" in edges["backends.llvm.lower"]  # inside a function
    assert "backends" in edges["runtime.compiler"]
    assert "" in edges["workbench.fma_kernel"]  # `import tileworkbench as tw`
    assert "workbench.magic" in edges[""]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]


def test_no_new_import_cycle():
    """Counted as /work/shared/tools/import_cycles.py --all counts them: the package root, which
    every module's import runs first anyway, is left out (the crossing rules check who imports
    it)."""
    edges = {m: {t for t in targets if t} for m, targets in _graph().items() if m}
    cycles = _cycles(edges)
    new = [sorted(c) for c in cycles if not any(c <= allowed for allowed in ALLOWED_CYCLES)]
    assert not new, f"import cycles (imports inside functions count): {new}"


def test_no_new_layer_crossing():
    crossings = _crossings(_graph())
    new = [c for c in crossings if (c[0], c[1]) not in ALLOWED_CROSSINGS]
    assert not new, "imports across layers:\n" + "\n".join(
        f"  {a} -> {b or 'tileworkbench'}: {why}" for a, b, why in new)


def test_the_shared_lowering_is_apart_from_nvptx():
    """backends/llvm is what NVPTX and cpu share: the lowering rules import `TVal` from values.py,
    not from the driver that imports them, and the cpu backend imports nothing of nvptx."""
    edges = _graph()
    for module, targets in edges.items():
        if module.startswith("backends.llvm.lowering."):
            assert "backends.llvm.lower" not in targets, module
        if module.startswith("backends.cpu"):
            assert not any(t.startswith("backends.nvptx") for t in targets), module
