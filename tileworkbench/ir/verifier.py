"""Checks the structural invariants of Tile IR: uses dominated by definitions, terminators where regions
need them, matching shapes in elementwise ops, and loop/branch results that match what their regions yield.

A failure is a tileworkbench bug (user errors are caught by the frontend), so the message says so and prints
the IR with the bad op marked.
"""

from __future__ import annotations

from .ops.base import Op
from .ops.scf import ConditionOp, ForOp, IfOp, WhileOp, YieldOp
from .ops.tt import FuncOp, ReduceOp, ReduceReturnOp, ScanOp, ScanReturnOp
from .printer import print_ir_lines
from .types import shape_of
from .values import Block


class IRVerificationError(Exception):
    """The IR broke an invariant: an internal compiler error, never the user's fault."""


def _fail(root: Op, bad: Op, message: str) -> None:
    lines = print_ir_lines(root, locs=False)
    marked = [text for text, _ in lines]
    for i, (text, loc) in enumerate(lines):
        if bad.name in text and loc == bad.loc:
            marked[i] += "    <-- here"
            break
    raise IRVerificationError(
        f"invalid Tile IR: {message} ({bad.name} at {bad.loc}).\n"
        "This is a tileworkbench bug; please report it with the kernel.\n\n" + "\n".join(marked)
    )


_REGION_TERMINATORS = {
    ForOp: (YieldOp,),
    IfOp: (YieldOp,),
    WhileOp: (ConditionOp, YieldOp),
    ReduceOp: (ReduceReturnOp,),
    ScanOp: (ScanReturnOp,),
}


def verify(func: FuncOp) -> None:
    """Raise IRVerificationError if `func` breaks an invariant."""
    _verify_block(func, func.body.block, set(id(a) for a in func.args))


def _verify_block(root: Op, block: Block, defined: set[int]) -> None:
    defined = set(defined) | {id(a) for a in block.args}
    for op in block.ops:
        for value in op.operands:
            if id(value) not in defined:
                _fail(root, op, "an operand is used before it is defined, or outside its region")
        if op.elementwise:
            shapes = {shape_of(v.type) for v in op.operands} | {
                shape_of(r.type) for r in op.results
            }
            if len(shapes) > 1:
                _fail(root, op, f"elementwise op with mixed shapes {sorted(shapes)}")
        if op.is_terminator and op is not block.ops[-1]:
            _fail(root, op, "a terminator is not the last op of its block")
        terminators = _REGION_TERMINATORS.get(type(op))
        for i, region in enumerate(op.regions):
            if len(region.blocks) != 1:
                _fail(root, op, "a region must have exactly one block")
            inner = region.block
            if terminators is not None and inner.ops and not isinstance(inner.ops[-1], terminators):
                _fail(root, op, "a region does not end in its terminator")
            _verify_block(root, inner, defined)
        _check_region_results(root, op)
        defined |= {id(r) for r in op.results}


def _check_region_results(root: Op, op: Op) -> None:
    if isinstance(op, (ForOp, IfOp)):
        expected = [r.type for r in op.results]
        for region in op.regions:
            if not region.blocks or not region.block.ops:
                if expected:
                    _fail(root, op, "an empty region of an op with results")
                continue
            got = [v.type for v in region.block.ops[-1].operands]
            if got != expected:
                _fail(root, op, f"the region yields {got}, the op's results are {expected}")
    if isinstance(op, ForOp):
        carried = [a.type for a in op.body.block.args[1:]]
        if carried != [v.type for v in op.init_args] or carried != [r.type for r in op.results]:
            _fail(root, op, "loop-carried types differ between init_args, block args and results")
