"""`remove_layout_conversions`: drops `ttg.convert_layout` ops that move no data (same encoding, or
encodings that place elements alike for the shape), folds chains of conversions, and recomputes cheap
producers (ranges, splats, constants and elementwise/broadcast/expand_dims trees of them) directly in
the wanted layout instead of converting. Runs after `coalesce`; removes the ops it makes dead.
"""

from __future__ import annotations

import copy

from ..ir.ops import arith, tt
from ..ir.ops.ttg import ConvertLayoutOp, SliceEncoding
from ..ir.types import TensorType
from ..ir.values import OpResult, Value
from .layouts import encoding_of, is_tensor

_CHEAP_LEAVES = (tt.MakeRangeOp, tt.SplatOp, arith.ConstantOp)
_MAX_REMAT = 16


def _uses(func: tt.FuncOp) -> dict[int, int]:
    counts: dict[int, int] = {}
    for op in func.walk():
        for v in op.operands:
            counts[id(v)] = counts.get(id(v), 0) + 1
    return counts


def _replace_all(func: tt.FuncOp, old: Value, new: Value) -> None:
    for op in func.walk():
        op.replace_operand(old, new)


def _same_placement(a, b, shape) -> bool:
    if a == b:
        return True
    try:
        return a.linear(shape) == b.linear(shape)
    except (AttributeError, ValueError):
        return False


def _rematerializable(v: Value, budget: list[int]) -> bool:
    if not isinstance(v, OpResult) or not is_tensor(v):
        return not is_tensor(v)
    op = v.op
    budget[0] -= 1
    if budget[0] < 0 or op.regions or len(op.results) != 1:
        return False
    if isinstance(op, _CHEAP_LEAVES):
        return True
    if isinstance(op, (tt.BroadcastOp, tt.ExpandDimsOp)) or (op.elementwise and op.pure):
        return all(_rematerializable(o, budget) for o in op.operands)
    return False


def _remat(v: Value, enc, before) -> Value:
    """A copy of `v`'s producer tree computing it in layout `enc`, inserted before `before`."""
    if not is_tensor(v) or encoding_of(v) == enc:
        return v
    op = v.op
    clone = copy.copy(op)
    for name, value in vars(op).items():
        if isinstance(value, list) and name != "results":
            setattr(clone, name, list(value))  # variadic operands must not be shared with `op`
    if isinstance(op, tt.ExpandDimsOp):
        operand_enc = SliceEncoding(op.axis, enc)
    else:
        operand_enc = enc
    for operand in op.operands:
        if is_tensor(operand):
            clone.replace_operand(operand, _remat(operand, operand_enc, before))
    new_type = TensorType(v.type.shape, v.type.element, enc)
    clone.results = [OpResult(new_type, clone, 0, v.name_hint)]
    block = before.parent
    block.insert(block.ops.index(before), clone)
    return clone.result


def _erase_dead(func: tt.FuncOp) -> None:
    changed = True
    while changed:
        changed = False
        uses = _uses(func)
        for op in list(func.walk()):
            if op.pure and not op.regions and op.results and \
                    all(uses.get(id(r), 0) == 0 for r in op.results) and op.parent is not None:
                op.erase()
                changed = True


def remove_layout_conversions(func: tt.FuncOp) -> bool:
    """Remove, fold or rematerialize layout conversions. Returns whether the IR changed."""
    changed = False
    for op in [o for o in func.walk() if isinstance(o, ConvertLayoutOp)]:
        src, dst = op.src, op.result
        src_enc, dst_enc = encoding_of(src), encoding_of(dst)
        if _same_placement(src_enc, dst_enc, dst.type.shape):
            _replace_all(func, dst, src)
            changed = True
            continue
        if isinstance(src, OpResult) and isinstance(src.op, ConvertLayoutOp):
            op.replace_operand(src, src.op.src)
            src = op.src
            changed = True
        if _rematerializable(src, [_MAX_REMAT]):
            _replace_all(func, dst, _remat(src, dst_enc, op))
            changed = True
    _erase_dead(func)
    return changed
