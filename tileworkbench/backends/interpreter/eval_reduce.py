"""`tt.reduce`, `tt.scan` and `tt.dot`.

A combine region that is one known op (addf, maxnumf, xori, ...) becomes a NumPy ufunc reduce or
accumulate. Any other combine (argmax's compare-and-select, a user's function) is evaluated on whole
slices: reductions as a tree that combines neighbours (x[0::2], x[1::2]), scans as Hillis-Steele
doublings. Both only regroup, never reorder, so an associative combine gives Triton's answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.ops import arith, tt
from .dtypes import F32, LOW_FLOATS, numpy_dtype, signed, unsigned, value_scale

# Combine ops with a ufunc, and how their operands are read (None: as they are).
COMBINE_UFUNCS: dict[type, tuple[np.ufunc, Callable | None]] = {
    arith.AddFOp: (np.add, None),
    arith.AddIOp: (np.add, None),
    arith.MulFOp: (np.multiply, None),
    arith.MulIOp: (np.multiply, None),
    arith.MaxNumFOp: (np.fmax, None),
    arith.MinNumFOp: (np.fmin, None),
    arith.MaximumFOp: (np.maximum, None),
    arith.MinimumFOp: (np.minimum, None),
    arith.MaxSIOp: (np.maximum, signed),
    arith.MinSIOp: (np.minimum, signed),
    arith.MaxUIOp: (np.maximum, unsigned),
    arith.MinUIOp: (np.minimum, unsigned),
    arith.AndIOp: (np.bitwise_and, None),
    arith.OrIOp: (np.bitwise_or, None),
    arith.XOrIOp: (np.bitwise_xor, None),
}


def _known_combine(op) -> tuple[np.ufunc, Callable | None] | None:
    """The ufunc of a one-source combine region `%r = <op> %a, %b; return %r`, if it is one."""
    block = op.combine.block
    if len(op.srcs) != 1 or len(block.ops) != 2:
        return None
    inner, terminator = block.ops
    known = COMBINE_UFUNCS.get(type(inner))
    if known is None or list(terminator.operands) != [inner.result]:
        return None
    if {id(v) for v in inner.operands} != {id(a) for a in block.args}:
        return None
    return known


def _ufunc_method(method: str, ufunc: np.ufunc, view: Callable | None, dtype: np.dtype):
    """`ufunc.reduce` / `ufunc.accumulate` along an axis in `dtype` (bf16/fp8 via float32)."""
    apply = getattr(ufunc, method)
    if dtype in LOW_FLOATS:
        return lambda x, axis: apply(np.asarray(x).astype(F32), axis=axis).astype(dtype)
    if view is not None:
        return lambda x, axis: np.asarray(apply(view(x), axis=axis)).view(dtype)
    if dtype == np.bool_:  # i1 arithmetic wraps: add is xor, mul is and (NumPy's bool add counts)
        apply = getattr(
            {np.add: np.logical_xor, np.multiply: np.logical_and}.get(ufunc, ufunc), method
        )
        return lambda x, axis: apply(x, axis=axis)
    return lambda x, axis: apply(
        x, axis=axis, dtype=dtype
    )  # keep small ints wrapping in their type


def _region_combine(op, ctx) -> Callable[[list, list], list]:
    """The combine region as a function of (accumulated values, new values) on whole slices."""
    body = ctx.compile_block(op.combine.block)
    dtypes = [numpy_dtype(v.type) for v in op.srcs]

    def combine(left: list, right: list) -> list:
        out = body([*left, *right])
        return [np.broadcast_to(np.asarray(v, d), np.shape(left[0])) for v, d in zip(out, dtypes)]

    return combine


def _tree_reduce(values: list, combine) -> list:
    """Reduce the last axis by combining neighbours, keeping an odd element for the next level."""
    while values[0].shape[-1] > 1:
        n = values[0].shape[-1]
        even = n - n % 2
        merged = combine([v[..., 0:even:2] for v in values], [v[..., 1:even:2] for v in values])
        if n % 2:
            merged = [np.concatenate((m, v[..., -1:]), axis=-1) for m, v in zip(merged, values)]
        values = merged
    return [v[..., 0] for v in values]


def _hillis_steele(values: list, combine) -> list:
    """Inclusive scan along the last axis in log2(n) whole-slice steps."""
    n = values[0].shape[-1]
    step = 1
    while step < n:
        merged = combine([v[..., : n - step] for v in values], [v[..., step:] for v in values])
        values = [np.concatenate((v[..., :step], m), axis=-1) for v, m in zip(values, merged)]
        step *= 2
    return values


def eval_reduce(op, ctx):
    ndim = len(op.srcs[0].type.shape)
    axis = op.axis % ndim
    known = _known_combine(op)
    if known is not None:
        reduce = _ufunc_method("reduce", *known, numpy_dtype(op.srcs[0].type))
        return lambda x: reduce(x, axis)[()]
    combine = _region_combine(op, ctx)
    single = len(op.results) == 1

    def reduce_region(*srcs):
        out = _tree_reduce([np.moveaxis(np.asarray(s), axis, -1) for s in srcs], combine)
        out = [o[()] for o in out]
        return out[0] if single else out

    return reduce_region


def eval_scan(op, ctx):
    axis = op.axis % len(op.srcs[0].type.shape)
    known = _known_combine(op)
    reverse = op.reverse
    if known is not None:
        accumulate = _ufunc_method("accumulate", *known, numpy_dtype(op.srcs[0].type))
        if reverse:
            return lambda x: np.flip(accumulate(np.flip(x, axis), axis), axis)
        return lambda x: accumulate(x, axis)
    combine = _region_combine(op, ctx)
    single = len(op.results) == 1

    def scan_region(*srcs):
        moved = [np.moveaxis(np.asarray(s), axis, -1) for s in srcs]
        if reverse:
            moved = [np.flip(m, -1) for m in moved]
        out = _hillis_steele(moved, combine)
        if reverse:
            out = [np.flip(o, -1) for o in out]
        out = [np.moveaxis(o, -1, axis) for o in out]
        return out[0] if single else out

    return scan_region


def eval_dot(op, ctx):
    """`a @ b + c` with float32 products and sums for f16/bf16/fp8/f32 inputs (so "tf32" is computed at
    full float32 precision, more exactly than the GPU), float64 for f64, and int32 for int8."""
    a_dtype = numpy_dtype(op.a.type)
    result = numpy_dtype(op.result.type)
    if a_dtype == np.float64:
        compute = np.dtype(np.float64)
    elif a_dtype.kind in "iu":
        compute = np.dtype(np.int64) if a_dtype.itemsize >= 4 else np.dtype(np.int32)
    else:
        compute = F32

    scale = value_scale(op.a.type) * value_scale(op.b.type)  # fp8e4b15 operands (a power of two)

    def dot(a, b, c):
        product = np.matmul(np.asarray(a).astype(compute), np.asarray(b).astype(compute))
        if scale != 1.0:
            product = product * compute.type(scale)
        return (product + np.asarray(c).astype(compute)).astype(result)

    return dot


EVALUATORS = {
    tt.ReduceOp: eval_reduce,
    tt.ScanOp: eval_scan,
    tt.DotOp: eval_dot,
}
