"""`cse`: common-subexpression elimination of pure ops, scoped by regions.

Two pure ops are the same when they have the same name, operands (in either order for commutative
ops), attributes and result types; the later one is replaced by the earlier. An op may be replaced
by one in an enclosing region, never by one in a sibling region. Loads, stores, atomics, prints and
ops with regions are left alone. Runs best after `canonicalize`, which puts commutative constants on
the right and folds constants, so more ops compare equal."""

from __future__ import annotations

import struct
from collections import ChainMap
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..ir import Block, Op, Value
from ..ir.ops import tt
from ..ir.ops.tt import FuncOp
from ..ir.values import OpResult

ISOLATED = (tt.ReduceOp, tt.ScanOp)


def cse(func: FuncOp) -> bool:
    """Replace repeated pure computations in `func` by their first occurrence.

    Returns:
        Whether any op was replaced.
    """
    replaced: dict[int, Value] = {}
    _cse_block(func.body.block, ChainMap(), replaced)
    return bool(replaced)


def _cse_block(block: Block, scope: ChainMap, replaced: dict[int, Value]) -> None:
    # Values are renamed on the fly: every use comes after its definition in program order.
    for op in list(block.ops):
        for old in op.operands:
            new = replaced.get(id(old))
            if new is not None:
                op.replace_operand(old, new)
        for region in op.regions:
            for inner in region.blocks:
                # A combine region is a function of its arguments alone: nothing from outside is
                # pulled into it (the backends may lower it apart from the rest of the kernel).
                inner_scope = ChainMap() if isinstance(op, ISOLATED) else scope.new_child()
                _cse_block(inner, inner_scope, replaced)
        key = op_key(op)
        if key is None:
            continue
        earlier = scope.get(key)
        if earlier is None:
            scope[key] = op
            continue
        for old, new in zip(op.results, earlier.results):
            replaced[id(old)] = new
            _keep_name(old, new)
        block.remove(op)


def _keep_name(old: Value, new: Value) -> None:
    if isinstance(new, OpResult) and new.name_hint is None and old.name_hint is not None:
        new.name_hint = old.name_hint


def op_key(op: Op) -> Hashable | None:
    """What makes two ops interchangeable, or None for an op that must not be merged."""
    if not op.pure or op.regions or not op.results or op.is_terminator:
        return None
    operand_ids = [id(v) for v in op.operands]
    if op.commutative:
        operand_ids.sort()
    attributes = tuple((name, attribute_key(v)) for name, v in op.attributes.items())
    result_types = tuple(attribute_key(r.type) for r in op.results)  # encodings may not hash
    return (type(op), tuple(operand_ids), attributes, result_types)


def attribute_key(value: Any) -> Hashable:
    """A hashable key equal only for identical attributes: 0.0 and -0.0 differ, NaNs go by their
    bits, and True differs from 1 (Python calls both pairs equal)."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(attribute_key(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, attribute_key(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, repr(value))
    return (type(value).__name__, value)
