"""Property test of the whole `TILE_OPT` pipeline: random kernels with an `scf.for` (invariant and
variant nodes, a carried value, stores inside the loop) and an `scf.if` (constant or runtime
condition) give bit-identical results in the interpreter before and after the pipeline.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_canonicalize_property import (
    _NUMPY,
    FLOAT_OPS,
    INT_OPS,
    Dag,
    N,
    binary,
    constant_values,
    grow,
    random_inputs,
    same_bits,
    unary,
)

from tileworkbench.backends.interpreter import run
from tileworkbench.ir import Block, Region, verify
from tileworkbench.ir.ops import arith, scf, tt
from tileworkbench.ir.types import f16, f32, i1, i8, i32, i64, u32
from tileworkbench.passes import TILE_OPT, run_passes

TRIPS = 3
BODY_SLOTS = 64  # loop-body values are stored from this slot on; top-level ones below it
MAX_BODY_NODES = 5


def scalar_i32(d: Dag, value: int):
    return d.b.value(arith.ConstantOp, i32, value=value)


def store_slot(d: Dag, value, slot):
    """Store `value` at elements slot*N .. slot*N+N-1 of `out`; `slot` is an i32 scalar value."""
    b = d.b
    start = b.value(arith.MulIOp, i32, lhs=slot, rhs=scalar_i32(d, N))
    offs = b.value(arith.AddIOp, d.offs.type, lhs=d.splat(start), rhs=d.offs)
    base = d.splat(d.func.args[3])
    b.create(tt.StoreOp, ptr=b.value(tt.AddPtrOp, base.type, ptr=base, offset=offs), value=value)


def iv_as_element(d: Dag, iv):
    """The induction variable as a tensor of the DAG's element type."""
    v, t = d.splat(iv), d.t
    if t == i32:
        return v
    if t.is_float:
        return unary(d, arith.SIToFPOp, v, t)
    if t.bitwidth != 32:
        return unary(d, arith.ExtSIOp if t.bitwidth > 32 else arith.TruncIOp, v, t)
    return unary(d, arith.BitcastOp, v, t)


def add_loop(d: Dag, data, is_int: bool) -> None:
    lower = data.draw(st.sampled_from([0, 0, 0, 2, TRIPS]))  # TRIPS: a loop that never runs
    bounds = [scalar_i32(d, lower), scalar_i32(d, TRIPS), scalar_i32(d, 1)]
    init = data.draw(st.sampled_from(d.pool))
    block = Block([i32, d.tensor], ["iv", "acc"])
    loop = d.b.create(
        scf.ForOp,
        [d.tensor],
        lower=bounds[0],
        upper=bounds[1],
        step=bounds[2],
        init_args=[init],
        body=Region([block]),
    )
    outer = d.pool
    with d.b.at_end(block):
        iv, acc = block.args
        d.pool = outer + [iv_as_element(d, iv), acc]
        for k in range(data.draw(st.integers(1, MAX_BODY_NODES))):
            grow(d, data, is_int)
            slot = d.b.value(arith.AddIOp, i32, lhs=scalar_i32(d, BODY_SLOTS + k * TRIPS), rhs=iv)
            store_slot(d, d.pool[-1], slot)
        d.b.create(scf.YieldOp, values=[data.draw(st.sampled_from(d.pool[len(outer) :]))])
    # Sometimes nothing reads the loop's result: dce may drop the carried value only if the body's
    # stores do not read it either.
    d.pool = outer + ([loop.results[0]] if data.draw(st.booleans()) else [])


def add_if(d: Dag, data, is_int: bool) -> None:
    kind = data.draw(st.integers(0, 2))
    if kind < 2:
        condition = d.b.value(arith.ConstantOp, i1, value=bool(kind))
    else:
        scalar = d.b.value(arith.ConstantOp, d.t, value=data.draw(constant_values(d.t)))
        cmp, predicate = (arith.CmpIOp, "slt") if is_int else (arith.CmpFOp, "olt")
        condition = d.b.value(cmp, i1, predicate=predicate, lhs=d.func.args[2], rhs=scalar)
    branches = [Block(), Block()]
    op = d.b.create(
        scf.IfOp,
        [d.tensor],
        condition=condition,
        then_region=Region([branches[0]]),
        else_region=Region([branches[1]]),
    )
    outer = d.pool
    for block in branches:
        with d.b.at_end(block):
            d.pool = list(outer)
            for _ in range(data.draw(st.integers(0, 2))):
                grow(d, data, is_int)
            d.b.create(scf.YieldOp, values=[d.pool[-1]])
    d.pool = outer + [op.results[0]]


def check_kernel(data, t, is_int: bool) -> None:
    d = Dag(t)
    for _ in range(data.draw(st.integers(0, 4))):
        grow(d, data, is_int)
    add_loop(d, data, is_int)
    add_if(d, data, is_int)
    for _ in range(data.draw(st.integers(0, 3))):
        grow(d, data, is_int)
    # Repeats, and swapped operands, so that cse has something to merge (or must not merge).
    ops = INT_OPS if is_int else FLOAT_OPS
    cls, lhs, rhs = (data.draw(st.sampled_from(choices)) for choices in (ops, d.pool, d.pool))
    d.pool += [binary(d, cls, lhs, rhs), binary(d, cls, rhs, lhs), binary(d, cls, lhs, rhs)]
    d.store_all()
    verify(d.func)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x0, x1 = random_inputs(t, rng, is_int), random_inputs(t, rng, is_int)
    s = random_inputs(t, rng, is_int)[0]
    size = (BODY_SLOTS + MAX_BODY_NODES * TRIPS) * N

    def execute() -> np.ndarray:
        out = np.full(size, 0x5A if is_int else np.nan, dtype=_NUMPY[t.name])
        run(d.func, [x0.copy(), x1.copy(), s, out], grid=(1,))
        return out

    before = execute()
    run_passes(d.func, TILE_OPT)
    after = execute()
    assert same_bits(before, after), f"TILE_OPT changed results:\n{before}\n{after}"


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data(), t=st.sampled_from([i32, u32, i8, i64]))
def test_integer_kernels_keep_their_results(data, t):
    check_kernel(data, t, is_int=True)


@SETTINGS
@given(data=st.data(), t=st.sampled_from([f32, f16]))
def test_float_kernels_keep_their_results(data, t):
    check_kernel(data, t, is_int=False)
