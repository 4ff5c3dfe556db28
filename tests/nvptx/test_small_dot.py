"""tl.dot below 16 in any dimension (Triton's test_dot shapes 8x4, 1-wide): no minimum in the frontend,
the CUDA-core FMA lowering assembles with ptxas and, emulated on the CPU, matches NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl

SHAPES = [(8, 4, 4), (1, 8, 16), (16, 1, 2), (4, 4, 1)]  # (M, N, K)


@tw.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


def _operands(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, np.full((m, n), np.nan, np.float32)


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_small_dot_in_interpreter(monkeypatch, m, n, k):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)
    a, b, c = _operands(np.random.default_rng(), m, n, k)
    small_dot_kernel[(1,)](a, b, c, m, n, k)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@needs_ptxas
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_small_dot_assembles(tmp_path, m, n, k, dtype):
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32"}
    compiled = tw.compile(small_dot_kernel, signature=signature, constexprs={"M": m, "N": n, "K": k},
                          target="sm_90")
    result = run_ptxas(compiled.asm["ptx"], "sm_90", tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_small_dot_emulated(m, n, k):
    a, b, c = _operands(np.random.default_rng(), m, n, k)
    signature = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    Emulator(small_dot_kernel, signature, {"M": m, "N": n, "K": k}, num_warps=1).launch((1,), a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_small_dot_on_the_gpu(m, n, k, dtype):
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    import cupy

    a, b, _ = _operands(np.random.default_rng(), m, n, k)
    a, b = a.astype(dtype), b.astype(dtype)
    c = cupy.full((m, n), np.nan, np.float32)
    small_dot_kernel[(1,)](cupy.asarray(a), cupy.asarray(b), c, m, n, k)
    rtol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(c.get(), a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=rtol)
