"""`scf.for`, `scf.if` and `scf.while`, run as Python loops and branches with loop-carried values.

A condition must be a scalar (Triton's `if` on a tensor is an error at compile time), so the control flow
is the same for the whole program, as on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import InterpreterError
from ...ir.ops import scf
from .dtypes import numpy_dtype
from .eval_tt import eval_terminator


def _packer(count: int) -> Callable[[list], object]:
    """How a region op hands its values back: one value, a tuple, or nothing."""
    if count == 1:
        return lambda values: values[0]
    return tuple


def eval_for(op: scf.ForOp, ctx):
    body = ctx.compile_block(op.body.block)
    make_iv = numpy_dtype(op.body.block.args[0].type).type
    pack = _packer(len(op.results))
    kernel, where = ctx.kernel, ctx.where(op)

    def for_loop(lower, upper, step, *carried):
        iv, stop, stride = int(lower), int(upper), int(step)
        if stride == 0:
            raise InterpreterError(f"scf.for with step 0 never ends (kernel '{kernel}' at {where})")
        carried = list(carried)
        while (iv < stop) if stride > 0 else (iv > stop):
            carried = body([make_iv(iv), *carried])
            iv += stride
        return pack(carried)

    return for_loop


def eval_if(op: scf.IfOp, ctx):
    then_block = ctx.compile_block(op.then_region.block)
    has_else = op.else_region.blocks and op.else_region.block.ops
    else_block = ctx.compile_block(op.else_region.block) if has_else else (lambda args: [])
    pack = _packer(len(op.results))

    def if_else(condition):
        return pack(then_block(()) if condition else else_block(()))

    return if_else


def eval_while(op: scf.WhileOp, ctx):
    before = ctx.compile_block(op.before.block)
    after = ctx.compile_block(op.after.block)
    pack = _packer(len(op.results))

    def while_loop(*carried):
        values = list(carried)
        while True:
            condition, *args = before(values)
            if not condition:
                return pack(args)
            values = after(args)

    return while_loop


EVALUATORS = {
    scf.ForOp: eval_for,
    scf.IfOp: eval_if,
    scf.WhileOp: eval_while,
    scf.YieldOp: eval_terminator,
    scf.ConditionOp: eval_terminator,
}
