"""`tt.load`, `tt.store` and the atomics; the bounds checks themselves live in memory.py.

Masked-off lanes never touch memory: a load gives them `other`, or 0 where there is none (Triton leaves
them undefined). Atomics apply lane after lane in element order and return the old values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.ops import tt
from ...ir.types import element_type
from .dtypes import LOW_FLOATS, float_math, memory_dtype, numpy_dtype, shape, signed, unsigned


def _pointee(op) -> np.dtype:
    return memory_dtype(element_type(op.ptr.type).pointee)


def eval_load(op, ctx):
    memory, site = ctx.memory, ctx.site(op, "load")
    source, dtype = _pointee(op), numpy_dtype(op.result.type)
    result_shape = shape(op.result.type)
    as_bool = dtype == np.bool_

    def load(ptr, mask=None, other=None):
        values, active = memory.load(ptr, mask, source, site)
        if active is not None:
            full = np.empty(active.shape, source)
            full[...] = 0 if other is None else np.broadcast_to(other, result_shape).reshape(-1)
            full[active] = values
            values = full
        values = values.reshape(result_shape)
        return (values != 0)[()] if as_bool else values[()]

    if op.mask is None and op.other is not None:
        return lambda ptr, other: load(ptr, None, other)
    return load


def eval_store(op, ctx):
    memory, site, target = ctx.memory, ctx.site(op, "store"), _pointee(op)

    def store(ptr, value, mask=None):
        memory.store(ptr, value, mask, target, site)

    return store


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype in LOW_FLOATS


def _integer(fn: Callable, view: Callable, dtype: np.dtype) -> Callable:
    """`fn` on values read as signed or unsigned integers; on floats, the NaN-ignoring float op."""
    if _is_float(dtype):
        return float_math(np.fmax if fn is np.maximum else np.fmin, dtype)
    return lambda old, value: np.asarray(fn(view(old), view(value))).view(old.dtype)


# Read-modify-write kinds as (old, value) -> new on the pointee dtype.
RMW: dict[str, Callable[[np.dtype], Callable]] = {
    "add": lambda dtype: float_math(np.add, dtype) if _is_float(dtype) else np.add,
    "fadd": lambda dtype: float_math(np.add, dtype),
    "max": lambda dtype: _integer(np.maximum, signed, dtype),
    "min": lambda dtype: _integer(np.minimum, signed, dtype),
    "umax": lambda dtype: _integer(np.maximum, unsigned, dtype),
    "umin": lambda dtype: _integer(np.minimum, unsigned, dtype),
    "fmax": lambda dtype: float_math(np.fmax, dtype),
    "fmin": lambda dtype: float_math(np.fmin, dtype),
    "and": lambda dtype: np.bitwise_and,
    "or": lambda dtype: np.bitwise_or,
    "xor": lambda dtype: np.bitwise_xor,
    "xchg": lambda dtype: lambda old, value: value,
}


def _lanes(value, ptr, dtype: np.dtype) -> np.ndarray:
    """`value` broadcast to the pointer's shape, flat, in the pointee dtype."""
    return np.broadcast_to(np.asarray(value), np.shape(ptr)).reshape(-1).astype(dtype)


def eval_atomic_rmw(op, ctx):
    memory, site = ctx.memory, ctx.site(op, "atomic")
    target, dtype = _pointee(op), numpy_dtype(op.result.type)
    combine = RMW[op.kind](target)

    def atomic_rmw(ptr, value, mask=None):
        values = _lanes(value, ptr, target)
        old = memory.atomic(
            ptr,
            mask,
            target,
            site,
            lambda before, lanes: np.asarray(combine(before, values[lanes])).astype(target),
        )
        return old.astype(dtype)[()]

    return atomic_rmw


def eval_atomic_cas(op, ctx):
    """Compares bit patterns, so a float CAS works on NaN and -0.0 as the hardware does."""
    memory, site = ctx.memory, ctx.site(op, "atomic")
    target, dtype = _pointee(op), numpy_dtype(op.result.type)

    def atomic_cas(ptr, compare, value):
        compares, values = _lanes(compare, ptr, target), _lanes(value, ptr, target)

        def swap(before, lanes):
            equal = unsigned(before) == unsigned(compares[lanes])
            return np.where(equal, values[lanes], before)

        return memory.atomic(ptr, None, target, site, swap).astype(dtype)[()]

    return atomic_cas


EVALUATORS = {
    tt.LoadOp: eval_load,
    tt.StoreOp: eval_store,
    tt.AtomicRMWOp: eval_atomic_rmw,
    tt.AtomicCASOp: eval_atomic_cas,
}
