"""`remove_layout_conversions`: drops `ttg.convert_layout` ops that move no data (same encoding, or
encodings that place elements alike for the shape), folds chains of conversions, and recomputes cheap
producers (ranges, splats, constants and elementwise/broadcast/expand_dims trees of them) directly in
the wanted layout instead of converting. A conversion of an expensive value (a dot result) sinks
through elementwise users and, at a store, the store takes the value's layout instead (its pointers
and mask are recomputed), as Triton does; a tensor-core (#mma) result keeps its conversion to the
store's coalesced layout. Runs after `coalesce`; removes the ops it makes dead.
"""

from __future__ import annotations

import copy

from ..ir.ops import arith, scf, tt
from ..ir.ops.ttg import BlockedEncoding, ConvertLayoutOp, MmaEncoding, SliceEncoding
from ..ir.types import TensorType
from ..ir.values import OpResult, Value
from ..target import TargetInfo, target_pass
from .layouts import encoding_of, is_tensor

_CHEAP_LEAVES = (tt.MakeRangeOp, tt.SplatOp, arith.ConstantOp)
# a tensor-core result up to this size is always staged through shared memory for a coalesced store;
# a larger one only where the block's shared memory holds it (`_staging_fits`)
_EPILOGUE_BYTES = 64 * 1024
# room left for the scratch of other ops (conversions, reductions) when judging a larger one
_SCRATCH_ALLOWANCE = 8 * 1024
_MAX_REMAT = 64


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
    if isinstance(op, ConvertLayoutOp):
        return _rematerializable(op.src, budget)
    if isinstance(op, (tt.BroadcastOp, tt.ExpandDimsOp)) or (op.elementwise and op.pure):
        return all(_rematerializable(o, budget) for o in op.operands)
    return False


def _remat(v: Value, enc, before) -> Value:
    """A copy of `v`'s producer tree computing it in layout `enc`, inserted before `before`."""
    if not is_tensor(v) or encoding_of(v) == enc:
        return v
    op = v.op
    if isinstance(op, ConvertLayoutOp):
        return _remat(op.src, enc, before)
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
            if (
                op.pure
                and not op.regions
                and op.results
                and all(uses.get(id(r), 0) == 0 for r in op.results)
                and op.parent is not None
            ):
                op.erase()
                changed = True


def _users(func: tt.FuncOp, v: Value) -> list:
    return [op for op in func.walk() if any(o is v for o in op.operands)]


def _sink_one(func: tt.FuncOp, conv: ConvertLayoutOp) -> bool:
    """`u(convert(x), y)` -> `convert(u(x, y'))` for a sole elementwise user u (y' recomputed)."""
    users = _users(func, conv.result)
    if len(users) != 1:
        return False
    user = users[0]
    if not (
        user.elementwise
        and user.pure
        and len(user.results) == 1
        and not user.regions
        and is_tensor(user.result)
        and user.parent is conv.parent
    ):
        return False
    others = [o for o in user.operands if o is not conv.result and is_tensor(o)]
    if not all(_rematerializable(o, [_MAX_REMAT]) for o in others):
        return False
    enc = encoding_of(conv.src)
    for operand in list(user.operands):
        if operand is conv.result:
            user.replace_operand(operand, conv.src)
        elif is_tensor(operand):
            user.replace_operand(operand, _remat(operand, enc, user))
    wanted = user.result.type
    user.result.type = TensorType(wanted.shape, wanted.element, enc)
    moved = ConvertLayoutOp(src=user.result)
    moved.results = [OpResult(wanted, moved, 0, user.result.name_hint)]
    moved.loc = user.loc
    block = user.parent
    block.insert(block.ops.index(user) + 1, moved)
    for op in _users(func, user.result):
        if op is not moved:
            op.replace_operand(user.result, moved.result)
    conv.erase()
    return True


def _store_takes_value_layout(func: tt.FuncOp, store: tt.StoreOp, target: TargetInfo) -> bool:
    """`store(p, convert(x), m)` -> `store(p', x, m')` with p', m' recomputed in x's layout."""
    value = store.value
    if not (isinstance(value, OpResult) and isinstance(value.op, ConvertLayoutOp)):
        return False
    src = value.op.src
    if (
        isinstance(encoding_of(src), MmaEncoding)
        and len(src.type.shape) == 2
        and _staging_fits(
            func, store, src.type.numel * max(1, src.type.element.bitwidth // 8), target
        )
    ):
        # a tensor-core result is stored coalesced, through shared memory (`stage_dot_operands`):
        # in the #mma layout a warp's store would write 4 bytes in each of 8 rows
        return False
    if _transposes(encoding_of(src), encoding_of(store.ptr)):
        # the store's addresses run along another dimension than the value's threads do: in the
        # value's layout every lane would write one element to its own row, so the conversion
        # (through shared memory) stays and both sides move 16 bytes per thread, as Triton's
        # loads and stores are both layout anchors (test_core's test_permute)
        return False
    rest = [v for v in (store.ptr, store.mask) if v is not None]
    if _rematerializable(src, [_MAX_REMAT]) or not all(
        _rematerializable(v, [_MAX_REMAT]) for v in rest
    ):
        return False
    enc = encoding_of(src)
    for v in rest:
        store.replace_operand(v, _remat(v, enc, store))
    store.replace_operand(value, src)
    return True


def _transposes(value_enc, store_enc) -> bool:
    """Whether two blocked layouts of more than one dimension run fastest along different dims."""
    return (
        isinstance(value_enc, BlockedEncoding)
        and isinstance(store_enc, BlockedEncoding)
        and value_enc.rank > 1
        and value_enc.order[0] != store_enc.order[0]
    )


def _staging_fits(func: tt.FuncOp, store: tt.StoreOp, tile_bytes: int, target: TargetInfo) -> bool:
    """Whether the epilogue's staging tile of `tile_bytes` fits beside the dots' operand tiles in the
    block's shared memory (`target.shared_per_block`; 0: unknown, so it does not). A store in the
    top-level block after loops there reuses the pipeline rings' bytes (lowering/shared.py), so the
    tile needs max(rings, operands + tile); elsewhere rings + tile. Up to `_EPILOGUE_BYTES` it
    always stages."""
    if tile_bytes <= _EPILOGUE_BYTES:
        return True
    limit = target.shared_per_block
    if not limit:
        return False
    stages = max(1, target.num_stages)
    operands, top_level = 0, store.parent is func.body.block
    for dot in (op for op in func.walk() if isinstance(op, tt.DotOp)):
        operands += sum(v.type.numel * max(1, v.type.element.bitwidth // 8) for v in (dot.a, dot.b))
        loop = dot.parent_op
        while loop is not None and not isinstance(loop, scf.ForOp):
            loop = loop.parent_op
        top_level &= loop is None or loop.parent is func.body.block
    needed = (
        max(stages * operands, operands + tile_bytes)
        if top_level
        else stages * operands + tile_bytes
    )
    return needed + _SCRATCH_ALLOWANCE <= limit


def _sink_conversions(func: tt.FuncOp, target: TargetInfo) -> bool:
    changed, progress = False, True
    while progress:
        progress = False
        for conv in [o for o in func.walk() if isinstance(o, ConvertLayoutOp)]:
            if not _rematerializable(conv.src, [_MAX_REMAT]) and _sink_one(func, conv):
                progress = changed = True
    for store in [o for o in func.walk() if isinstance(o, tt.StoreOp) and is_tensor(o.ptr)]:
        changed |= _store_takes_value_layout(func, store, target)
    return changed


@target_pass
def remove_layout_conversions(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Remove, fold or rematerialize layout conversions. Returns whether the IR changed."""
    changed = _sink_conversions(func, target)
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
