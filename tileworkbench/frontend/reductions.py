"""Reductions, scans and `tl.dot`: `tt.reduce` / `tt.scan` with their combine regions (built-in combines
or a user `@jit` function inlined into the region), and the typing of dot products."""

from __future__ import annotations

from typing import Callable

from ..errors import TileTypeError
from ..ir import tt
from ..ir.values import Block
from ..language import core
from ..language.core import block_type, tensor
from .calls import arange, constexpr_int, impl, normalize_axis
from .semantics import shape_str, unwrap

Combine = Callable[[object, list[tensor], list[tensor]], list[tensor]]


def _as_list(input) -> tuple[list[tensor], bool]:
    input = unwrap(input)
    if isinstance(input, tuple):
        return list(input), True
    return [input], False


def _prepare(cg, inputs: list[tensor], axis) -> tuple[list[tensor], int]:
    inputs = [cg.sem.to_tensor(x) for x in inputs]
    shape = inputs[0].shape
    if any(x.shape != shape for x in inputs):
        raise TileTypeError("all tiles of a tuple reduction must have one shape")
    if not shape:
        raise TileTypeError("cannot reduce a scalar")
    if unwrap(axis) is None:
        inputs = [cg.sem.reshape(x, (x.numel,)) for x in inputs]
        return inputs, 0
    return inputs, normalize_axis(axis, len(shape))


def _combine_block(cg, op, inputs: list[tensor], combine: Combine, ret_cls) -> None:
    scalars = [x.dtype for x in inputs]
    block = Block([t.to_ir() for t in scalars] * 2)
    lhs = [tensor(a, t) for a, t in zip(block.args[: len(inputs)], scalars)]
    rhs = [tensor(a, t) for a, t in zip(block.args[len(inputs) :], scalars)]
    with cg.builder.at_end(block):
        results = combine(cg, lhs, rhs)
        if len(results) != len(inputs):
            raise TileTypeError(
                f"the combine function returned {len(results)} value(s), expected {len(inputs)}"
            )
        results = [cg.sem.to_tensor(r) for r in results]
        for r, t in zip(results, scalars):
            if r.type != t:
                raise TileTypeError(
                    f"the combine function returned {r.type!r} where {t!r} was expected",
                    hint="cast the combined value back to the input dtype",
                )
        cg.builder.create(ret_cls, values=[r.handle for r in results])
    op.regions[0].add_block(block)


def build_reduce(cg, inputs: list[tensor], axis, combine: Combine, keep_dims=False) -> list[tensor]:
    all_axes = unwrap(axis) is None
    rank = len(cg.sem.to_tensor(inputs[0]).shape)
    inputs, axis = _prepare(cg, inputs, axis)
    shape = inputs[0].shape
    out_shape = shape[:axis] + shape[axis + 1 :]
    out_types = [block_type(x.dtype, out_shape) if out_shape else x.dtype for x in inputs]
    op = cg.builder.create(
        tt.ReduceOp, [t.to_ir() for t in out_types], axis=axis, srcs=[x.handle for x in inputs]
    )
    _combine_block(cg, op, inputs, combine, tt.ReduceReturnOp)
    results = [tensor(r, t) for r, t in zip(op.results, out_types)]
    if unwrap(keep_dims):
        # axis=None with keep_dims: a 1 x ... x 1 tile of the input's rank, as Triton
        results = [
            cg.sem.reshape(r, (1,) * rank) if all_axes else cg.sem.expand_dims(r, axis)
            for r in results
        ]
    return results


def unsplat(cg, x: tensor) -> tensor:
    """The one element of a single-element tile as a scalar (`x.item()`, a one-element `if`
    condition): a reduction that keeps its left operand, which every back end lowers."""
    if not x.shape:
        return x
    if x.numel != 1:
        raise TileTypeError(
            f"expected a tile with one element, got shape {shape_str(x.shape)}",
            hint="reduce it first, e.g. tl.sum(x) or tl.max(x)",
        )
    return build_reduce(cg, [cg.sem.reshape(x, (1,))], 0, lambda cg, lhs, rhs: [lhs[0]])[0]


def build_scan(cg, inputs: list[tensor], axis, combine: Combine, reverse=False) -> list[tensor]:
    inputs = [cg.sem.to_tensor(x) for x in inputs]
    if not inputs[0].shape:
        raise TileTypeError("cannot scan a scalar")
    axis = normalize_axis(axis, len(inputs[0].shape))
    op = cg.builder.create(
        tt.ScanOp,
        [x.handle.type for x in inputs],
        axis=axis,
        srcs=[x.handle for x in inputs],
        reverse=bool(unwrap(reverse)),
    )
    _combine_block(cg, op, inputs, combine, tt.ScanReturnOp)
    return [tensor(r, x.type) for r, x in zip(op.results, inputs)]


def user_combine(fn) -> Combine:
    def combine(cg, lhs, rhs):
        result = cg.call(fn, [*lhs, *rhs], {})
        return list(result) if isinstance(result, tuple) else [result]

    return combine


def _binary_combine(method: str) -> Combine:
    def combine(cg, lhs, rhs):
        return [getattr(cg.sem, method)(lhs[0], rhs[0])]

    return combine


def _minmax_combine(which: str) -> Combine:
    def combine(cg, lhs, rhs):
        return [cg.sem.minmax(which, lhs[0], rhs[0])]

    return combine


def _arg_combine(which: str, tie_break_left: bool) -> Combine:
    """(value, index) pairs: keep the larger (smaller) value, and the lower index on ties."""

    def combine(cg, lhs, rhs):
        (v1, i1), (v2, i2) = lhs, rhs
        better = cg.sem.compare(">" if which == "max" else "<", v1, v2)
        if tie_break_left:
            tie = cg.sem.logical("and", cg.sem.compare("==", v1, v2), cg.sem.compare("<", i1, i2))
            better = cg.sem.logical("or", better, tie)
        if v1.dtype.is_floating():
            # NaN is skipped, as by tl.max and Triton's argmax: the largest (smallest) number wins, and
            # only an all-NaN reduction gives NaN (at its first index).
            sem = cg.sem
            left_nan, right_nan = sem.compare("!=", v1, v1), sem.compare("!=", v2, v2)
            better = sem.logical("and", sem.not_(left_nan), sem.logical("or", right_nan, better))
            both_nan = sem.logical("and", left_nan, right_nan)
            if tie_break_left:
                both_nan = sem.logical("and", both_nan, sem.compare("<", i1, i2))
            better = sem.logical("or", better, both_nan)
        return [cg.sem.where(better, v1, v2), cg.sem.where(better, i1, i2)]

    return combine


def _sum_dtype(dt, requested):
    if unwrap(requested) is not None:
        return unwrap(requested)
    if dt.is_int_signed() and dt.int_bitwidth < 32:
        return core.int32
    if dt.is_int_unsigned() and dt.int_bitwidth < 32:
        return core.uint32
    return dt


@impl("reduce")
def reduce(cg, input, axis, combine_fn, keep_dims=False):
    inputs, is_tuple = _as_list(input)
    results = build_reduce(cg, inputs, axis, user_combine(unwrap(combine_fn)), keep_dims)
    return tuple(results) if is_tuple else results[0]


@impl("sum")
def sum_(cg, input, axis=None, keep_dims=False, dtype=None):
    input = cg.sem.to_tensor(input)
    input = cg.sem.cast(input, _sum_dtype(input.dtype, dtype))
    return build_reduce(cg, [input], axis, _binary_combine("add"), keep_dims)[0]


def _index_tile(cg, input: tensor, axis) -> tuple[tensor, tensor, int]:
    if unwrap(axis) is None:
        input = cg.sem.reshape(input, (input.numel,))
        axis = 0
    axis = normalize_axis(axis, len(input.shape))
    index = arange(cg, 0, input.shape[axis])
    for _ in range(axis):
        index = cg.sem.expand_dims(index, 0)
    for _ in range(len(input.shape) - axis - 1):
        index = cg.sem.expand_dims(index, len(index.shape))
    return input, cg.sem.broadcast_to(index, input.shape), axis


def _minmax(which: str):
    def fn(
        cg,
        input,
        axis=None,
        return_indices=False,
        return_indices_tie_break_left=True,
        keep_dims=False,
    ):
        input = cg.sem.to_tensor(input)
        if input.dtype.is_bf16():  # Triton promotes bf16 first, with or without indices
            input = cg.sem.cast(input, core.float32)
        if unwrap(return_indices):
            input, index, axis = _index_tile(cg, input, axis)
            combine = _arg_combine(which, bool(unwrap(return_indices_tie_break_left)))
            value, idx = build_reduce(cg, [input, index], axis, combine, keep_dims)
            return value, idx
        if (
            input.dtype.primitive_bitwidth < 32
        ):  # as Triton: narrow floats to fp32, narrow ints to int32
            input = cg.sem.cast(input, core.float32 if input.dtype.is_floating() else core.int32)
        return build_reduce(cg, [input], axis, _minmax_combine(which), keep_dims)[0]

    return fn


impl("max")(_minmax("max"))
impl("min")(_minmax("min"))


def _arg(which: str):
    def fn(cg, input, axis, tie_break_left=True, keep_dims=False):
        input, index, axis = _index_tile(cg, cg.sem.to_tensor(input), axis)
        combine = _arg_combine(which, bool(unwrap(tie_break_left)))
        return build_reduce(cg, [input, index], axis, combine, keep_dims)[1]

    return fn


impl("argmax")(_arg("max"))
impl("argmin")(_arg("min"))


def _int_reduce(name: str, method: str):
    def fn(cg, input, axis=None, keep_dims=False):
        input = cg.sem.to_tensor(input)
        if not input.dtype.is_int():
            raise TileTypeError(f"tl.{name} needs integers, got {input.dtype}")
        return build_reduce(cg, [input], axis, _binary_combine(method), keep_dims)[0]

    impl(name)(fn)


_int_reduce("xor_sum", "xor")
_int_reduce("reduce_or", "or_")


@impl("associative_scan")
def associative_scan(cg, input, axis, combine_fn, reverse=False):
    inputs, is_tuple = _as_list(input)
    results = build_scan(cg, inputs, axis, user_combine(unwrap(combine_fn)), reverse)
    return tuple(results) if is_tuple else results[0]


def _bf16_to_fp32(cg, input: tensor) -> tensor:
    """Scans of bf16 combine in fp32 and return fp32, as Triton's cumsum/cumprod: rounding to bf16 at
    every step of a long scan loses a few percent (issue 15)."""
    return cg.sem.cast(input, core.float32) if input.dtype.is_bf16() else input


@impl("cumsum")
def cumsum(cg, input, axis=0, reverse=False, dtype=None):
    input = _bf16_to_fp32(cg, cg.sem.to_tensor(input))
    input = cg.sem.cast(input, _sum_dtype(input.dtype, dtype))
    return build_scan(cg, [input], axis, _binary_combine("add"), reverse)[0]


@impl("cumprod")
def cumprod(cg, input, axis=0, reverse=False):
    input = _bf16_to_fp32(cg, cg.sem.to_tensor(input))
    input = cg.sem.cast(input, _sum_dtype(input.dtype, None))
    return build_scan(cg, [input], axis, _binary_combine("mul"), reverse)[0]


# -- dot ---------------------------------------------------------------------------------------------------

_DOT_INPUTS = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp16", "bf16", "fp32", "fp64", "int8")


@impl("dot")
def dot(
    cg,
    input,
    other,
    acc=None,
    input_precision=None,
    allow_tf32=None,
    max_num_imprecise_acc=None,
    out_dtype=core.float32,
):
    a, b = cg.sem.to_tensor(input), cg.sem.to_tensor(other)
    rank = len(a.shape)
    if rank > 3 and len(b.shape) == rank and a.shape[:-2] == b.shape[:-2]:
        return _batched_dot(
            cg,
            a,
            b,
            unwrap(acc),
            dict(
                input_precision=input_precision,
                allow_tf32=allow_tf32,
                max_num_imprecise_acc=max_num_imprecise_acc,
                out_dtype=out_dtype,
            ),
        )
    if rank not in (2, 3) or len(b.shape) != rank:
        raise TileTypeError(
            f"tl.dot needs two 2-D (or batched 3-D) tiles, got shapes {a.shape} and {b.shape}"
        )
    if a.shape[-1] != b.shape[-2] or (rank == 3 and a.shape[0] != b.shape[0]):
        raise TileTypeError(
            f"tl.dot shapes do not match: {a.shape} @ {b.shape} (inner dimensions differ)",
            hint="the first tile is M x K and the second K x N",
        )
    # No minimum size: the interpreter and the CUDA-core (FMA) lowering take any power-of-two shape, as
    # Triton's interpreter does (Triton's GPU back ends want 16 or more for their tensor-core paths).
    if a.dtype.name not in _DOT_INPUTS or b.dtype.name not in _DOT_INPUTS:
        raise TileTypeError(f"tl.dot does not support {a.dtype} x {b.dtype}")
    if a.dtype != b.dtype:
        if a.dtype.is_fp8() and b.dtype.is_fp8():
            pass
        else:
            raise TileTypeError(
                f"tl.dot needs operands of one dtype, got {a.dtype} and {b.dtype}",
                hint="cast one side with .to(...)",
            )
    if unwrap(input_precision) in _BF16_TERMS and a.dtype.is_fp32() and b.dtype.is_fp32():
        return _bf16_split_dot(cg, a, b, unwrap(acc), unwrap(input_precision))
    precision = _precision(a, unwrap(input_precision), unwrap(allow_tf32))
    out_dtype = unwrap(out_dtype)
    if a.dtype.is_int():
        out_dtype = core.int32
    elif a.dtype.is_fp64():
        out_dtype = core.float64
    shape = a.shape[:-1] + (b.shape[-1],)
    acc = unwrap(acc)
    if acc is None:
        acc = cg.sem.constant(0, out_dtype, shape)
    else:
        acc = cg.sem.to_tensor(acc)
        if acc.shape != shape:
            raise TileTypeError(f"tl.dot's acc has shape {acc.shape}, the product has {shape}")
    mnia = unwrap(max_num_imprecise_acc) or 0
    return cg.sem.make(
        tt.DotOp,
        acc.type,
        a=a.handle,
        b=b.handle,
        c=acc.handle,
        input_precision=precision,
        max_num_imprecise_acc=constexpr_int(mnia, "max_num_imprecise_acc"),
    )


def _batched_dot(cg, a: tensor, b: tensor, acc, options: dict) -> tensor:
    """A dot with several batch dimensions (Triton takes any number) as one 3-D batched dot over
    their product, reshaped back."""
    batch = a.shape[:-2]
    count = 1
    for size in batch:
        count *= size
    a3 = cg.sem.reshape(a, (count,) + a.shape[-2:])
    b3 = cg.sem.reshape(b, (count,) + b.shape[-2:])
    if acc is not None:
        acc = cg.sem.to_tensor(acc)
        acc = cg.sem.reshape(acc, (count,) + acc.shape[-2:])
    product = dot(cg, a3, b3, acc, **options)
    return cg.sem.reshape(product, batch + product.shape[-2:])


# Triton's fp32 emulations on bf16 tensor cores: each fp32 operand split into bf16 parts (x = x0 + x1
# [+ x2]); the products of part pairs (i, j) with i + j below the number of parts, smallest first
_BF16_TERMS = {
    "bf16x3": (2, [(1, 0), (0, 1), (0, 0)]),
    "bf16x6": (3, [(2, 0), (1, 1), (0, 2), (1, 0), (0, 1), (0, 0)]),
}


def _bf16_split_dot(cg, a: tensor, b: tensor, acc, precision: str) -> tensor:
    """`tl.dot(a, b, acc, input_precision="bf16x3" | "bf16x6")` on fp32 tiles as Triton computes it:
    3 (6) bf16 products accumulated in fp32, on bf16 tensor cores where the target has them."""
    parts, terms = _BF16_TERMS[precision]

    def split(x: tensor) -> list[tensor]:
        pieces, rest = [], x
        for i in range(parts):
            pieces.append(cg.sem.cast(rest, core.bfloat16))
            if i + 1 < parts:
                rest = cg.sem.sub(rest, cg.sem.cast(pieces[-1], core.float32))
        return pieces

    a_parts, b_parts = split(a), split(b)
    for i, j in terms:
        acc = dot(cg, a_parts[i], b_parts[j], acc, input_precision="ieee")
    return acc


def _precision(a: tensor, input_precision, allow_tf32) -> str:
    if input_precision is not None and allow_tf32 is not None:
        raise TileTypeError("give tl.dot either input_precision or allow_tf32, not both")
    if allow_tf32 is not None:
        input_precision = "tf32" if allow_tf32 else "ieee"
    if input_precision is None:
        input_precision = "tf32" if a.dtype.is_fp32() else "ieee"
    if input_precision in _BF16_TERMS:  # on fp32 tiles: _bf16_split_dot; others are exact already
        input_precision = "ieee"
    if input_precision not in ("ieee", "tf32", "tf32x3"):
        raise TileTypeError(
            "input_precision must be 'ieee', 'tf32', 'tf32x3', 'bf16x3' or 'bf16x6', "
            f"got {input_precision!r}"
        )
    return input_precision if a.dtype.is_fp32() else "ieee"
