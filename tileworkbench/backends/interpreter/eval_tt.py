"""`tt` ops that are not memory, reductions or math: program ids, ranges, shape ops, pointer arithmetic,
hints, and the debugging ops (device_print, device_assert, assume)."""

from __future__ import annotations

import numpy as np

from ...errors import InterpreterError
from ...ir.ops import tt
from ...ir.types import PointerType, element_type
from .dtypes import memory_dtype, numpy_dtype, shape, unsigned


def eval_func(op: tt.FuncOp, ctx):
    """The kernel body as a function of the parameter values (used by the executor, once per program)."""
    return ctx.compile_block(op.body.block)


def eval_terminator(op, ctx):
    """Terminators pass values to their parent; `Program.compile_block` reads them directly."""
    raise InterpreterError(f"{op.name} outside the end of a block (kernel '{ctx.kernel}')")


def eval_get_program_id(op, ctx):
    memory, axis = ctx.memory, op.axis
    return lambda: np.int32(memory.pid[axis])


def eval_get_num_programs(op, ctx):
    count = np.int32(ctx.grid[op.axis])
    return lambda: count


def eval_make_range(op, ctx):
    values = np.arange(op.start, op.end, dtype=np.int32)
    return lambda: values


# -- shape ops -------------------------------------------------------------------------------------
# Results may be read-only views (broadcast_to, transpose): no evaluator writes into its operands.
def eval_splat(op, ctx):
    result_shape, dtype = shape(op.result.type), numpy_dtype(op.result.type)
    return lambda x: np.broadcast_to(np.asarray(x, dtype), result_shape)


def eval_broadcast(op, ctx):
    result_shape = shape(op.result.type)
    return lambda x: np.broadcast_to(x, result_shape)


def eval_expand_dims(op, ctx):
    axis = op.axis
    return lambda x: np.expand_dims(x, axis)


def eval_reshape(op, ctx):
    """Row-major, also with allow_reorder: any order is allowed there, so keeping it is correct."""
    result_shape = shape(op.result.type)
    return lambda x: np.reshape(x, result_shape)


def eval_trans(op, ctx):
    order = tuple(op.order)
    return lambda x: np.transpose(x, order)


def eval_join(op, ctx):
    return lambda a, b: np.stack((np.asarray(a), np.asarray(b)), axis=-1)


def eval_split(op, ctx):
    return lambda x: (x[..., 0], x[..., 1])


def eval_cat(op, ctx):
    return lambda a, b: np.concatenate((a, b), axis=0)


def eval_gather(op, ctx):
    axis, kernel, where = op.axis, ctx.kernel, ctx.where(op)

    def gather(src, indices):
        size = np.shape(src)[axis]
        bad = (indices < 0) | (indices >= size)
        if np.any(bad):
            raise InterpreterError(
                f"tl.gather index {int(np.asarray(indices)[bad][0])} out of range [0, {size}) "
                f"along axis {axis} in kernel '{kernel}' at {where}, program id {ctx.pid}"
            )
        return np.take_along_axis(src, np.asarray(indices, np.int64), axis)

    return gather


def eval_histogram(op, ctx):
    """Values outside [0, num_bins) are not counted."""
    bins, dtype = shape(op.result.type)[0], numpy_dtype(op.result.type)

    def histogram(x):
        x = np.asarray(x).reshape(-1)
        inside = x[(x >= 0) & (x < bins)].astype(np.int64)
        return np.bincount(inside, minlength=bins)[:bins].astype(dtype)

    return histogram


def eval_sort(op, ctx):
    axis, descending = op.axis, op.descending

    def sort(x):
        ordered = np.sort(x, axis=axis, kind="stable")
        return np.flip(ordered, axis=axis) if descending else ordered

    return sort


def eval_topk(op, ctx):
    k, largest = shape(op.result.type)[-1], op.largest

    def topk(x):
        ordered = np.sort(x, axis=-1, kind="stable")
        return np.flip(ordered, axis=-1)[..., :k] if largest else ordered[..., :k]

    return topk


# -- pointers --------------------------------------------------------------------------------------
def eval_addptr(op, ctx):
    size = memory_dtype(element_type(op.ptr.type).pointee).itemsize

    def addptr(ptr, offset):
        return np.add(ptr, np.multiply(offset, size, dtype=np.int64, casting="unsafe"))

    return addptr


def eval_int_to_ptr(op, ctx):
    return lambda x: np.asarray(x).astype(np.int64)[()]


def eval_ptr_to_int(op, ctx):
    dtype = numpy_dtype(op.result.type)
    return lambda x: np.asarray(x).astype(dtype)[()]


def eval_identity(op, ctx):
    return lambda x: x


def eval_barrier(op, ctx):
    return lambda: None  # programs run one at a time, so every barrier is already satisfied


# -- debugging -------------------------------------------------------------------------------------
def _check(condition, what: str, op, ctx) -> None:
    condition = np.asarray(condition)
    if condition.all():
        return
    failing = tuple(int(i) for i in np.argwhere(~condition.astype(bool))[0])
    index = f", first failing index {failing}" if failing else ""
    raise InterpreterError(
        f"{what} in kernel '{ctx.kernel}' at {ctx.where(op)}\n  program id {ctx.pid}{index}"
    )


def eval_assert(op, ctx):
    what = f"device_assert failed: {op.message}" if op.message else "device_assert failed"
    return lambda condition: _check(condition, what, op, ctx)


def eval_assume(op, ctx):
    what = "tl.assume condition is false (the kernel promised it holds)"
    return lambda condition: _check(condition, what, op, ctx)


def eval_print(op, ctx):
    """One line per element, `pid (x, y, z) idx (i, j) <prefix><value>`, formatted as the GPU's printf
    lowering does (%f for floats, %x with hex=True, %p for pointers), so both targets print alike."""
    prefix, as_hex, stdout = op.prefix, op.hex, ctx.stdout
    formats = [_formatter(element_type(v.type), as_hex) for v in op.args]

    def device_print(*values):
        pid = "({}, {}, {})".format(*ctx.pid)
        if not values:
            stdout(f"pid {pid} {prefix}")
        for value, format_value in zip(values, formats):
            value = np.asarray(value)
            for index in np.ndindex(value.shape):
                idx = ", ".join(str(i) for i in index)
                stdout(f"pid {pid} idx ({idx}) {prefix}{format_value(value[index])}")

    return device_print


def _formatter(element, as_hex: bool):
    if isinstance(element, PointerType):
        return lambda v: hex(int(v))
    if element.is_float:
        return (lambda v: float(v).hex()) if as_hex else (lambda v: f"{float(v):f}")
    if as_hex:
        return lambda v: f"{int(unsigned(v)):x}"
    return lambda v: str(int(v))


EVALUATORS = {
    tt.FuncOp: eval_func,
    tt.ReturnOp: eval_terminator,
    tt.ReduceReturnOp: eval_terminator,
    tt.ScanReturnOp: eval_terminator,
    tt.GetProgramIdOp: eval_get_program_id,
    tt.GetNumProgramsOp: eval_get_num_programs,
    tt.MakeRangeOp: eval_make_range,
    tt.SplatOp: eval_splat,
    tt.BroadcastOp: eval_broadcast,
    tt.ExpandDimsOp: eval_expand_dims,
    tt.ReshapeOp: eval_reshape,
    tt.TransOp: eval_trans,
    tt.JoinOp: eval_join,
    tt.SplitOp: eval_split,
    tt.CatOp: eval_cat,
    tt.GatherOp: eval_gather,
    tt.HistogramOp: eval_histogram,
    tt.SortOp: eval_sort,
    tt.TopKOp: eval_topk,
    tt.AddPtrOp: eval_addptr,
    tt.IntToPtrOp: eval_int_to_ptr,
    tt.PtrToIntOp: eval_ptr_to_int,
    tt.PtrBitcastOp: eval_identity,
    tt.HintOp: eval_identity,
    tt.BarrierOp: eval_barrier,
    tt.AssertOp: eval_assert,
    tt.AssumeOp: eval_assume,
    tt.PrintOp: eval_print,
}
