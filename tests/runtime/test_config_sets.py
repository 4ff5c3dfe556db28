"""The default autotune config sets (`tw.matmul_configs`, `tw.attention_configs`): small tiles where
kernels run on the CPU, the wgmma-sized tiles first on a GPU target, each fitting an H200 with wgmma
in its PTX (compiled for sm_90a here, no GPU needed); on a Hopper GPU, a tuned matmul over the whole
set whose table has a row per config (resources or the failure) and whose result matches float64."""

from __future__ import annotations


import numpy as np
import pytest

import tileworkbench as tw

import kernels  # noqa: E402

MATMUL = kernels.load("tileworkbench").matmul_kernel
SIGNATURE = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16",
             "N": "i32:16", "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
             "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_cm": "i32:16", "stride_cn": "i32:1"}


def test_cpu_targets_get_small_tiles_and_gpus_the_wgmma_sized_ones_first():
    small = tw.matmul_configs("interpreter")
    assert [c.kwargs["BLOCK_M"] for c in small] == [32, 64]
    gpu = tw.matmul_configs("sm_90a", names=("BM", "BN", "BK"), GROUP_M=8)
    first = [(c.kwargs["BM"], c.kwargs["BN"], c.kwargs["BK"], c.num_warps, c.num_stages)
             for c in gpu[:3]]
    assert first == [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)]
    assert all(c.kwargs["GROUP_M"] == 8 for c in gpu)
    assert len({str(c) for c in gpu}) == len(gpu)  # no config twice
    attention = tw.attention_configs("cuda", HEAD_DIM=64)
    assert (attention[0].kwargs["BLOCK_M"], attention[0].num_warps) == (128, 8)
    assert all(c.kwargs["HEAD_DIM"] == 64 for c in attention)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_wgmma_sized_configs_fit_an_h200(index):
    config = tw.matmul_configs("sm_90a", names=("BM", "BN", "BK"), GROUP_M=8)[index]
    compiled = tw.compile(MATMUL, signature=SIGNATURE, constexprs=config.kwargs, target="sm_90a",
                          num_warps=config.num_warps, num_stages=config.num_stages, use_cache=False)
    assert "wgmma.mma_async" in compiled.asm["ptx"]
    assert compiled.metadata.shared <= 232448
    assert "wgmma.wait_group.sync.aligned 1;" in compiled.asm["ptx"]  # one group in flight


@pytest.mark.gpu
def test_tuned_over_the_default_set_on_a_hopper_gpu():
    from tileworkbench.cuda.device import device_properties, gpu_available

    if not gpu_available() or device_properties().major != 9:
        pytest.skip("needs a Hopper GPU")
    import cupy

    tuned = tw.autotune(configs=tw.matmul_configs(names=("BM", "BN", "BK"), GROUP_M=8),
                        key=["M", "N", "K"])(MATMUL)
    size = 2048
    rng = np.random.default_rng(11)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    c = cupy.full((size, size), np.nan, dtype=np.float16)
    grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)  # noqa: E731
    tuned[grid](cupy.asarray(a), cupy.asarray(b), c, size, size, size, size, 1, size, 1, size, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.get().astype(np.float64) - want).max() / np.abs(want).max()
    assert err < 2e-3
    rows = tuned.last_results
    assert len(rows) == len(tuned.configs)
    timed = [r for r in rows.values() if "ms" in r or "screen_ms" in r]
    assert timed and all(r.get("regs") and r.get("shared") for r in timed)
    # each config is timed in full, screened out (the parallel tuner's screening), or failed
    assert all("ms" in r or "screen_ms" in r or "error" in r for r in rows.values())
    best = tuned.best_config
    assert (best.kwargs["BM"], best.kwargs["BN"]) in {(128, 256), (256, 128), (128, 128)}
