"""Load one of Triton's tutorials (python/tutorials in triton-lang/triton) against tileworkbench.

Only the imports change: `import triton` -> `import tileworkbench as triton`, `import triton.language as
tl` -> `import tileworkbench.language as tl`, `from triton.X import Y` -> `from tileworkbench.X import Y`.
The module then runs its imports, kernels, wrappers, classes and the module-level values they use; the
demo and benchmark statements at module level (prints, `benchmark.run(...)`, full-size test calls,
`if __name__ == "__main__":`) are left out, because the checks call the wrappers at small sizes.
The tutorial files are never part of this repository: the folder named by TRITON_TUTORIALS_DIR holds them.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import types
from pathlib import Path

ENV_VAR = "TRITON_TUTORIALS_DIR"

TUTORIALS = (
    "01-vector-add.py",
    "02-fused-softmax.py",
    "03-matrix-multiplication.py",
    "04-low-memory-dropout.py",
    "05-layer-norm.py",
    "06-fused-attention.py",
    "07-extern-functions.py",
    "08-grouped-gemm.py",
    "09-persistent-matmul.py",
    "10-block-scaled-matmul.py",
    "11-programmatic-dependent-launch.py",
)

# Triton modules that tileworkbench does not have and the tutorials only use outside their
# kernels (09 and 10 profile their benchmarks with proton): bound to a stand-in that names the
# module when used.
UNAVAILABLE_MODULES = ("triton.profiler",)
# Triton's C++ bindings: 09 takes cuBLAS from them as its reference BLAS (no kernel compiling). They
# come from the real Triton where it is installed (the GPU machine), else a stand-in like the above.
FOREIGN_MODULES = ("triton._C",)


def tutorials_dir() -> Path | None:
    """The folder of tutorial files from TRITON_TUTORIALS_DIR, or None when unset or missing."""
    value = os.environ.get(ENV_VAR)
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_dir() else None


def tutorial_or_skip(name: str) -> Path:
    """The path of Triton's tutorial `name` (e.g. "06-fused-attention.py"); the calling test skips
    where torch (which every tutorial imports) or the file is missing."""
    import pytest

    pytest.importorskip("torch", reason="Triton's tutorials import torch")
    folder = tutorials_dir()
    if folder is None or not (folder / name).is_file():
        pytest.skip(f"{ENV_VAR} does not name a folder holding {name} (not in this repo)")
    return folder / name


# -- the import rewrite ---------------------------------------------------------------------------------


def _rewrite_import(node: ast.stmt, line: str) -> str:
    """The source line of one import statement, with `triton` replaced by tileworkbench."""
    indent = line[: len(line) - len(line.lstrip())]
    if isinstance(node, ast.ImportFrom):
        if (node.module or "").startswith(FOREIGN_MODULES):
            return indent + "; ".join(
                f"{alias.asname or alias.name} = _foreign_import({node.module!r}, {alias.name!r})"
                for alias in node.names
            )
        if node.module == "triton" or (node.module or "").startswith("triton."):
            head, _, tail = line.partition("triton")
            return head + "tileworkbench" + tail
        return line
    parts = []
    for alias in node.names:
        name = alias.name
        if name.split(".")[0] == "triton" and name.startswith(UNAVAILABLE_MODULES):
            bound = alias.asname or name.split(".")[0]
            parts.append(f"{bound} = _unavailable_module({name!r})")
        elif name != "triton" and not name.startswith("triton."):
            parts.append(f"import {name}" + (f" as {alias.asname}" if alias.asname else ""))
        elif alias.asname:
            parts.append(f"import tileworkbench{name[len('triton') :]} as {alias.asname}")
        else:  # `import triton.x.y` binds `triton`: import the submodule, then bind the package
            if name != "triton":
                parts.append(f"import tileworkbench{name[len('triton') :]}")
            parts.append("import tileworkbench as triton")
    return indent + "; ".join(parts)


def rewrite_imports(source: str) -> str:
    """`source` with every import of `triton` (or a submodule) made an import of tileworkbench.

    Only one-line import statements are rewritten (every import in Triton's tutorials is one); line
    numbers are kept, so tracebacks and kernel locations point at the tutorial's own lines.
    """
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        index = node.lineno - 1
        text = lines[index].rstrip("\n")
        if node.end_lineno != node.lineno:  # `from triton.x import (\n a,\n b)`
            head, _, tail = text.partition("triton")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
                lines[index] = head + "tileworkbench" + tail + "\n"
            continue
        rewritten = _rewrite_import(node, text)
        if rewritten != text:
            lines[index] = rewritten + "\n"
    return "".join(lines)


# -- which module-level statements run ------------------------------------------------------------------


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


def _is_benchmark(node: ast.stmt) -> bool:
    """A `@triton.testing.perf_report(...)` function: the GPU benchmark, not run here."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any("perf_report" in ast.unparse(decorator) for decorator in node.decorator_list)


def _defined(node: ast.stmt) -> set[str]:
    names: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in child.names)
    return names


def _used(node: ast.stmt) -> set[str]:
    """Global names `node` reads. In a function or class, names bound inside it (parameters, local
    assignments) are not globals, so a wrapper's local `a` does not pull in a module-level `a`."""
    loaded = {
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)
    }
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return loaded
    local: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.arg):
            local.add(child.arg)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            local.add(child.id)
        elif isinstance(child, (ast.FunctionDef, ast.ClassDef)) and child is not node:
            local.add(child.name)
    outer = {
        child.id
        for part in getattr(node, "decorator_list", [])
        for child in ast.walk(part)
        if isinstance(child, ast.Name)
    }
    return (loaded - local) | outer


def select_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module-level statements to run: kernels, wrappers, classes (not benchmarks), every
    assignment, `if` or `for` that defines a name they use (transitively), and the imports of names
    they use; no bare expression statements (prints, demo calls, `benchmark.run`), no
    `if __name__ == "__main__":`, and no import only those used (04's `tabulate`: a module the
    machine may not have)."""
    body = tree.body
    always = (ast.Try, ast.FunctionDef, ast.ClassDef)
    keep = [isinstance(n, always) and not _is_benchmark(n) for n in body]
    imports = [isinstance(n, (ast.Import, ast.ImportFrom)) for n in body]
    optional = [
        isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.For))
        and not _is_main_guard(n)
        for n in body
    ]
    for index, node in enumerate(body):  # UPPER_CASE constants (DEVICE, TORCH_HAS_FP8) are config
        if (
            optional[index]
            and isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        ):
            keep[index] = True
    needed: set[str] = set()
    for node, kept in zip(body, keep):
        if kept:
            needed |= _used(node)
    changed = True
    while changed:
        changed = False
        for index, node in enumerate(body):
            if optional[index] and not keep[index] and _defined(node) & needed:
                keep[index] = True
                needed |= _used(node)
                changed = True
    for index, node in enumerate(body):  # imports that only the left-out demo code used go too
        keep[index] = keep[index] or (imports[index] and bool(_defined(node) & needed))
    return [node for node, kept in zip(body, keep) if kept]


# -- loading ------------------------------------------------------------------------------------------


class _UnavailableModule:
    """Stands for a Triton module tileworkbench lacks: any attribute use raises, naming it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str):
        raise NotImplementedError(
            f"{self._name}.{attribute}: {self._name} is Triton's, not part of tileworkbench"
        )


def _foreign_import(module: str, name: str):
    """`from module import name` from the real Triton, or a stand-in naming it without Triton."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return _UnavailableModule(f"{module}.{name}")


def load_tutorial(path: Path | str, original: bool = False) -> types.ModuleType:
    """Rewrite the imports of the tutorial at `path` and run its definitions as a new module
    (`original`: keep `triton` as it is, for timing Triton's own kernels beside ours).

    The rewritten text is registered in `linecache` under the file's own path, so `inspect.getsource`
    (which the frontend uses) and tracebacks see exactly what ran.
    """
    path = Path(path)
    source = path.read_text() if original else rewrite_imports(path.read_text())
    filename = str(path.resolve()) + (" (original)" if original else "")  # one linecache entry each
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source, filename)
    module_tree = ast.Module(body=select_statements(tree), type_ignores=[])
    name = ("original_" if original else "triton_tutorial_") + path.stem.replace("-", "_")
    module = types.ModuleType(name)
    module.__file__ = filename
    module._unavailable_module = _UnavailableModule
    module._foreign_import = _foreign_import
    # how a compile worker (tileworkbench/runtime/parallel_compile.py) makes this module again
    module.__tileworkbench_rebuild__ = (__name__, "load_tutorial", [str(path), original])
    sys.modules[name] = module  # dataclasses, pickling and inspect look modules up by name
    exec(compile(module_tree, filename, "exec"), module.__dict__)  # noqa: S102 (running it is the point)
    return module


def jit_function(kernel):
    """The `JITFunction` under a tutorial kernel's `@autotune` / `@heuristics` wrappers, to launch or
    compile at chosen configs."""
    from tileworkbench.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction):
        kernel = kernel.fn
    return kernel
