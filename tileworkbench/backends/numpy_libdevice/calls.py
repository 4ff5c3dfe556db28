"""A libdevice call as one NumPy function of its arguments, rounded to the result's dtype: what the
interpreter evaluates for `tt.extern_elementwise` and what the cpu target's host callbacks run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...dtypes import TABLE as DTYPES
from .functions import lookup

# every float dtype of the table, bf16 and fp8 (ml_dtypes, not NumPy's float kind) included
_FLOATS = frozenset(row.numpy_dtype for row in DTYPES if row.is_float)


def _widen(value) -> np.ndarray:
    """Float arguments as float64 (libdevice math is then rounded once); others unchanged."""
    array = np.asarray(value)
    if array.dtype.kind == "f" or array.dtype in _FLOATS:
        return array.astype(np.float64)
    return array


def extern_function(symbol: str, dtype: np.dtype) -> Callable | None:
    """libdevice's `symbol` with results of `dtype`, or None where there is no NumPy version.

    Float functions run in float64 and round to `dtype`; "native" ones (nextafter) run in the
    argument type; predicates and integer functions convert their result to `dtype`.
    """
    found = lookup(symbol)
    if found is None:
        return None
    fn, family = found
    if family == "exact":  # explicitly rounded: computed from the arguments' own values
        return lambda *args: np.asarray(fn(*args)).astype(dtype)[()]
    if family in ("float", "predicate"):
        return lambda *args: np.asarray(fn(*map(_widen, args))).astype(dtype)[()]
    return lambda *args: np.asarray(fn(*args)).astype(dtype)[()]
