"""`scf.for`, `scf.if` and `scf.while` as LLVM basic blocks; loop-carried tensors stay in registers
as one phi per register."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import scf
from ....ir.ops.wgmma import WarpGroupDotWaitOp
from ....ir.types import TensorType
from ..llvm_types import llvm_type
from ..values import TVal
from . import lowers
from .wgmma import waits_lowered_with


def flatten(lw, values: list) -> list:
    out = []
    for v in values:
        out.extend(lw.hooks.carried_registers(lw, v) if isinstance(v, TVal) else [v])
    return out


def unflatten(lw, templates, flat: list) -> list:
    """Rebuild values shaped like the IR values `templates` from a flat list of LLVM values."""
    out, i = [], 0
    for t in templates:
        if isinstance(t.type, TensorType):
            layout = lw.layout(t)
            n = len(lw.hooks.carried_types(lw, layout, llvm_type(t.type)))
            out.append(lw.hooks.tensor_of_registers(lw, flat[i : i + n], layout))
            i += n
        else:
            out.append(flat[i])
            i += 1
    return out


def _phis(lw, templates) -> list:
    phis = []
    for t in templates:
        if isinstance(t.type, TensorType):
            types = lw.hooks.carried_types(lw, lw.layout(t), llvm_type(t.type))
        else:
            types = [llvm_type(t.type)]
        phis += [lw.builder.phi(ty) for ty in types]
    return phis


def _loop_hints(lw, op, backedge) -> None:
    """`disable_licm`: the loop's back edge carries `!llvm.loop !{self, !"llvm.licm.disable"}`."""
    if not op.disable_licm:
        return
    hint = lw.module.add_metadata([ir.MetaDataString(lw.module, "llvm.licm.disable")])
    loop_id = lw.module.add_metadata([hint])
    loop_id.operands = (loop_id, hint)  # a loop ID names itself (LLVM's loop metadata)
    backedge.set_metadata("llvm.loop", loop_id)


def _drains(op: scf.ForOp) -> list:
    """The `wgmma.wait_group 0` ops right after the loop, lowered as one asm, when each waits for one
    of its results (`wgmma_pipeline`'s drain of the groups left in flight); else none."""
    ops = op.parent.ops
    first = ops[ops.index(op) + 1] if op is not ops[-1] else None
    if not (isinstance(first, WarpGroupDotWaitOp) and first.pendings == 0):
        return []
    drains = [first] + waits_lowered_with(first)
    return drains if all(any(d.acc is r for r in op.results) for d in drains) else []


@lowers(scf.ForOp)
def lower_for(lw, op) -> None:
    """A header-tested loop. A loop that a wgmma drain follows gets a guard, and the drain is lowered
    on the loop's exit edge: on the zero-trip path the accumulators are the init values (mov
    instructions), and reaching the `wgmma.wait_group` that way makes ptxas serialize every wgmma
    of the function (info C7515)."""
    b = lw.builder
    body_block = op.body.block
    iv_arg, carried = body_block.args[0], body_block.args[1:]
    lower, upper, step = lw.get(op.lower), lw.get(op.upper), lw.get(op.step)
    inits = flatten(lw, [lw.get(v) for v in op.init_args])
    signed = not getattr(iv_arg.type, "name", "i").startswith("u")
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    drains = _drains(op)
    header = lw.function.append_basic_block("for.header")
    body = lw.function.append_basic_block("for.body")
    exit_block = lw.function.append_basic_block("for.exit")
    if drains:
        skip = lw.function.append_basic_block("for.skip")
        b.cbranch(cmp("<", lower, upper), header, skip)
    else:
        b.branch(header)
    pre = b.block
    b.position_at_end(header)
    iv = b.phi(lower.type)
    phis = _phis(lw, carried)
    b.cbranch(cmp("<", iv, upper), body, exit_block)
    b.position_at_end(body)
    lw.set(iv_arg, iv)
    for arg, value in zip(carried, unflatten(lw, carried, phis)):
        lw.set(arg, value)
    lw.loop_depth += 1
    yielded = flatten(lw, lw.lower_block(body_block))
    lw.loop_depth -= 1
    next_iv = b.add(iv, step)
    latch = b.block
    _loop_hints(lw, op, b.branch(header))
    iv.add_incoming(lower, pre)
    iv.add_incoming(next_iv, latch)
    for phi, init, new in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(new, latch)
    b.position_at_end(exit_block)
    for res, value in zip(op.results, unflatten(lw, op.results, phis)):
        lw.set(res, value)
    if drains:
        _drain_on_exit(lw, op, drains, inits, skip)


def _drain_on_exit(lw, op, drains: list, inits: list, skip) -> None:
    """Lower `drains` in the exit block, then merge the exit edge with the zero-trip edge (`skip`,
    where the results are the init values)."""
    b = lw.builder
    lw.lower_op(drains[0])  # one asm for all of them (lowering/wgmma.py)
    lw.lowered_ahead.add(drains[0])
    waited = {id(d.acc): d for d in drains}
    values = [lw.get(waited[id(r)].result) if id(r) in waited else lw.get(r) for r in op.results]
    from_exit = flatten(lw, values)
    exit_end = b.block
    merge = lw.function.append_basic_block("for.merged")
    b.branch(merge)
    b.position_at_end(skip)
    b.branch(merge)
    b.position_at_end(merge)
    merged = []
    for value, init in zip(from_exit, inits):
        phi = b.phi(value.type)
        phi.add_incoming(value, exit_end)
        phi.add_incoming(init, skip)
        merged.append(phi)
    for res, value in zip(op.results, unflatten(lw, op.results, merged)):
        lw.set(res, value)
        if id(res) in waited:
            lw.set(waited[id(res)].result, value)


@lowers(scf.IfOp)
def lower_if(lw, op) -> None:
    b = lw.builder
    cond = lw.get(op.condition)
    then_bb = lw.function.append_basic_block("if.then")
    else_bb = lw.function.append_basic_block("if.else")
    merge = lw.function.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    incoming = []
    for region, block in ((op.then_region, then_bb), (op.else_region, else_bb)):
        b.position_at_end(block)
        values = lw.lower_block(region.block) if region.blocks else []
        incoming.append((flatten(lw, values), b.block))
        b.branch(merge)
    b.position_at_end(merge)
    phis = _phis(lw, op.results)
    for values, block in incoming:
        for phi, v in zip(phis, values):
            phi.add_incoming(v, block)
    for res, value in zip(op.results, unflatten(lw, op.results, phis)):
        lw.set(res, value)


@lowers(scf.WhileOp)
def lower_while(lw, op) -> None:
    b = lw.builder
    before_block, after_block = op.before.block, op.after.block
    inits = flatten(lw, [lw.get(v) for v in op.init_args])
    pre = b.block
    before = lw.function.append_basic_block("while.before")
    after = lw.function.append_basic_block("while.body")
    exit_block = lw.function.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    phis = _phis(lw, before_block.args)
    for arg, value in zip(before_block.args, unflatten(lw, before_block.args, phis)):
        lw.set(arg, value)
    terminator = before_block.ops[-1]
    lw.loop_depth += 1
    lw.lower_block(before_block)
    cond = lw.get(terminator.condition)
    passed = [lw.get(v) for v in terminator.args]
    b.cbranch(cond, after, exit_block)
    b.position_at_end(after)
    for arg, value in zip(after_block.args, passed):
        lw.set(arg, value)
    yielded = flatten(lw, lw.lower_block(after_block))
    lw.loop_depth -= 1
    latch = b.block
    _loop_hints(lw, op, b.branch(before))
    for phi, init, new in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(new, latch)
    b.position_at_end(exit_block)
    for res, value in zip(op.results, passed):
        lw.set(res, value)
