"""Tutorial 09's TMA matmuls (`tma_matmul_bt`, `tma_persistent_matmul_ws`: B given as N x K) as the
tests of warp specialization and of the tile loop's prefetch compile, emulate and launch them: the
signature, the constexprs, and the runs on fresh fp16 inputs with C poisoned (NaN), checked against
NumPy float64."""

from __future__ import annotations

import numpy as np
from tma_kernels import descriptor_args
from tma_standin import host_tensor_map

from tileworkbench.frontend import ArgSpec


def signature(blocks, element="fp16"):
    bm, bn, bk = blocks
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], element, [(bm, bk), (bn, bk), (bm, bn)])
    return args + [ArgSpec("M", "i32"), ArgSpec("N", "i32"), ArgSpec("K", "i32")]


def constexprs(blocks, specialize=True, programs=None):
    """`matmul_kernel_tma`'s; with `programs`, the persistent kernel's (NUM_SMS)."""
    bm, bn, bk = blocks
    values = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8,
              "WARP_SPECIALIZE": specialize}
    return values if programs is None else {**values, "NUM_SMS": programs}


def _inputs(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64).T


def _flat(array: np.ndarray, block) -> list:
    rows, cols = array.shape
    return [array, rows, cols, array.strides[0] // array.itemsize, host_tensor_map(array, block)]


def check_emulated(emu, grid, m, n, k, blocks, rng, tolerance=2e-3) -> None:
    """Run the emulated kernel on host tensor maps; C against float64."""
    bm, bn, bk = blocks
    a, b, want = _inputs(rng, m, n, k)
    c = np.full((m, n), np.nan, np.float16)
    emu.launch(grid, *_flat(a, (bm, bk)), *_flat(b, (bn, bk)), *_flat(c, (bm, bn)), m, n, k)
    assert not np.isnan(c).any()
    assert np.abs(c - want).max() / np.abs(want).max() <= tolerance


def check_on_gpu(cp, kernel, grid, m, n, k, blocks, values, num_warps, stages, rng,
                 producer_warps=4):
    """Launch `kernel` through the JIT on host TensorDescriptors; check the warps launched beside
    `num_warps` (`metadata.producer_warps`) and C against float64. Returns the compiled kernel."""
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    bm, bn, bk = blocks
    a_host, b_host, want = _inputs(rng, m, n, k)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    compiled = kernel[grid](
        TensorDescriptor.from_tensor(cp.asarray(a_host), [bm, bk]),
        TensorDescriptor.from_tensor(cp.asarray(b_host), [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), m, n, k, **values,
        num_warps=num_warps, num_stages=stages)
    cp.cuda.runtime.deviceSynchronize()
    assert compiled.metadata.producer_warps == producer_warps
    got = cp.asnumpy(c).astype(np.float64)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-2
    return compiled
