"""Hopper's `wgmma` for `tt.dot` (sm_90a): which dots take the version-3 `#mma` layout, the
`#nvmma_shared` swizzle of their operand tiles, and the `wgmma` pass that turns such a dot, once
its operands are staged in shared memory (`stage_dot_operands`), into `ttng.warp_group_dot` on the
shared tiles plus a `ttng.warp_group_dot_wait`, and `wgmma_pipeline`, which keeps one wgmma group in
flight across loop iterations where the operand rings make that safe.

A dot runs on `wgmma` (else on `mma.sync`, chosen in `mma.py`) when the target has it
(`TargetInfo.wgmma`: sm_90a), `num_warps` is a multiple of 4, the dot is 2-D
and not `tf32x3`, M is at least 64, K a multiple of the instruction's 32 bytes, and each operand tile
can be read by a descriptor: tf32 and 8-bit operands only K-major (K the contiguous dimension), 16-bit
ones K- or MN-major, with rows of at least 32 bytes. Both dots of a chain (attention: p = f(q @ k),
p @ v) put every warp group on M, one instruction spanning N, so the first's accumulator is, element
for element, the second's A operand in registers (`#dot_op<opIdx=0, parent=#mma v3>`, the mma.sync
A fragment per warp): the second dot takes A from registers (16-bit types) and only B by descriptor.
"""

from __future__ import annotations

from ..config import config
from ..ir.ops import scf, tt, ttng
from ..ir.ops.ttg import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    LocalAllocOp,
    LocalLoadOp,
    MemDescIndexOp,
    MemDescTransOp,
    MmaEncoding,
    NvmmaSharedEncoding,
    trans_memdesc,
)
from ..ir.ops.wgmma import WarpGroupDotOp, WarpGroupDotWaitOp
from ..ir.types import MemDescType, element_type
from ..ir.values import BlockArgument, OpResult, Value
from ..target import TargetInfo, target_pass
from .mma import fed_by_dot, mma_kind

WARP_GROUP = 4  # warps per warp group
INSTR_M = 64  # rows of one wgmma (a warp group's 4 x 16)
MAX_INSTR_N = 256


def wgmma_encoding(
    op: tt.DotOp,
    num_warps: int,
    orders: tuple[tuple[int, ...], ...],
    chained: bool = False,
    a_in_registers: bool = False,
) -> MmaEncoding | None:
    """The version-3 `#mma` layout of `op`'s result, or None when `wgmma` cannot run it.
    `orders`: the memory order (contiguous dimension first) the operands A and B arrive in.
    `chained`: every warp group on M (a dot of an attention chain); `a_in_registers`: A comes from
    registers (the chain's second dot), so only B needs a descriptor."""
    kind = mma_kind(op, fp8=True)  # wgmma takes fp8 wherever it runs (sm_90a)
    shape = op.result.type.shape
    if kind is None or len(shape) != 2 or num_warps % WARP_GROUP or op.input_precision == "tf32x3":
        return None
    bits = element_type(op.a.type).bitwidth
    instr_k = 256 // bits  # 32 bytes of K per instruction
    m, n = shape
    k = op.a.type.shape[-1]
    if m < INSTR_M or k % instr_k or n < 8:
        return None
    a_in_registers = a_in_registers and bits in (8, 16)  # not tf32's: `_a_from_registers`
    groups = num_warps // WARP_GROUP
    if chained:  # rows of the first dot's result stay in the warp that multiplies them by V
        if m < INSTR_M * groups:
            return None
        groups_m, groups_n = groups, 1
    else:
        groups_m, groups_n = 1, 1
        while groups_m * groups_n < groups:  # warp groups on M first (Triton's)
            if m >= INSTR_M * groups_m * 2:
                groups_m *= 2
            else:
                groups_n *= 2
    instr_n = min(MAX_INSTR_N, n // groups_n)
    if instr_n < 8:
        return None
    enc = MmaEncoding(3, (WARP_GROUP * groups_m, groups_n), (16, instr_n, instr_k))
    for op_idx, (operand, order) in enumerate(zip((op.a, op.b), orders)):
        if op_idx == 0 and a_in_registers:
            continue
        if (
            nvmma_for_operand(op_idx, operand.type.shape, element_type(operand.type), order, enc)
            is None
        ):
            return None
    return enc


def nvmma_for_operand(
    op_idx: int, shape: tuple[int, ...], element, order: tuple[int, ...], parent: MmaEncoding
) -> NvmmaSharedEncoding | None:
    """The `#nvmma_shared` layout of operand `op_idx` (0: A, M x K; 1: B, K x N) stored with
    `order[0]` contiguous, or None when no descriptor can read it: the widest swizzle (128, 64 or
    32 bytes) that a row of the tile fills and that, along M or N (MN-major), one instruction
    covers whole."""
    bits = element.bitwidth
    k_dim = 1 if op_idx == 0 else 0
    mn_major = order[0] != k_dim
    if mn_major and bits != 16:
        return None  # the PTX ISA: only 16-bit operands may be MN-major
    row_bytes = shape[order[0]] * bits // 8
    if mn_major:  # a row is M or N: one instruction reads 64 rows of A or instr_n columns of B
        row_bytes = min(row_bytes, (INSTR_M if op_idx == 0 else parent.instr_shape[1]) * bits // 8)
    for swizzle in (128, 64, 32):
        if row_bytes >= swizzle and shape[1 - order[0]] >= 8:
            return NvmmaSharedEncoding(swizzle, bits, tuple(order))
    return None


def operand_order(value: Value, load_orders: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The order a dot operand is staged in: its load's (through one-operand elementwise ops and
    `tt.trans`, which is staged as its source and read transposed, as a TMA box folded with one
    is), else row-major (the blocked default). An fp8 B read through `tt.trans` of a row-major tile
    (`desc.load(...).T`) is then K-major, which `wgmma` needs of 8-bit operands."""
    while isinstance(value, OpResult):
        op = value.op
        if id(op) in load_orders:
            return load_orders[id(op)]
        if isinstance(op, tt.TransOp):  # result dim i is source dim order[i]
            source = operand_order(op.src, load_orders)
            return tuple(tuple(op.order).index(dim) for dim in source)
        if isinstance(op, ttng.TMALoadOp) and op.trans:  # a row-major box read transposed
            return tuple(range(len(value.type.shape)))
        tensors = [v for v in op.operands if hasattr(v.type, "shape")]
        if not (op.elementwise and len(tensors) == 1):
            break
        value = tensors[0]
    rank = len(value.type.shape)
    return tuple(range(rank - 1, -1, -1))


def is_wgmma(encoding) -> bool:
    return isinstance(encoding, MmaEncoding) and encoding.version == 3


# -- the pass ---------------------------------------------------------------------------------------


def wgmma(func: tt.FuncOp) -> bool:
    """Replace each `tt.dot` with a version-3 `#mma` result by `ttng.warp_group_dot` on its operands'
    shared tiles (A in registers where `_a_from_registers`) and a `ttng.warp_group_dot_wait
    {pendings = 0}`. Returns whether any changed."""
    dots = [
        op for op in func.walk() if isinstance(op, tt.DotOp) and is_wgmma(op.result.type.encoding)
    ]
    for dot in dots:
        a = dot.a if _a_from_registers(dot) else _shared_tile(dot, 0, dot.a)
        b = _shared_tile(dot, 1, dot.b)
        issue = WarpGroupDotOp(a=a, b=b, c=dot.c, input_precision=dot.input_precision)
        issue.results = [OpResult(dot.result.type, issue, 0, dot.result.name_hint)]
        issue.loc = dot.loc
        wait = _wait_for(issue.result, dot.loc)
        block = dot.parent
        index = block.ops.index(dot)
        block.insert(index, issue)
        block.insert(index + 1, wait)
        for user in func.walk():
            if user is not wait:
                user.replace_operand(dot.result, wait.result)
        dot.erase()
        for operand in (dot.a, dot.b):
            _erase_if_unused(func, operand)
    if dots:
        _stage_untransposed(func)
        _merge_equal_allocs(func)
    return bool(dots)


def _a_from_registers(dot: tt.DotOp) -> bool:
    """Whether the dot's A stays in registers (the `#dot_op` fragments of the register-A form): a
    16- or 8-bit A fed by another dot's result, the same test `dot_layout.dot_encoding` chose the
    layout by (the first dot of the chain may already be a `warp_group_dot` here). Any other A is
    read from shared memory, so that a descriptor load feeding it can still land in a TMA ring
    slot."""
    if element_type(dot.a.type).bitwidth not in (8, 16):
        return False
    return fed_by_dot(dot, (tt.DotOp, WarpGroupDotOp, WarpGroupDotWaitOp))


def _shared_tile(dot: tt.DotOp, op_idx: int, value: Value) -> Value:
    """The shared tile a dot operand was read from (`ttg.local_load` of a `#nvmma_shared` tile), or a
    new `ttg.local_alloc` of the operand's registers (an operand made in registers)."""
    if isinstance(value, OpResult) and isinstance(value.op, LocalLoadOp):
        src = value.op.src
        if isinstance(src.type.encoding, NvmmaSharedEncoding):
            return src
    t = value.type
    rank = len(t.shape)
    order = tuple(range(rank - 1, -1, -1))
    if op_idx == 1 and t.element.bitwidth != 16:
        order = (0, 1)  # 8-bit and tf32 B must be K-major: store it transposed
    shared = nvmma_for_operand(op_idx, t.shape, t.element, order, dot.result.type.encoding)
    if shared is None:  # the choice in wgmma_encoding checked the staged order; this one is ours
        raise ValueError(f"internal: no #nvmma_shared layout for {t}")
    alloc = LocalAllocOp(src=value)
    alloc.results = [OpResult(MemDescType(t.shape, t.element, shared), alloc, 0, value.name_hint)]
    alloc.loc = dot.loc
    block = dot.parent
    block.insert(block.ops.index(dot), alloc)
    return alloc.result


def _stage_untransposed(func: tt.FuncOp) -> None:
    """`local_alloc(tt.trans(x))` read only by wgmma -> `memdesc_trans(local_alloc(x))`: x's bytes in
    the permuted layout are x.T's, so x is stored as it is and read transposed (Triton's
    FuseTransMMAV3Plus). A load used both ways (attention's backward: k @ qT and ds @ qT.T) then
    fills one tile (`_merge_equal_allocs`), which `pipeline` can make a cp.async ring."""
    for alloc in [op for op in func.walk() if isinstance(op, LocalAllocOp)]:
        trans = alloc.src.op if isinstance(alloc.src, OpResult) else None
        if not (isinstance(trans, tt.TransOp) and tuple(trans.order) == (1, 0)):
            continue
        if isinstance(getattr(trans.src, "op", None), ttng.TMALoadOp):
            continue  # TMA's passes put a slot in an alloc's place, whose view assumes its layout
        tile = alloc.result.type
        readers = _users(func, alloc.result)
        if not isinstance(tile.encoding, NvmmaSharedEncoding) or not all(
            isinstance(r, WarpGroupDotOp) for r in readers
        ):
            continue
        staged = LocalAllocOp(src=trans.src)
        staged.results = [
            OpResult(trans_memdesc(tile, trans.order), staged, 0, trans.src.name_hint)
        ]
        view = MemDescTransOp(src=staged.result, order=trans.order)
        view.results = [OpResult(tile, view, 0, alloc.result.name_hint)]
        staged.loc = view.loc = alloc.loc
        block = alloc.parent
        block.insert(block.ops.index(alloc), staged)
        block.insert(block.ops.index(alloc), view)
        for reader in readers:
            reader.replace_operand(alloc.result, view.result)
        alloc.erase()
        _erase_if_unused(func, trans.result)


def _erase_if_unused(func: tt.FuncOp, value: Value) -> None:
    """Erase the operand's `local_load` or `tt.trans` once no op reads it (a load feeding both a tile
    and a dead trans in registers would not be pipelined)."""
    if not isinstance(value, OpResult) or not isinstance(value.op, (LocalLoadOp, tt.TransOp)):
        return
    if any(v is value for op in func.walk() for v in op.operands):
        return
    value.op.erase()


def _merge_equal_allocs(func: tt.FuncOp) -> None:
    """One tile for the `local_alloc`s of one value with one layout in one block: each later one's
    readers read the first (a tile is written only when allocated). The loads of attention's
    backward that feed two dots then have one tile each; K and V, read by two loops, take 16 KB
    less each at head dim 64."""
    first: dict[tuple, LocalAllocOp] = {}
    for op in list(func.walk()):
        if not isinstance(op, LocalAllocOp) or op.src is None:
            continue
        key = (id(op.src), id(op.parent), op.result.type)
        if key not in first:
            first[key] = op
            continue
        for user in func.walk():
            user.replace_operand(op.result, first[key].result)
        op.erase()


# -- one wgmma group in flight ------------------------------------------------------------------------


@target_pass
def wgmma_pipeline(func: tt.FuncOp, target: TargetInfo) -> bool:
    """In a loop whose only `ttng.warp_group_dot` accumulates into a carried value and reads both tiles
    from `pipeline` or TMA rings (see `_ring_kind`), wait with `pendings = 1` inside the loop, so the
    wgmma of iteration i runs on while iteration i + 1's copies are issued and its tiles awaited, and
    wait for it (`pendings = 0`) after the loop.
    Runs after `pipeline`. Returns whether any wait changed."""
    changed = False
    for loop in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        stages = target.num_stages
        changed |= _keep_one_in_flight(func, loop, stages) or (
            config.chained_wgmma_in_flight and _chained_dot_in_flight(func, loop, stages)
        )
    return changed


def _keep_one_in_flight(func: tt.FuncOp, loop: scf.ForOp, stages: int) -> bool:
    body = loop.body.block
    dots = [op for op in body.ops if isinstance(op, WarpGroupDotOp)]
    if len(dots) != 1:
        return False
    dot = dots[0]
    waits = _users(func, dot.result)
    if len(waits) != 1 or not isinstance(waits[0], WarpGroupDotWaitOp):
        return False
    wait = waits[0]
    yield_op = body.ops[-1]
    carried = dot.c
    # the accumulator goes round the loop untouched: only the next wgmma reads the in-flight value
    if not (isinstance(carried, BlockArgument) and carried.block is body and carried.index > 0):
        return False
    position = carried.index - 1
    if (
        _users(func, carried) != [dot]
        or _users(func, wait.result) != [yield_op]
        or yield_op.values[position] is not wait.result
    ):
        return False
    rings = [_ring_kind(tile, stages) for tile in (dot.a, dot.b)]
    if None in rings:
        return False
    if "refilled" in rings:
        # a ring of `stages` slots is refilled, at the end of iteration i, in the slot iteration i - 1
        # read; wait(1) retires that wgmma group for this warp group only, so a barrier after it
        # (as Triton's membar puts one) orders every warp group's reads before the copies
        copies = [i for i, op in enumerate(body.ops) if isinstance(op, AsyncCopyGlobalToLocalOp)]
        at = body.ops.index(wait)
        if not copies or min(copies) < at:
            return False
        barrier = tt.BarrierOp()
        barrier.loc = dot.loc
        body.insert(at + 1, barrier)
    wait.pendings = 1
    _drain_after(func, loop, position, dot.loc)
    return True


def _chained_dot_in_flight(func: tt.FuncOp, loop: scf.ForOp, stages: int) -> bool:
    """In a loop of two or more wgmma dots where the last accumulates into a carried value
    (attention's p @ v; the backward's dk += ds @ q and dq += ds @ k), leave the last in flight across
    the back edge, as Triton does: the next iteration waits for it together with its first dot (one
    `wgmma.wait_group 0` for both), before anything reads the carried value; the loop's result is
    waited for after the loop. Where the last dot's B ring has `num_stages` slots, a barrier before
    the refill copies keeps every warp group's in-flight read of the slot ahead of them (each warp
    group's wait retires its own wgmmas only). At 2 stages the refill copies (cp.async or TMA) move
    up to right after that first wait (`_copy_issue`)."""
    body = loop.body.block
    dots = [op for op in body.ops if isinstance(op, WarpGroupDotOp)]
    if len(dots) < 2:
        return False
    waits = [_users(func, dot.result) for dot in dots]
    if any(len(w) != 1 or not isinstance(w[0], WarpGroupDotWaitOp) or w[0].pendings for w in waits):
        return False
    first_wait, second_wait = waits[0][0], waits[-1][0]
    dots = [dots[0], dots[-1]]
    yield_op = body.ops[-1]
    if _users(func, second_wait.result) != [yield_op]:
        return False
    position = [i for i, v in enumerate(yield_op.values) if v is second_wait.result]
    if len(position) != 1:
        return False
    carried = body.args[position[0] + 1]
    after = body.ops.index(first_wait)
    # the carried value is read only after the first dot's wait, by ops of the body itself
    if not all(user in body.ops and body.ops.index(user) > after for user in _users(func, carried)):
        return False
    if body.ops.index(dots[1]) < after:
        return False
    tiles = [t for t in (dots[1].a, dots[1].b) if isinstance(t.type, MemDescType)]
    rings = [_ring_kind(tile, stages) for tile in tiles]
    if not set(rings) <= {"spare", "refilled", "tma"}:
        return False
    if "tma" in rings:
        # a TMA copy refills the slot iteration i - 1 read, after a barrier of its own: every warp
        # group is then past its first wait of iteration i, which retired its last dot of i - 1
        copies = [op for op in body.ops if isinstance(op, ttng.TMACopyOp)]
        if any(body.ops.index(op) < after for op in copies):
            return False
    # at 2 stages the refill copies (of iteration i + 1, into the slots iteration i - 1 read, which
    # no wgmma reads after that wait) go right after it: at the end of the iteration the next
    # one's first wait met them at once, and the ring hid nothing. With more stages they have
    # iterations to arrive in, and cp.async copies issued early would hold their addresses through
    # the softmax (registers)
    issue = _copy_issue(body, after) if stages == 2 else []
    if "refilled" in rings:
        copies = [op for op in body.ops[after:] if isinstance(op, AsyncCopyGlobalToLocalOp)]
        if not copies:
            return False
        barrier = tt.BarrierOp()
        barrier.loc = dots[1].loc
        body.insert(body.ops.index(copies[0]), barrier)
        issue = [barrier, *issue] if issue else []
    waited = _wait_for(carried, dots[1].loc)
    for user in _users(func, carried):
        user.replace_operand(carried, waited.result)
    body.insert(after + 1, waited)
    for offset, op in enumerate(issue):
        body.remove(op)
        body.insert(after + 2 + offset, op)
    yield_op.replace_operand(second_wait.result, dots[1].result)
    second_wait.erase()
    _drain_after(func, loop, position[0], dots[1].loc)
    return True


def _copy_issue(body, after: int) -> list:
    """The copies (cp.async and their commits, TMA's) after position `after` of `body` with the ops
    computing their operands there (addresses, masks, slots, coordinates), in order; [] where one
    of those is not pure."""
    seeds = [
        op
        for op in body.ops[after + 1 :]
        if isinstance(op, (AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, ttng.TMACopyOp))
    ]
    defined = {id(r): op for op in body.ops[after + 1 :] for r in op.results}
    needed, stack = {id(op) for op in seeds}, list(seeds)
    while stack:
        for v in stack.pop().operands:
            op = defined.get(id(v))
            if op is not None and id(op) not in needed:
                if not op.pure or op.regions:
                    return []
                needed.add(id(op))
                stack.append(op)
    return [op for op in body.ops[after + 1 :] if id(op) in needed]


def _wait_for(value: Value, loc) -> WarpGroupDotWaitOp:
    """A new `ttng.warp_group_dot_wait {pendings = 0}` of `value` (not yet in a block)."""
    wait = WarpGroupDotWaitOp(acc=value, pendings=0)
    wait.results = [OpResult(value.type, wait, 0, value.name_hint)]
    wait.loc = loc
    return wait


def _drain_after(func: tt.FuncOp, loop: scf.ForOp, position: int, loc) -> None:
    """Wait for the loop's result `position` (left in flight) right after the loop, for its users."""
    result = loop.results[position]
    drain = _wait_for(result, loc)
    for user in _users(func, result):
        user.replace_operand(result, drain.result)
    loop.parent.insert(loop.parent.ops.index(loop) + 1, drain)


def _ring_kind(tile: Value, stages: int) -> str | None:
    """How `tile`'s ring lets one wgmma group stay in flight, or None where it does not:
    "spare" for a `pipeline` ring of `stages + 1` slots (the slot refilled in iteration i is the one
    iteration i - 2 read); "refilled" for one of `stages` slots (refilled in the slot iteration i - 1
    read: safe after this iteration's wait(1) and a barrier); "tma" for a TMA ring's slot
    (`ttng.tma_wait`: its copies come after the wait and a barrier already)."""
    if isinstance(tile, OpResult) and isinstance(tile.op, ttng.TMAWaitOp):
        return "tma"
    if isinstance(tile, OpResult) and isinstance(tile.op, MemDescTransOp):
        tile = tile.op.src  # a slot read transposed
    if not (isinstance(tile, OpResult) and isinstance(tile.op, MemDescIndexOp)):
        return None
    ring = tile.op.src
    if not (
        isinstance(ring, OpResult) and isinstance(ring.op, LocalAllocOp) and ring.op.src is None
    ):
        return None
    return (
        {stages + 1: "spare", stages: "refilled"}.get(ring.type.shape[0]) if stages >= 2 else None
    )


def _users(func: tt.FuncOp, value: Value) -> list:
    return [op for op in func.walk() if any(v is value for v in op.operands)]
