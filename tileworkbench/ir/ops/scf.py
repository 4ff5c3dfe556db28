"""The `scf` dialect: structured control flow with loop-carried values (for, if, while) and its terminators."""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Region, Value
from .base import Op, attribute, operand, operands, region


@dataclass(eq=False)
class ForOp(Op, name="scf.for"):
    """`for iv in range(lower, upper, step)` carrying `init_args`; the body's block arguments are the
    induction variable then the carried values, and its `scf.yield` gives the next carried values."""

    lower: Value = operand()
    upper: Value = operand()
    step: Value = operand()
    init_args: list[Value] = operands()
    body: Region = region()
    # `tl.range(..., loop_unroll_factor=k)`: copies of the body per iteration (passes/unroll.py)
    loop_unroll_factor: int = attribute(0)
    # `tl.range(..., disable_licm=True)`: LLVM may not hoist out of this loop (`llvm.licm.disable`)
    disable_licm: bool = attribute(False)
    # `tl.range(..., warp_specialize=True)`: a producer warp group issues the loop's TMA copies
    # (passes/warp_specialize.py)
    warp_specialize: bool = attribute(False)


@dataclass(eq=False)
class IfOp(Op, name="scf.if"):
    """Runs `then_region` or `else_region`; each ends in an `scf.yield` of the results."""

    condition: Value = operand()
    then_region: Region = region()
    else_region: Region = region()


@dataclass(eq=False)
class WhileOp(Op, name="scf.while"):
    """`before` computes the condition from the carried values and ends in `scf.condition`; `after` is the
    loop body and ends in `scf.yield` of the next carried values."""

    init_args: list[Value] = operands()
    before: Region = region()
    after: Region = region()
    # `while tl.condition(c, disable_licm=True)`: as scf.for's
    disable_licm: bool = attribute(False)


@dataclass(eq=False)
class YieldOp(Op, name="scf.yield", terminator=True):
    values: list[Value] = operands()


@dataclass(eq=False)
class ConditionOp(Op, name="scf.condition", terminator=True):
    """Ends `scf.while`'s `before` region: continue with `args` while `condition` holds, else return them."""

    condition: Value = operand()
    args: list[Value] = operands()
