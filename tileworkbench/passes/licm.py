"""`licm`: loop-invariant code motion. Hoists pure ops whose operands are all defined outside an
`scf.for` or `scf.while` to just before the loop, innermost loops first, so an invariant climbs out
of a nest.

Only ops directly in a loop's body blocks move (not ops nested in an `scf.if` inside it), and never
ops with regions. Hoisting runs an op even when the loop runs zero times, so an op that could trap
stays: an integer division or remainder moves only when its divisor is a constant that is neither 0
nor -1. Runs best after `cse`, so each invariant is hoisted once, and before another `cse`, which
merges what it hoists with equal ops already outside the loop."""

from __future__ import annotations

from ..ir import Op
from ..ir.ops import arith, scf
from ..ir.ops.tt import FuncOp
from ..ir.types import element_type
from . import fold
from .canonicalize import int_constant

LOOPS = (scf.ForOp, scf.WhileOp)
_DIVISIONS = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp)


def licm(func: FuncOp) -> bool:
    """Hoist loop-invariant pure ops out of the loops of `func`; returns whether any moved."""
    changed = False
    for loop in _loops_inner_first(func):
        changed |= _hoist_from(loop)
    return changed


def _loops_inner_first(op: Op) -> list[Op]:
    """The loops nested in `op` in post-order: an inner loop before the loop around it (so
    invariants climb out of a nest), and sibling loops in program order."""
    loops = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                loops += _loops_inner_first(inner)
    if isinstance(op, LOOPS):
        loops.append(op)
    return loops


def may_trap(op: Op) -> bool:
    """Whether running `op` where the program would not run it could fault (integer division by 0 or
    INT_MIN / -1)."""
    if not isinstance(op, _DIVISIONS):
        return False
    divisor = int_constant(op.rhs)
    if divisor is None or divisor == 0:
        return True
    bits = element_type(op.rhs.type).bitwidth
    signed = isinstance(op, (arith.DivSIOp, arith.RemSIOp))
    return signed and divisor == fold.to_bits(-1, bits)


def is_hoistable(op: Op) -> bool:
    return op.pure and not op.regions and not op.is_terminator and not may_trap(op)


def _hoist_from(loop: Op) -> bool:
    inside = _values_defined_in(loop)
    outer = loop.parent
    moved = False
    for region in loop.regions:
        for block in region.blocks:
            # One forward pass suffices: an op's operands from the same body come before it and have
            # been hoisted already if they could be.
            for op in list(block.ops):
                if not is_hoistable(op) or any(id(v) in inside for v in op.operands):
                    continue
                block.remove(op)
                outer.insert(outer.ops.index(loop), op)
                inside.difference_update(id(r) for r in op.results)
                moved = True
    return moved


def _values_defined_in(loop: Op) -> set[int]:
    inside: set[int] = set()
    for op in loop.walk():
        if op is not loop:
            inside.update(id(r) for r in op.results)
        for region in op.regions:
            for block in region.blocks:
                inside.update(id(a) for a in block.args)
    return inside
