"""`--compare triton`: the same kernel source compiled and launched by Triton, its stages and its time.

The kernel's language is Triton's, so we re-create the function from its own source in a namespace
where `tl` is `triton.language` (and `tw` is `triton`): the source is exec'd under a linecache-registered
file name, which is what `triton.jit` reads back. `@jit` helpers it calls are converted the same way.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import textwrap
import types
from typing import Any

from ..backends import is_gpu
from .report import TritonResult
from .timing import bench

TRITON_STAGES = ("ttir", "ttgir", "llir", "ptx")


def _python_function(kernel: Any):
    """The plain Python function under a JITFunction / Autotuner / Heuristics chain."""
    fn = kernel
    for _ in range(8):
        if isinstance(fn, types.FunctionType):
            return fn
        fn = getattr(fn, "fn", None)
    raise TypeError(f"cannot find the Python function of {kernel!r}")


def _is_jit(value: Any) -> bool:
    return type(value).__module__.startswith("tileworkbench.runtime") and hasattr(value, "fn")


def _translate(value: Any, memo: dict[int, Any]) -> Any:
    """tileworkbench modules -> triton modules, tileworkbench @jit functions -> triton.jit ones."""
    import triton
    import triton.language as triton_lang

    if isinstance(value, types.ModuleType):
        if value.__name__ == "tileworkbench.language":
            return triton_lang
        if value.__name__ == "tileworkbench":
            return triton
        if value.__name__.startswith("tileworkbench.language."):
            return getattr(triton_lang, value.__name__.rsplit(".", 1)[1], value)
    if _is_jit(value):
        return to_triton(value, memo)
    return value


def to_triton(kernel: Any, memo: dict[int, Any] | None = None):
    """A `triton.jit` function with `kernel`'s source, its globals translated to Triton's."""
    import triton

    memo = {} if memo is None else memo
    if id(kernel) in memo:
        return memo[id(kernel)]
    fn = _python_function(kernel)
    source = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(source)
    func_def = tree.body[0]
    # Drop the decorators: the text from the `def` line on is the function.
    body = "\n".join(source.splitlines()[func_def.lineno - 1 :]) + "\n"
    digest = hashlib.sha1(body.encode()).hexdigest()[:10]
    filename = f"<tileworkbench-triton-{fn.__name__}-{digest}>"
    linecache.cache[filename] = (len(body), None, body.splitlines(True), filename)
    namespace: dict[str, Any] = dict(fn.__globals__)
    memo[id(kernel)] = None  # recursion guard for self-reference
    # Translate only the globals the kernel names (modules, @jit helpers); the rest is left as is.
    for name in _global_names(fn.__code__):
        if name in namespace:
            namespace[name] = _translate(namespace[name], memo)
    exec(compile(body, filename, "exec"), namespace)  # noqa: S102 - the user's own kernel source
    result = triton.jit(namespace[fn.__name__])
    memo[id(kernel)] = result
    return result


def _global_names(code: types.CodeType) -> set[str]:
    """Global names a function's code (and its nested code objects) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


class _PointerArg:
    """A CuPy array seen by Triton: `data_ptr()` and a dtype whose name Triton knows."""

    def __init__(self, array: Any):
        self.array = array
        self.dtype = array.dtype

    def data_ptr(self) -> int:
        return int(self.array.__cuda_array_interface__["data"][0])


def _triton_args(args: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in args.items():
        if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "data_ptr"):
            try:
                import torch

                value = torch.as_tensor(value, device="cuda")
            except ImportError:
                value = _PointerArg(value)
        out[name] = value
    return out


def compare_with_triton(record: Any, rep_ms: int = 100) -> TritonResult:
    """Compile and time `record`'s kernel with Triton on the same arguments and grid."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return TritonResult(error="Triton is not installed (pip install triton)")
    if not is_gpu(record.target):
        return TritonResult(
            error=f"--compare triton needs a GPU launch (this one ran on the {record.target} target)"
        )
    try:
        kernel = to_triton(
            getattr(record.kernel, "fn", record.kernel)
            if hasattr(record.kernel, "configs")
            else record.kernel
        )
        args = _triton_args(record.args)
        grid = tuple(record.grid)
        compiled = kernel[grid](**args)
        asm = {k: compiled.asm[k] for k in TRITON_STAGES if k in compiled.asm}
        timing = bench(lambda: kernel[grid](**args), rep_ms, on_gpu=True)
        return TritonResult(asm=asm, timing=timing)
    except Exception as exc:  # noqa: BLE001 - Triton's failure is a result to show, not to raise
        return TritonResult(error=f"{type(exc).__name__}: {exc}")
