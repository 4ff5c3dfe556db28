"""libdevice functions the host has no native version of (no LLVM intrinsic, no C-library namesake:
erfinv, the Bessel I functions, sinpi, mulhi, the `_rz`/`_ru`/`_rd` rounded arithmetic, ...) run as
calls back into the NumPy implementation the interpreter runs too (backends/numpy_libdevice), one
lane at a time: the same values as the interpreter, at Python speed (microseconds per element).

The call's symbol names the function and its Tile IR types, `tw_host.<symbol>.<result>.<args...>`,
so a kernel loaded from the cache binds its callbacks from its LLVM text alone (`bind_calls_in`).
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ...dtypes import BY_IR, TABLE
from ..numpy_libdevice import extern_function, lookup

PREFIX = "tw_host."


def _ctypes_type(row):
    """The ctypes type of a table row's NumPy dtype; None where ctypes has none (fp16, bf16, fp8)
    or the value would cross as a byte of 0 or 1 (i1)."""
    try:
        return np.ctypeslib.as_ctypes_type(row.numpy_dtype) if row.bits >= 8 else None
    except NotImplementedError:
        return None


# IR type name -> the ctypes type its values cross the callback as (f32, f64 and the integers)
_CTYPES = {row.ir: _ctypes_type(row) for row in TABLE if _ctypes_type(row) is not None}
_BOUND: dict[str, object] = {}  # symbol -> its ctypes callback (kept alive for the process)
_NAME = re.compile(r'@"?(' + re.escape(PREFIX) + r'[\w.]+?)"?\(')


def symbol_for(extern: str, result: str, args: list[str]) -> str | None:
    """The callback's symbol for libdevice's `extern` on these Tile IR types, bound and ready; None
    when NumPy has no implementation or a type does not cross ctypes (fp16, i1)."""
    if lookup(extern) is None or any(t not in _CTYPES for t in [result, *args]):
        return None
    symbol = ".".join([PREFIX.rstrip("."), extern, result, *args])
    _bind(symbol)
    return symbol


def bind_calls_in(llvm_text: str) -> None:
    """Bind every callback a kernel's LLVM IR calls (a kernel loaded from the cache)."""
    for symbol in set(_NAME.findall(llvm_text)):
        _bind(symbol)


def _bind(symbol: str) -> None:
    if symbol in _BOUND:
        return
    from . import codegen

    _, extern, result, *args = symbol.split(".")
    compute = extern_function(extern, BY_IR[result].numpy_dtype)  # rounded as the interpreter does
    arg_dtypes = [np.dtype(BY_IR[t].numpy) for t in args]

    def call(*raw):
        values = [np.array(v, dtype=dt)[()] for v, dt in zip(raw, arg_dtypes)]
        return np.asarray(compute(*values)).item()

    callback = ctypes.CFUNCTYPE(_CTYPES[result], *(_CTYPES[t] for t in args))(call)
    _BOUND[symbol] = callback
    codegen.binding().add_symbol(symbol, ctypes.cast(callback, ctypes.c_void_p).value)
