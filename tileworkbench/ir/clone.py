"""A deep copy of a `tt.func`: the compiler keeps the `tile-opt` IR and lowers copies of it, so a
retry with other target choices (TMA's shared-memory fallback) runs only the GPU passes again."""

from __future__ import annotations

import copy

from .ops.tt import FuncOp


def clone(func: FuncOp) -> FuncOp:
    """An independent copy of `func`: new ops, blocks and values, with the same types, attributes
    and locations (types and locations are immutable and shared)."""
    if func.parent is not None:
        raise ValueError("clone copies a top-level tt.func only")
    memo: dict[int, object] = {}
    for op in func.walk():  # frozen, immutable: shared rather than copied
        memo[id(op.loc)] = op.loc
        for value in op.results:
            memo[id(value.type)] = value.type
    return copy.deepcopy(func, memo)
