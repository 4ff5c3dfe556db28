"""Loads that `pipeline` rings besides the staged dot operands: in a loop it pipelines, a load read
in registers whose value reaches a dot (attention backward's `m` and `Di` rows, which pass through
exp2 and products into the next dot's A operand) would otherwise wait out the full global latency in
every iteration. Triton pipelines such loads too (its latency assignment walks back from each dot
to every load it depends on). `stage_in_shared` makes one a staged tile, `local_alloc` then
`local_load` in the layout its reader wants, which `pipeline` then turns into a ring like the rest.
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt
from ..ir.ops.ttg import BlockedEncoding, ConvertLayoutOp, LocalAllocOp, LocalLoadOp, SharedEncoding
from ..ir.ops.wgmma import WarpGroupDotOp
from ..ir.types import MemDescType, ScalarType
from ..ir.values import BlockArgument, OpResult

I32 = ScalarType("i32")


def register_loads(body, staged: list, is_zero) -> list[tt.LoadOp]:
    """The loads of loop body `body`, other than `staged`'s, that can take cp.async (an absent or
    zero `other` (`is_zero`), at least 4 contiguous bytes per thread) and whose values reach a dot
    of the body."""
    uses: dict[int, list] = {}
    for op in body.walk():
        for v in op.operands:
            uses.setdefault(id(v), []).append(op)
    done = {id(load) for load, _ in staged}
    found = []
    for op in body.ops:
        if not isinstance(op, tt.LoadOp) or id(op) in done or op.is_volatile:
            continue
        enc = op.result.type.encoding if hasattr(op.result.type, "encoding") else None
        if not isinstance(enc, BlockedEncoding) or not is_zero(op.other):
            continue
        if enc.size_per_thread[enc.order[0]] * op.result.type.element.bitwidth // 8 < 4:
            continue
        readers = uses.get(id(op.result), [])
        if any(isinstance(r, LocalAllocOp) for r in readers):
            continue  # a dot operand that `_staged_loads` left out (stored transposed, ...)
        if _reaches_dot(op.result, uses):
            found.append(op)
    return found


def _reaches_dot(value, uses: dict[int, list]) -> bool:
    seen, work = set(), [value]
    while work:
        for user in uses.get(id(work.pop()), []):
            if isinstance(user, (tt.DotOp, WarpGroupDotOp)):
                return True
            if id(user) not in seen and not user.regions:
                seen.add(id(user))
                work.extend(user.results)
    return False


def derive_counters(loop: scf.ForOp, roots: list) -> bool:
    """Carried i32 counters that `roots` (the loads' pointers and masks) depend on, `c = init` and
    `c += inc` per iteration with `inc` invariant, in a loop of step 1: the body reads `init + (iv -
    lower) * inc` instead (the yield still carries `c` for the loop's result). A counter the rest of
    the body reads too (the causal dK/dV loop's `curr_m`, in the mask and in M's address) then no
    longer runs ahead with the addresses: `pipeline` keeps its uses in the body. Returns changed."""
    body = loop.body.block
    if not _is_constant(loop.step, 1):
        return False
    yield_op = body.ops[-1]
    walked = _walk_args(body, roots)
    changed = False
    for arg in [a for a in body.args[1:] if id(a) in walked and a.type == I32]:
        update = yield_op.operands[arg.index - 1]
        if not (isinstance(update, OpResult) and isinstance(update.op, arith.AddIOp)):
            continue
        add = update.op
        inc = add.rhs if add.lhs is arg else add.lhs if add.rhs is arg else None
        if inc is None or _defined_in(inc, body):
            continue
        top = body.ops[0]
        steps = _insert(body, top, arith.SubIOp(lhs=body.args[0], rhs=loop.lower), loop.loc)
        offset = _insert(body, top, arith.MulIOp(lhs=steps, rhs=inc), loop.loc)
        init = loop.init_args[arg.index - 1]
        value = _insert(body, top, arith.AddIOp(lhs=init, rhs=offset), loop.loc, arg.name_hint)
        for op in list(body.walk()):
            if op is not add:
                op.replace_operand(arg, value)
        changed = True
    return changed


def _walk_args(body, roots: list) -> set[int]:
    """The ids of the body's block arguments that `roots` depend on within one iteration."""
    found, seen, work = set(), set(), list(roots)
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument) and v.block is body:
            found.add(id(v))
        elif isinstance(v, OpResult) and id(v.op) not in seen and _defined_in(v, body):
            seen.add(id(v.op))
            work.extend(v.op.operands)
    return found


def _defined_in(v, body) -> bool:
    op = v.op if isinstance(v, OpResult) else None
    while op is not None and op.parent is not body:
        op = op.parent_op
    return op is not None or (isinstance(v, BlockArgument) and v.block is body)


def _is_constant(v, value: int) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and v.op.value == value


def _insert(block, before, op, loc, name=None):
    op.results = [OpResult(I32, op, 0, name)]
    op.loc = loc
    block.insert(block.ops.index(before), op)
    return op.results[0]


def stage_in_shared(func: tt.FuncOp, load: tt.LoadOp) -> LocalAllocOp:
    """`%x = tt.load` -> `%t = ttg.local_alloc %x; %y = ttg.local_load %t`, the readers of %x reading
    %y; where %x's one reader is a `ttg.convert_layout`, %y is read in the converted layout and the
    conversion goes (shared memory holds the tile whichever layout reads it). Returns the alloc."""
    t = load.result.type
    enc = t.encoding
    readers = [op for op in func.walk() if any(v is load.result for v in op.operands)]
    converts = len(readers) == 1 and isinstance(readers[0], ConvertLayoutOp)
    out = readers[0].result if converts else load.result
    # rows of 16 bytes, unswizzled: a thread's run of elements is one copy and one shared load
    shared = SharedEncoding(max(1, 128 // t.element.bitwidth), 1, 1, tuple(enc.order))
    alloc = LocalAllocOp(src=load.result)
    alloc.results = [
        OpResult(MemDescType(t.shape, t.element, shared), alloc, 0, load.result.name_hint)
    ]
    read = LocalLoadOp(src=alloc.result)
    read.results = [OpResult(out.type, read, 0, out.name_hint)]
    alloc.loc = read.loc = load.loc
    block = load.parent
    block.insert(block.ops.index(load) + 1, alloc)
    block.insert(block.ops.index(alloc) + 1, read)
    if converts:
        for op in func.walk():
            op.replace_operand(out, read.result)
        readers[0].erase()
    else:
        for reader in readers:
            reader.replace_operand(load.result, read.result)
    return alloc
