"""`unroll`: loops with `tl.range(..., loop_unroll_factor=k)` (k > 1) run k copies of their body per
iteration, then a remainder loop for the last (trip count mod k) iterations, as Triton's LoopUnroll:

    scf.for %i = %lb to %ub step %s {u=k}    ->    %m = %lb + ((%ub - %lb) / (%s * k)) * (%s * k)
      body(%i)                                     scf.for %i = %lb to %m step %s * k
                                                     body(%i); body(%i + %s); ...; body(%i + (k-1) * %s)
                                                   scf.for %i = %m to %ub step %s
                                                     body(%i)

Carried values flow from copy to copy. The factor is consumed (the loops after it have none). Runs in
`TILE_OPT` after `licm`, so what is hoisted out of the loop is not copied k times.
"""

from __future__ import annotations

import copy

from ..ir.ops import arith, scf, tt
from ..ir.values import Block, OpResult, Region, Value


def unroll(func: tt.FuncOp) -> bool:
    """Unroll every `scf.for` with a `loop_unroll_factor` above 1. Returns whether any was."""
    loops = [op for op in func.walk() if isinstance(op, scf.ForOp) and op.loop_unroll_factor > 1]
    for loop in loops:
        _unroll(loop, loop.loop_unroll_factor)
    for op in func.walk():
        if isinstance(op, scf.ForOp):
            op.loop_unroll_factor = 0
    return bool(loops)


def _add(block: Block, before, op, result_type, loc) -> Value:
    op.results = [OpResult(result_type, op, 0)]
    op.loc = loc
    block.insert(block.ops.index(before), op)
    return op.results[0]


def _unroll(loop: scf.ForOp, factor: int) -> None:
    block, loc, index_type = loop.parent, loop.loc, loop.lower.type

    def add(op):
        return _add(block, loop, op, index_type, loc)

    span = add(arith.MulIOp(lhs=loop.step, rhs=add(arith.ConstantOp(value=factor))))
    trips = add(arith.DivSIOp(lhs=add(arith.SubIOp(lhs=loop.upper, rhs=loop.lower)), rhs=span))
    main_upper = add(arith.AddIOp(lhs=loop.lower, rhs=add(arith.MulIOp(lhs=trips, rhs=span))))
    # the remainder loop: the original one, from main_upper, carrying the main loop's results
    main = _main_loop(loop, factor, span, main_upper)
    block.insert(block.ops.index(loop), main)
    loop.lower = main_upper
    loop.init_args = list(main.results)


def _main_loop(loop: scf.ForOp, factor: int, span: Value, upper: Value) -> scf.ForOp:
    body = loop.body.block
    new_body = Block([a.type for a in body.args], [a.name_hint for a in body.args])
    iv = new_body.args[0]
    carried = list(new_body.args[1:])
    for k in range(factor):
        mapping = {id(body.args[0]): iv}
        if k:  # copy k runs iteration iv + k * step
            step_k = _append(new_body, arith.ConstantOp(value=k), iv.type, loop.loc)
            scaled = _append(new_body, arith.MulIOp(lhs=loop.step, rhs=step_k), iv.type, loop.loc)
            mapping[id(body.args[0])] = _append(
                new_body, arith.AddIOp(lhs=iv, rhs=scaled), iv.type, loop.loc
            )
        mapping.update({id(old): new for old, new in zip(body.args[1:], carried)})
        for op in body.ops[:-1]:
            new_body.append(clone(op, mapping))
        carried = [mapping.get(id(v), v) for v in body.ops[-1].operands]
    new_yield = copy.copy(body.ops[-1])
    new_yield.values = carried
    new_yield.results = []
    new_body.append(new_yield)
    main = scf.ForOp(
        lower=loop.lower,
        upper=upper,
        step=span,
        init_args=list(loop.init_args),
        body=Region([new_body]),
        disable_licm=loop.disable_licm,
        warp_specialize=loop.warp_specialize,
    )
    main.results = [OpResult(r.type, main, i, r.name_hint) for i, r in enumerate(loop.results)]
    main.loc = loop.loc
    return main


def _append(block: Block, op, result_type, loc) -> Value:
    op.results = [OpResult(result_type, op, 0)]
    op.loc = loc
    block.append(op)
    return op.results[0]


def clone(op, mapping: dict[int, Value]):
    """A copy of `op` (regions included) reading its operands through `mapping`, which learns the
    copy's results and block arguments."""
    new = copy.copy(op)
    for name, kind in op._field_kinds():
        value = getattr(op, name)
        if kind == "operand" and value is not None:
            setattr(new, name, mapping.get(id(value), value))
        elif kind == "operands":
            setattr(new, name, [mapping.get(id(v), v) for v in value])
        elif kind == "region":
            region = _clone_region(value, mapping)
            region.parent = new
            setattr(new, name, region)
    new.results = [OpResult(r.type, new, i, r.name_hint) for i, r in enumerate(op.results)]
    for old, fresh in zip(op.results, new.results):
        mapping[id(old)] = fresh
    return new


def _clone_region(region: Region, mapping: dict[int, Value]) -> Region:
    blocks = []
    for block in region.blocks:
        new_block = Block([a.type for a in block.args], [a.name_hint for a in block.args])
        mapping.update({id(a): b for a, b in zip(block.args, new_block.args)})
        for op in block.ops:
            new_block.append(clone(op, mapping))
        blocks.append(new_block)
    return Region(blocks)
