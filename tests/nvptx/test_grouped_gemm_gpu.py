"""Tutorial 08's grouped GEMM (grouped_gemm_kernel.py) on the GPU on torch CUDA tensors, at whole tiles
(the kernel is unmasked, as the tutorial's): every C against NumPy float64, poisoned first, and the
address tables unchanged afterwards (session 6's illegal address was ragged tiles writing into
them; test_grouped_gemm_emulated.py reproduces that on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
from grouped_gemm_kernel import grouped_matmul

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    return pytest.importorskip("torch")


@pytest.mark.parametrize("block, warps, stages", [((64, 64, 32), 4, 3), ((128, 128, 64), 4, 3),
                                                  ((128, 128, 32), 8, 2), ((64, 128, 64), 4, 1)])
def test_grouped_gemm_whole_tiles(torch, block, warps, stages):
    bm, bn, bk = block
    sizes = [(4 * bm, 2 * bn, 3 * bk), (bm, 3 * bn, bk), (2 * bm, bn, 4 * bk), (bm, bn, 2 * bk)]
    generator = torch.Generator().manual_seed(bm + bn + bk + warps)
    a = [(torch.rand((m, k), generator=generator) - 0.5).half().cuda() for m, n, k in sizes]
    b = [(torch.rand((k, n), generator=generator) - 0.5).half().cuda() for m, n, k in sizes]
    c = [torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda") for m, n, k in sizes]
    tables = [torch.tensor([x.data_ptr() for x in xs], device="cuda") for xs in (a, b, c)]
    tables.append(torch.tensor([v for size in sizes for v in size], dtype=torch.int32,
                               device="cuda"))
    tables.append(torch.tensor([v for size in sizes for v in (size[2], size[1], size[1])],
                               dtype=torch.int32, device="cuda"))
    saved = [table.clone() for table in tables]
    programs = 7  # fewer than the tiles: each program walks several problems
    grouped_matmul[(programs,)](*tables, len(sizes), NUM_PROGRAMS=programs, BM=bm, BN=bn, BK=bk,
                                num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    for index, (x, y, z) in enumerate(zip(a, b, c)):
        want = x.double().cpu().numpy() @ y.double().cpu().numpy()
        error = np.abs(z.double().cpu().numpy() - want).max()
        assert error < 1e-2, f"problem {index} {tuple(z.shape)}: max error {error:.3g}"
    assert all(torch.equal(table, copy) for table, copy in zip(tables, saved))
