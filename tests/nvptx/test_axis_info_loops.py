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


@tw.jit
def strided_loop_sum(x_ptr, out_ptr, start, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(start, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_induction_variable_is_a_multiple_of_its_start_and_step():
    """`for off in range(0, n, BLOCK)`: off is a multiple of BLOCK, so `x_ptr + off + arange` loads
    16-byte vectors (as Triton; it was scalar loads); a start not known to be aligned keeps them
    scalar. The emulated sum is right both ways, starting at 0 and at an odd offset."""
    def signature(start: str) -> dict:
        return {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "start": start, "n": "i32:16"}

    aligned = tw.compile(strided_loop_sum, signature=signature("i32:16"),
                         constexprs={"BLOCK": 512}, target="sm_90", use_cache=False)
    assert "ld.global.v4.b32" in aligned.asm["ptx"]
    unaligned = tw.compile(strided_loop_sum, signature=signature("i32"),
                           constexprs={"BLOCK": 512}, target="sm_90", use_cache=False)
    assert "ld.global.v4" not in unaligned.asm["ptx"]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1504).astype(np.float32)
    for start, kinds in ((0, "i32:16"), (3, "i32")):
        out = np.full(512, np.nan, np.float32)
        Emulator(strided_loop_sum, signature(kinds), {"BLOCK": 512}, 4).launch(
            (1,), x, out, start, 1504)
        padded = np.zeros(start + 3 * 512, np.float64)
        padded[start:1504] = x[start:]
        want = padded[start:].reshape(3, 512).sum(0)
        assert np.allclose(out, want, rtol=1e-5, atol=1e-5)
