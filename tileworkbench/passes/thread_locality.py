"""`optimize_thread_locality`: a reduction accumulated across the iterations of a loop combines
across lanes and warps once, after the loop, instead of in every iteration (Triton's
OptimizeThreadLocality).

    %acc' = scf.for ... iter_args(%acc = %init) {          %part' = scf.for ... iter_args(%part = neutral) {
      %r = "tt.reduce"(%x) <{axis = 1}> (addf)     ->        %x3 = tt.reshape %x : [M, N/s, s]
      %next = arith.addf %acc, %r                            %p = "tt.reduce"(%x3) <{axis = 2}> (addf)
      scf.yield %next                                        scf.yield (arith.addf %part, %p)
    }                                                      }
                                                           %acc' = %init + "tt.reduce"(%part') <{axis = 1}>

where `s` is the number of consecutive elements along the axis that each thread holds (`x`'s blocked
layout has the axis fastest, `sizePerThread[axis] = s > 1`): the reshape moves no data, the reduction in
the loop stays in each thread's registers, and the partial results (one per thread and column group) are
carried. Only for combines that are associative and commutative with a neutral element (float add, max,
min). Runs after `remove_layout_conversions` (it reads the layouts coalesce chose).
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt
from ..ir.ops.ttg import BlockedEncoding, ConvertLayoutOp, SliceEncoding
from ..ir.types import TensorType
from ..ir.values import Block, OpResult, Region, Value
from .layouts import encoding_of

# combine op -> its neutral element
_NEUTRAL = {
    arith.AddFOp: 0.0,
    arith.MaxNumFOp: float("-inf"),
    arith.MaximumFOp: float("-inf"),
    arith.MinNumFOp: float("inf"),
    arith.MinimumFOp: float("inf"),
}


def optimize_thread_locality(func: tt.FuncOp) -> bool:
    """Rewrite every loop-accumulated reduction that fits (see the module docstring)."""
    changed = False
    for loop in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        for reduce in [op for op in loop.body.block.ops if isinstance(op, tt.ReduceOp)]:
            match = _match(func, loop, reduce)
            if match is not None:
                _rewrite(loop, reduce, *match)
                changed = True
    return changed


def _combine_class(reduce: tt.ReduceOp):
    """The combine's op class when the region is one binary op of its two arguments, else None."""
    block = reduce.combine.block
    if len(reduce.srcs) != 1 or len(block.ops) != 2:
        return None
    op, ret = block.ops
    if (
        type(op) not in _NEUTRAL
        or not isinstance(ret, tt.ReduceReturnOp)
        or ret.values != [op.result]
    ):
        return None
    return type(op) if {id(op.lhs), id(op.rhs)} == {id(a) for a in block.args} else None


def _uses(func: tt.FuncOp, value: Value) -> list:
    return [op for op in func.walk() if any(v is value for v in op.operands)]


def _match(func: tt.FuncOp, loop: scf.ForOp, reduce: tt.ReduceOp):
    """(combine class, the accumulating op, the carried index, s) where `reduce` fits, else None."""
    combine = _combine_class(reduce)
    src = reduce.srcs[0]
    enc = encoding_of(src)
    if combine is None or not isinstance(enc, BlockedEncoding) or enc.order[0] != reduce.axis:
        return None
    per_thread = enc.size_per_thread[reduce.axis]
    if (
        per_thread < 2
        or src.type.shape[reduce.axis] <= per_thread
        or src.type.shape[reduce.axis] % per_thread
    ):
        return None
    value, users = reduce.results[0], _uses(func, reduce.results[0])
    if len(users) == 1 and isinstance(users[0], ConvertLayoutOp):
        value = users[0].result
        users = _uses(func, value)
    if len(users) != 1 or type(users[0]) is not combine or users[0].parent is not loop.body.block:
        return None
    accumulate = users[0]
    carried = accumulate.lhs if accumulate.rhs is value else accumulate.rhs
    body = loop.body.block
    if not any(carried is a for a in body.args[1:]) or len(_uses(func, carried)) != 1:
        return None
    index = carried.index - 1
    yielded = _uses(func, accumulate.result)
    if (
        len(yielded) != 1
        or yielded[0] is not body.ops[-1]
        or body.ops[-1].operands[index] is not accumulate.result
    ):
        return None
    return combine, accumulate, index, per_thread


def _split_layout(enc: BlockedEncoding, axis: int, per_thread: int) -> BlockedEncoding:
    """`enc` with dimension `axis` split in two: (axis: the threads' groups, axis + 1: the `per_thread`
    elements of a thread), placing every element where `enc` places it."""

    def split(values, outer, inner):
        return tuple(values[:axis]) + (outer, inner) + tuple(values[axis + 1 :])

    order = []
    for d in enc.order:
        order += [axis + 1, axis] if d == axis else [d + 1 if d > axis else d]
    return BlockedEncoding(
        split(enc.size_per_thread, 1, per_thread),
        split(enc.threads_per_warp, enc.threads_per_warp[axis], 1),
        split(enc.warps_per_cta, enc.warps_per_cta[axis], 1),
        tuple(order),
    )


def _reduce(src: Value, axis: int, combine, loc, before, block) -> Value:
    """A `tt.reduce` of `src` along `axis` with a one-op combine region, inserted before `before`."""
    element = src.type.element
    region_block = Block([element, element])
    op = combine(lhs=region_block.args[0], rhs=region_block.args[1])
    op.results = [OpResult(element, op, 0)]
    op.loc = loc
    region_block.append(op)
    ret = tt.ReduceReturnOp(values=[op.result])
    ret.loc = loc
    region_block.append(ret)
    shape = src.type.shape[:axis] + src.type.shape[axis + 1 :]
    result_type = TensorType(shape, element, SliceEncoding(axis, encoding_of(src)))
    return _insert(
        block,
        before,
        tt.ReduceOp(axis=axis, srcs=[src], combine=Region([region_block])),
        result_type,
        loc,
    )


def _insert(block, before, op, result_type, loc, name=None) -> Value:
    op.results = [OpResult(result_type, op, 0, name)]
    op.loc = loc
    block.insert(block.ops.index(before) if before is not None else len(block.ops), op)
    return op.results[0]


def _rewrite(
    loop: scf.ForOp, reduce: tt.ReduceOp, combine, accumulate, index: int, per_thread: int
) -> None:
    body, loc, axis = loop.body.block, reduce.loc, reduce.axis
    src = reduce.srcs[0]
    shape = src.type.shape
    split_shape = shape[:axis] + (shape[axis] // per_thread, per_thread) + shape[axis + 1 :]
    split_enc = _split_layout(encoding_of(src), axis, per_thread)
    # in the loop: the thread's own elements only, accumulated into a carried partial
    split = _insert(
        body,
        reduce,
        tt.ReshapeOp(src=src),
        TensorType(split_shape, src.type.element, split_enc),
        loc,
    )
    partial = _reduce(split, axis + 1, combine, loc, reduce, body)
    neutral = arith.ConstantOp(value=_NEUTRAL[combine])
    init = _insert(loop.parent, loop, neutral, partial.type, loc)
    loop.init_args.append(init)
    carried = body.add_arg(partial.type, "partial")
    result = OpResult(partial.type, loop, len(loop.results), "partial")
    loop.results.append(result)
    yield_op = body.ops[-1]
    step = _insert(body, yield_op, combine(lhs=carried, rhs=partial), partial.type, loc)
    yield_op.values.append(step)
    # the old accumulation is gone: its carried value passes through the loop unchanged
    old_carried = body.args[index + 1]
    yield_op.values[index] = old_carried
    for op in (
        [accumulate]
        + [o for o in body.ops if isinstance(o, ConvertLayoutOp) and o.src is reduce.results[0]]
        + [reduce]
    ):
        body.remove(op)
    # after the loop: across threads once, then into the old result's layout, then the initial value
    old_result = loop.results[index]
    after = loop.parent.ops[loop.parent.ops.index(loop) + 1]
    total = _reduce(result, axis, combine, loc, after, loop.parent)
    if encoding_of(total) != encoding_of(old_result):
        total = _insert(loop.parent, after, ConvertLayoutOp(src=total), old_result.type, loc)
    final = _insert(
        loop.parent,
        after,
        combine(lhs=old_result, rhs=total),
        old_result.type,
        loc,
        old_result.name_hint,
    )
    for op in loop.parent.ops[loop.parent.ops.index(final.op) + 1 :]:
        _replace_everywhere(op, old_result, final)


def _replace_everywhere(op, old: Value, new: Value) -> None:
    op.replace_operand(old, new)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _replace_everywhere(inner, old, new)
