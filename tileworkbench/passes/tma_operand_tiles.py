"""`tma_operand_tiles`: a TMA load that only feeds wgmma operand tiles, and that `pipeline_tma` left
alone (a load outside loops, as attention's Q, or in a loop it does not pipeline), lands in a shared
tile of its own that wgmma reads by descriptor:
`%t = ttng.tma_load ...; %s = ttg.local_alloc %t` (one or more) becomes a one-slot `ttng.tma_ring`,
a `ttng.tma_copy` into it and a `ttng.tma_wait`, whose memdesc replaces every `%s`.

Without it the tile went shared -> registers -> shared: the registers took the `#dot_op` layout of
the operand, which for a B operand replicates the whole tile in every warp (a 64 x 64 fp16 K or V
tile is 64 registers a thread), and a tile loaded before a loop stayed live in registers through it
(ptxas spilled the causal attention forward: 356 to 2268 bytes). Runs after `wgmma_pipeline`, so a
one-slot tile is never taken for a pipelined ring there: its loop waits for the wgmma (pendings 0)
before the next iteration's copy overwrites the slot, after the copy's barrier.
"""

from __future__ import annotations

from ..ir.ops import tt, ttng
from ..ir.ops.ttg import LocalAllocOp
from ..ir.ops.wgmma import WarpGroupDotOp
from ..ir.types import MemDescType, ScalarType
from .software_pipeline import _Emitter
from .tma import tma_shared_encoding
from .wgmma import nvmma_for_operand

i32 = ScalarType("i32")
i1 = ScalarType("i1")


def tma_operand_tiles(func: tt.FuncOp) -> bool:
    """Put each TMA load that only feeds wgmma operand tiles in its own shared tile; returns
    whether any changed."""
    users: dict[int, list] = {}
    for op in func.walk():
        for v in op.operands:
            users.setdefault(id(v), []).append(op)
    changed = False
    for load in [op for op in func.walk() if isinstance(op, ttng.TMALoadOp)]:
        allocs = users.get(id(load.result), [])
        if allocs and all(_reads_slot_as_operand(alloc, load, users) for alloc in allocs):
            _to_shared(load, allocs, users)
            changed = True
    return changed


def _tile_type(load: ttng.TMALoadOp) -> MemDescType:
    """The shared tile of `load`'s box as the load's result sees it (transposed where `trans`)."""
    t = load.result.type
    return MemDescType(
        tuple(t.shape),
        t.element,
        tma_shared_encoding(load.swizzle, t.element.bitwidth // 8, load.trans),
    )


def _reads_slot_as_operand(alloc, load: ttng.TMALoadOp, users: dict[int, list]) -> bool:
    """Whether `alloc` is a `local_alloc` of the load whose only users are wgmma dots that take it
    as an operand that a descriptor can read in the tile's own layout (`#nvmma_shared`, transposed
    where the load is)."""
    if not isinstance(alloc, LocalAllocOp):
        return False
    view = _tile_type(load)
    dots = users.get(id(alloc.result), [])
    for dot in dots:
        if (
            not isinstance(dot, WarpGroupDotOp)
            or alloc.result not in (dot.a, dot.b)
            or dot.c is alloc.result
        ):
            return False
        op_idx = 0 if dot.a is alloc.result else 1
        want = nvmma_for_operand(
            op_idx, view.shape, view.element, view.encoding.order, dot.result.type.encoding
        )
        if want != view.encoding:
            return False
    return bool(dots)


def _to_shared(load: ttng.TMALoadOp, allocs: list, users: dict[int, list]) -> None:
    """Replace `load` and its `allocs` by a one-slot ring, a copy into it and a wait on it."""
    t = load.result.type
    box = (t.shape[1], t.shape[0]) if load.trans else tuple(t.shape)
    encoding = tma_shared_encoding(load.swizzle, t.element.bitwidth // 8, False)
    here = _Emitter(load.parent, load)
    name = load.result.name_hint
    ring = here.add(
        ttng.TMARingOp(), [MemDescType((1, *box), t.element, encoding)], load.loc, [name]
    )
    slot = here.const(0, loc=load.loc)
    always = here.const(True, i1, loc=load.loc)
    here.add(
        ttng.TMACopyOp(
            desc=load.desc, ring=ring, slot=slot, pred=always, offsets=list(load.offsets)
        ),
        (),
        load.loc,
    )
    tile = here.add(
        ttng.TMAWaitOp(ring=ring, slot=slot, trans=load.trans), [_tile_type(load)], load.loc, [name]
    )
    for alloc in allocs:
        for user in users.get(id(alloc.result), []):
            user.replace_operand(alloc.result, tile)
        alloc.erase()
    load.erase()
