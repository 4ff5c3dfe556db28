"""The canonical kernels on every target (the `target` fixture: the interpreter, and CUDA where a GPU is
visible), against NumPy float64 references; in GPU mode their PTX for sm_90 must also assemble."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from canonical_kernels import (
    CASES,
    add_kernel,
    layer_norm_fwd_kernel,
    matmul_kernel,
    seeded_dropout_kernel,
    softmax_kernel,
)

import tileworkbench as tw

pytestmark = pytest.mark.vectorize  # the cpu target as launches use it


@pytest.fixture
def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert not np.isnan(got).any(), "NaN (poison) left in the output"
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6)))


def test_vector_add(target, rng):
    n = 3000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = target.put(np.full(n, np.nan, np.float32))
    add_kernel[lambda meta: (tw.cdiv(n, meta["BLOCK_SIZE"]),)](target.put(x), target.put(y), out, n,
                                                              BLOCK_SIZE=1024)
    assert rel_err(target.get(out), x.astype(np.float64) + y) < 1e-6


def test_fused_softmax(target, rng):
    n_rows, n_cols = 37, 100
    x = (rng.standard_normal((n_rows, n_cols)) * 3).astype(np.float32)
    out = np.full((n_rows, n_cols + 3), np.nan, np.float32)  # wider rows: the padding must stay untouched
    out_dev = target.put(out)
    softmax_kernel[(8,)](out_dev, target.put(x), n_cols, n_cols + 3, n_rows, n_cols,
                         BLOCK_SIZE=tw.next_power_of_2(n_cols))
    got = target.get(out_dev)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert rel_err(got[:, :n_cols], e / e.sum(1, keepdims=True)) < 1e-5
    assert np.isnan(got[:, n_cols:]).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_blocked_matmul(target, rng, dtype):
    m, n, k = 70, 50, 90  # not multiples of the blocks
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    c = target.put(np.full((m, n), np.nan, dtype))
    grid = lambda meta: (tw.cdiv(m, meta["BLOCK_M"]) * tw.cdiv(n, meta["BLOCK_N"]),)
    matmul_kernel[grid](target.put(a), target.put(b), c, m, n, k, k, 1, n, 1, n, 1,
                        BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
    got = target.get(c).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64)  # tf32 for fp32 inputs, fp16 rounding of the output for fp16
    tol = 2e-3 if dtype == np.float32 else 1e-3
    assert not np.isnan(got).any()
    assert np.max(np.abs(got - a64 @ b64) / scale) < tol


def test_layer_norm_forward(target, rng):
    rows, n, eps = 6, 300, 1e-5
    x = (rng.standard_normal((rows, n)) * 2 + 0.5).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y = target.put(np.full((rows, n), np.nan, np.float32))
    mean = target.put(np.full(rows, np.nan, np.float32))
    rstd = target.put(np.full(rows, np.nan, np.float32))
    layer_norm_fwd_kernel[(rows,)](target.put(x), y, target.put(w), target.put(b), mean, rstd, n, n, eps,
                                   BLOCK_SIZE=128)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(1), x64.var(1)
    want = (x64 - mu[:, None]) / np.sqrt(var[:, None] + eps) * w + b
    assert rel_err(target.get(mean), mu) < 1e-5
    assert rel_err(target.get(rstd), 1 / np.sqrt(var + eps)) < 1e-5
    assert np.max(np.abs(target.get(y) - want)) < 1e-4 * np.max(np.abs(want))


def _dropout(target, x, p, seed):
    out = target.put(np.full(x.size, np.nan, np.float32))
    seeded_dropout_kernel[(tw.cdiv(x.size, 1024),)](target.put(x), out, x.size, p, seed, BLOCK_SIZE=1024)
    return target.get(out)


def test_low_memory_dropout(target, rng):
    n, p = 5000, 0.3
    x = (rng.standard_normal(n) + 3).astype(np.float32)  # never 0, so a dropped lane is visible
    seed = int(rng.integers(1, 2**31))
    first, again = _dropout(target, x, p, seed), _dropout(target, x, p, seed)
    np.testing.assert_array_equal(first, again)  # same seed -> same mask
    kept = first != 0
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    assert rel_err(first[kept], x[kept].astype(np.float64) / (1 - p)) < 1e-6
    other = _dropout(target, x, p, seed + 1) != 0
    assert 0 < (other != kept).mean() < 0.9  # another seed: another mask


def _ptxas_arch(ptx: str) -> str:
    match = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    assert match, "the PTX has no .target line"
    return match.group(1)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_ptx_assembles(name, tmp_path, monkeypatch):
    from tileworkbench.config import config
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible: the PTX check runs in GPU mode")
    try:
        from tileworkbench.backends.nvptx import compile_nvptx  # noqa: F401
    except ImportError:
        pytest.skip("the NVPTX back end (tileworkbench.backends.nvptx.compile_nvptx) is not there yet")
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not on PATH")
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    kernel, signature, constexprs = CASES[name]
    compiled = tw.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90")
    ptx = compiled.asm["ptx"]
    path = tmp_path / f"{name}.ptx"
    path.write_text(ptx)
    result = subprocess.run([ptxas, f"-arch={_ptxas_arch(ptx)}", str(path), "-o", str(tmp_path / "k.cubin")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
