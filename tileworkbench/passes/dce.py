"""`dce`: dead-code elimination. Removes pure ops whose results are unused, `scf.for`/`scf.if` ops
whose results are unused and whose bodies only compute, and loop-carried values of `scf.for` that
nothing reads.

Runs to a fixed point over nested regions. Ops with effects (stores, atomics, prints, asserts,
barriers, impure extern calls) and `scf.while` (which may not terminate) always stay. Needs nothing
to run first; it runs last in `TILE_OPT` to sweep up what the other passes leave unused."""

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
        return all(
            inner.pure or isinstance(inner, scf.YieldOp) or is_removable(inner)
            for region in op.regions
            for block in region.blocks
            for inner in block.ops
        )
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
    """Remove the carried values of each scf.for that neither its users nor its effects read."""
    changed = False
    for op in list(func.walk()):
        if not isinstance(op, scf.ForOp):
            continue
        terminator = op.body.block.ops[-1] if op.body.block.ops else None
        if not isinstance(terminator, scf.YieldOp):
            continue
        live = _live_carried(op, terminator, uses)
        for i in reversed(range(len(op.init_args))):
            if i not in live:
                _remove_carried(op, terminator, i)
                changed = True
    return changed


def _live_carried(op: scf.ForOp, terminator: scf.YieldOp, uses: Counter) -> set[int]:
    """Indices of carried values read after the loop, or feeding an effect or a live value in the
    body. The rest only feed themselves (an accumulator nobody reads) and can go."""
    block = op.body.block
    live = {i for i, r in enumerate(op.results) if uses[id(r)]}
    while True:
        needed = {id(terminator.values[i]) for i in live}
        for inner in reversed(block.ops[:-1]):
            if is_removable(inner) and not any(id(r) in needed for r in inner.results):
                continue
            needed.update(id(v) for nested in inner.walk() for v in nested.operands)
        grown = live | {i for i in range(len(op.init_args)) if id(block.args[i + 1]) in needed}
        if grown == live:
            return live
        live = grown


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
