"""`dce`: dead-code elimination. Removes pure ops whose results are unused, `scf.for`/`scf.if` ops whose
results are unused and whose bodies only compute, and loop-carried values of `scf.for` that nothing reads.

Runs to a fixed point over nested regions. Ops with effects (stores, atomics, prints, asserts, barriers,
impure extern calls) and `scf.while` (which may not terminate) always stay. Needs nothing to run first;
it runs last in `TILE_OPT` to sweep up what the other passes leave unused.
"""

from __future__ import annotations

from collections import Counter

from ..ir import Op, Value
from ..ir.ops import scf
from ..ir.ops.tt import FuncOp


def dce(func: FuncOp) -> bool:
    """Erase dead code from `func`; returns whether anything was erased."""
    changed = False
    while True:
        uses = count_uses(func)
        erased = _sweep(func, uses)
        dropped = _drop_dead_loop_values(func, uses) if not erased else False
        if not (erased or dropped):
            return changed
        changed = True


def count_uses(func: FuncOp) -> Counter:
    """How many operand slots (anywhere in `func`) refer to each value, keyed by `id(value)`."""
    uses: Counter = Counter()
    for op in func.walk():
        for value in op.operands:
            uses[id(value)] += 1
    return uses


def is_removable(op: Op) -> bool:
    """Whether erasing `op` (when its results are unused) cannot change what the kernel does."""
    if op.pure:
        return not op.is_terminator
    if isinstance(op, (scf.ForOp, scf.IfOp)):
        # An scf.for always terminates, so a loop that only computes is as dead as its results.
        return all(inner.pure or isinstance(inner, scf.YieldOp) or is_removable(inner)
                   for region in op.regions for block in region.blocks for inner in block.ops)
    return False


def _sweep(func: FuncOp, uses: Counter) -> bool:
    """Erase dead ops in reverse program order, so a chain of dead ops goes in one sweep."""
    erased = False
    dead: set[int] = set()
    for op in reversed(list(func.walk())):
        if op is func or _inside(op, dead) or not is_removable(op):
            continue
        if any(uses[id(r)] for r in op.results):
            continue
        for inner in op.walk():
            for value in inner.operands:
                uses[id(value)] -= 1
        dead.add(id(op))
        op.erase()
        erased = True
    return erased


def _inside(op: Op, dead: set[int]) -> bool:
    parent = op.parent_op
    while parent is not None:
        if id(parent) in dead:
            return True
        parent = parent.parent_op
    return False


def _drop_dead_loop_values(func: FuncOp, uses: Counter) -> bool:
    """Remove carried value i of an scf.for when result i is unused and the body reads block argument
    i only to yield it back as value i."""
    changed = False
    for op in list(func.walk()):
        if not isinstance(op, scf.ForOp):
            continue
        block = op.body.block
        terminator = block.ops[-1] if block.ops else None
        if not isinstance(terminator, scf.YieldOp):
            continue
        for i in reversed(range(len(op.init_args))):
            arg = block.args[i + 1]
            only_yielded = uses[id(arg)] == (terminator.values[i] is arg)
            if uses[id(op.results[i])] == 0 and only_yielded:
                _remove_carried(op, terminator, i)
                changed = True
    return changed


def _remove_carried(op: scf.ForOp, terminator: scf.YieldOp, i: int) -> None:
    block = op.body.block
    del op.init_args[i]
    del terminator.values[i]
    del block.args[i + 1]
    op.results = [r for r in op.results if r.index != i]
    _renumber(op.results)
    _renumber(block.args)


def _renumber(values: list[Value]) -> None:
    for index, value in enumerate(values):
        value.index = index

