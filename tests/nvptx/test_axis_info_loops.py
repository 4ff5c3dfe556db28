"""Axis info of values computed from loop-carried tensors. The analysis runs a loop body again with
weaker facts for its carried values until they settle; results inside the body must be recomputed on
every pass. They were kept from the first pass, where a carried accumulator still had its zero
init's facts (constant over the whole tile), so `acc * x` in the loop was taken as constant along
rows and the lowering computed one element per run of registers (tutorial 06's wrong attention)."""

from __future__ import annotations

import numpy as np
from cpu_emulator import Emulator

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.passes.axis_info import axis_info
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir

SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32"}


@tw.jit
def decayed_sum(x_ptr, out_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    """out = sum over steps s of x[s] * 0.5 ** (STEPS - 1 - s), tile by tile."""
    offs = tl.arange(0, SIZE)
    tile = offs[:, None] * SIZE + offs[None, :]
    acc = tl.zeros([SIZE, SIZE], dtype=tl.float32)
    for step in range(STEPS):
        acc = acc * 0.5
        acc += tl.load(x_ptr + step * SIZE * SIZE + tile)
    tl.store(out_ptr + tile, acc)


def test_carried_value_facts_are_recomputed_in_the_body():
    func = tile_opt_ir(decayed_sum.fn, _parse_signature(decayed_sum, SIGNATURE),
                       {"STEPS": 3, "SIZE": 16})[0]
    facts = axis_info(func)
    loop = next(op for op in func.walk() if op.name == "scf.for")
    scaled = next(op for op in loop.body.block.ops if op.name == "arith.mulf").result
    assert facts.info(loop.body.block.args[1]).constancy == (1, 1)
    assert facts.info(scaled).constancy == (1, 1)  # was (16, 16): the init's, kept from pass one


def test_carried_value_scaled_in_a_loop_on_the_emulated_gpu():
    steps, size = 3, 32
    rng = np.random.default_rng(3)
    x = rng.standard_normal((steps, size, size)).astype(np.float32)
    out = np.full((size, size), np.nan, np.float32)
    Emulator(decayed_sum, SIGNATURE, {"STEPS": steps, "SIZE": size}, 4).launch((1,), x, out)
    want = sum(x[s].astype(np.float64) * 0.5 ** (steps - 1 - s) for s in range(steps))
    assert np.allclose(out, want, rtol=1e-6, atol=1e-6)
