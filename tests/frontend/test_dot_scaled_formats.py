"""`tl.dot_scaled` as Triton's tutorial 10 uses it (block_scaled_kernel.py): fp8 operands in their
own dtype, packed fp4, nvfp4's float8e4nv scales in groups of 16, scales read through 5-D descriptor
blocks and untangled by reshape/trans, `b.T` as the right operand; in the interpreter against NumPy
float64, and in the GPU passes: every tile staged for the tensor cores is bf16 (no float32 tile is
transposed through shared memory), so the tutorial's 128 x 256 x 256 tiles fit an H200's block."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from block_scaled_kernel import block_scaled_matmul, make_inputs

from tileworkbench.backends.nvptx.archs import ARCHS
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)


@pytest.mark.parametrize("scale_type, block_k", [("mxfp8", 128), ("mxfp4", 128), ("nvfp4", 64),
                                                 ("mixed", 128)])
def test_block_scaled_matmul_in_the_interpreter(scale_type, block_k):
    m, n, k = 256, 128, 2 * block_k  # two programs along M, two K steps
    descriptors, constexprs, c, reference = make_inputs(scale_type, m, n, k, (128, 128, block_k),
                                                        seed=len(scale_type) + block_k)
    block_scaled_matmul[(2, 1)](*descriptors, **constexprs)
    error = np.abs(c.astype(np.float64) - reference) / np.maximum(np.abs(reference), 1.0)
    assert error.max() < 2e-3, f"max relative error {error.max():.3g}"  # fp16 C of exact sums


def _staged_tiles(scale_type: str, blocks: tuple[int, int, int]) -> list:
    """The `ttg.local_alloc` result types of the kernel after the GPU passes for sm_90a (wgmma)."""
    from tileworkbench.runtime.specialize import arg_spec, key_part

    descriptors, constexprs, _, _ = make_inputs(scale_type, 256, 256, 2 * blocks[2], blocks, 1)
    names = ["a_desc", "a_scale_desc", "b_desc", "b_scale_desc", "c_desc"]
    signature = [arg_spec(name, key_part(d)) for name, d in zip(names, descriptors)]
    func = tile_opt_ir(block_scaled_matmul.fn, _parse_signature(block_scaled_matmul, signature),
                       constexprs)[0]
    # sm_90a's wgmma and block, without a per-SM figure (a spare ring slot costs no resident block)
    target = dataclasses.replace(ARCHS["sm_90a"].target_info(num_warps=4, num_stages=3),
                                 shared_per_sm=0)
    run_passes(func, TILE_GPU, target=target)
    return [op.result.type for op in func.walk() if op.name == "ttg.local_alloc"]


@pytest.mark.parametrize("scale_type, blocks", [("mxfp4", (128, 256, 256)),
                                                ("mxfp8", (128, 256, 128))])
def test_only_bf16_tiles_are_staged(scale_type, blocks):
    """Before the fix, rhs was upcast K x N and its float32 numbers and scales were transposed
    through shared memory: 720 KB at the tutorial's mxfp4 tiles, over an H200's 227 KB."""
    tiles = _staged_tiles(scale_type, blocks)
    operands = [t for t in tiles if t.element.name == "bf16"]
    assert len(operands) >= 2, tiles
    assert all(t.element.name in ("bf16", "f16") for t in tiles), tiles  # f16: C's epilogue
