"""`tl.dot_scaled` lowered for the GPU (sm_90a: bf16 wgmma on the decoded operands) and run on the
CPU emulator: the tutorial-10-shaped kernel of tests/frontend/block_scaled_kernel.py at one 128 x 128
tile (its scales' layout needs 128 rows), against NumPy float64. mxfp4 runs as two dots of K/2 (the
low nibbles, then the high ones); mixed decodes e4m3 against packed e2m1."""

from __future__ import annotations


import numpy as np
import pytest
from cpu_emulator import Emulator


from block_scaled_kernel import block_scaled_matmul, make_inputs  # noqa: E402

from tileworkbench.frontend.descriptor_args import flatten_descriptor  # noqa: E402
from tileworkbench.runtime.specialize import arg_spec, key_part  # noqa: E402

NAMES = ["a_desc", "a_scale_desc", "b_desc", "b_scale_desc", "c_desc"]


@pytest.mark.parametrize("scale_type", ["mxfp4", "mixed"])
def test_block_scaled_tile_on_wgmma(scale_type):
    descriptors, constexprs, c, reference = make_inputs(scale_type, 128, 128, 128, (128, 128, 128),
                                                        seed=7)
    signature = [arg_spec(name, key_part(d)) for name, d in zip(NAMES, descriptors)]
    emulator = Emulator(block_scaled_matmul, signature, constexprs, num_warps=4, wgmma=True)
    args = [part for d in descriptors for part in flatten_descriptor(d)]
    emulator.launch((1, 1), *[a.view(np.uint8) if getattr(a, "dtype", None) is not None and
                              a.dtype.itemsize == 1 else a for a in args])
    error = np.abs(c.astype(np.float64) - reference) / np.maximum(np.abs(reference), 1.0)
    assert error.max() < 2e-3, f"max relative error {error.max():.3g}"
