"""`combine_dot_add`: `acc + tl.dot(a, b)` becomes `tl.dot(a, b, acc)`, as Triton's combine does, so a
loop's accumulator is the dot's own (it stays in the tensor-core layout and in registers) rather than
a sum converted each iteration. Only for the GPU: the product is then accumulated into `acc` at the
dot's precision instead of rounded once more, which the interpreter (running `tile-opt`) does not do.
"""

from __future__ import annotations

from ..ir.ops import arith, tt
from ..ir.values import OpResult
from .canonicalize import constant_op


def _zero_dot(value, uses: dict[int, int]) -> tt.DotOp | None:
    if not isinstance(value, OpResult) or not isinstance(value.op, tt.DotOp):
        return None
    zero = constant_op(value.op.c)
    if zero is None or zero.value != 0 or uses.get(id(value), 0) != 1:
        return None
    return value.op


def combine_dot_add(func: tt.FuncOp) -> bool:
    """Fold every `arith.addf/addi %acc, (tt.dot %a, %b, 0)` into the dot. Returns changed."""
    uses: dict[int, int] = {}
    for op in func.walk():
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    changed = False
    for op in [o for o in func.walk() if isinstance(o, (arith.AddFOp, arith.AddIOp))]:
        for dot_value, acc in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            dot = _zero_dot(dot_value, uses)
            if dot is None or acc.type != dot.result.type:
                continue
            # the dot moves to the add's place, where `acc` is defined
            dot.parent.remove(dot)
            dot.c = acc
            block = op.parent
            block.insert(block.ops.index(op), dot)
            for user in func.walk():
                user.replace_operand(op.result, dot.result)
            dot.result.name_hint = op.result.name_hint or dot.result.name_hint
            op.erase()
            changed = True
            break
    return changed
