"""What a scalar integer or pointer is known to be a multiple of, read from the IR: constants,
products, sums, casts, `tt.divisibility` parameters, loop induction variables (lower and step) and
values a loop carries (what it starts with and what each iteration yields: tutorial 06's fp8 V
offset, `offsetv_y += BLOCK_N`).
The descriptor pass (descriptors.py) asks it whether TMA's 16-byte rules hold; a wrong answer
would fault or write past a tensor, so anything it cannot see is a multiple of 1.
"""

from __future__ import annotations

from math import gcd

from ..ir.ops import arith, scf, tt
from ..ir.types import ScalarType
from ..ir.values import BlockArgument, OpResult, Value

UNBOUNDED = 1 << 30  # the multiple of 0
_DEPTH = 32


def known_multiple(value: Value) -> int:
    """A number the scalar integer `value` is known to be a multiple of (UNBOUNDED for 0)."""
    return min(UNBOUNDED, _multiple(value, 0))


def pointer_multiple(value: Value) -> int:
    """A number of bytes the scalar pointer `value` is known to be a multiple of: a pointer
    argument's `tt.divisibility`, or such a pointer moved by a known multiple of elements."""
    if isinstance(value, BlockArgument):
        return _argument_divisibility(value)
    if isinstance(value, OpResult) and isinstance(value.op, tt.AddPtrOp):
        pointee = getattr(value.type, "pointee", None)
        if not isinstance(pointee, ScalarType):
            return 1
        offset = known_multiple(value.op.offset)
        return gcd(pointer_multiple(value.op.ptr), offset * max(1, pointee.bitwidth // 8))
    return 1


def _multiple(value: Value, depth: int, assumed: dict | None = None) -> int:
    if depth > _DEPTH:
        return 1
    if isinstance(value, BlockArgument):
        return _argument_multiple(value, depth, assumed or {})
    if not isinstance(value, OpResult):
        return 1
    op = value.op
    if isinstance(op, arith.ConstantOp):
        return abs(op.value) or UNBOUNDED if isinstance(op.value, int) else 1
    parts = [_multiple(x, depth + 1, assumed) for x in op.operands]
    if isinstance(op, arith.MulIOp):
        return min(UNBOUNDED, parts[0] * parts[1])
    if isinstance(op, (arith.AddIOp, arith.SubIOp)):
        return gcd(parts[0], parts[1])
    if isinstance(op, (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)):
        return parts[0]
    return 1


def _argument_multiple(arg: BlockArgument, depth: int, assumed: dict) -> int:
    owner = arg.block.parent_op
    if not isinstance(owner, scf.ForOp):
        return _argument_divisibility(arg)
    if arg.index == 0:  # the induction variable: lower + i * step
        return gcd(
            _multiple(owner.lower, depth + 1, assumed), _multiple(owner.step, depth + 1, assumed)
        )
    if id(arg) in assumed:
        return assumed[id(arg)]
    # a carried value: a multiple of m if it starts as one and each iteration yields one given
    # that it is; m shrinks (a divisor each time) until it holds, within a few tries, else 1
    yielded = arg.block.ops[-1].values[arg.index - 1]
    multiple = _multiple(owner.init_args[arg.index - 1], depth + 1, assumed)
    for _ in range(4):
        after = gcd(multiple, _multiple(yielded, depth + 1, {**assumed, id(arg): multiple}))
        if after == multiple:
            return multiple
        multiple = after
    return 1


def _argument_divisibility(arg: BlockArgument) -> int:
    owner = arg.block.parent_op
    if isinstance(owner, tt.FuncOp) and arg.index < len(owner.arg_attrs):
        return (owner.arg_attrs[arg.index] or {}).get("tt.divisibility", 1)
    return 1
