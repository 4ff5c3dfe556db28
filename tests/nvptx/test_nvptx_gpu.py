"""The NVPTX back end's PTX loaded with CuPy (`cupy.cuda.function.Module`) and checked against NumPy
float64 on fresh random inputs, outputs poisoned first. Skipped where no GPU is visible."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def cp():
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    import cupy

    return cupy


def launch(cp, kernel, grid, *args):
    module = cp.cuda.function.Module()
    module.load(kernel.asm["ptx"].encode() + b"\0")
    fn = module.get_function(kernel.metadata.name)
    fn(grid, (32 * kernel.metadata.num_warps, 1, 1), args, shared_mem=kernel.metadata.shared)
    cp.cuda.Device().synchronize()


def poisoned(cp, shape, dtype):
    out = cp.empty(shape, dtype=dtype)
    out.fill(np.nan if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max)
    return out


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / (np.abs(want) + 1e-6)))


def test_vector_add(cp, compiled):
    n = (1 << 16) + 48  # a multiple of 16 that leaves a partial block
    x, y = RNG.standard_normal(n, dtype=np.float32), RNG.standard_normal(n, dtype=np.float32)
    z = poisoned(cp, n, np.float32)
    launch(cp, compiled("add"), ((n + 1023) // 1024, 1, 1), cp.asarray(x), cp.asarray(y), z, np.int32(n))
    assert rel_err(z.get(), x.astype(np.float64) + y) < 1e-6


def test_softmax(cp, compiled):
    rows, cols = 16, 1024
    x = RNG.standard_normal((rows, cols), dtype=np.float32) * 3
    out = poisoned(cp, (rows, cols), np.float32)
    launch(cp, compiled("softmax"), (rows, 1, 1), out, cp.asarray(x), np.int32(cols), np.int32(cols),
           np.int32(cols))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert rel_err(out.get(), e / e.sum(axis=1, keepdims=True)) < 1e-5


def test_matmul_fma(cp, compiled):
    m, n, k = 64, 64, 48
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = poisoned(cp, (m, n), np.float32)
    launch(cp, compiled("matmul"), (2, 2, 1), cp.asarray(a), cp.asarray(b), c, np.int32(m), np.int32(n),
           np.int32(k), np.int32(k), np.int32(n), np.int32(n))
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(c.get(), want, rtol=1e-4, atol=1e-3)


def test_scan_sort_argmax(cp, compiled):
    x = RNG.standard_normal(256, dtype=np.float32)
    y = poisoned(cp, 256, np.float32)
    launch(cp, compiled("cumsum"), (1, 1, 1), cp.asarray(x), y)
    assert np.allclose(y.get(), np.cumsum(x.astype(np.float64)), rtol=1e-4, atol=1e-4)
    s = poisoned(cp, 64, np.float32)
    launch(cp, compiled("sort"), (1, 1, 1), cp.asarray(x[:64]), s)
    assert np.array_equal(s.get(), np.sort(x[:64]))
    m = RNG.standard_normal((8, 64), dtype=np.float32)
    out, idx = poisoned(cp, 8, np.float32), poisoned(cp, 8, np.int32)
    launch(cp, compiled("argmax"), (1, 1, 1), cp.asarray(m), out, idx)
    assert np.array_equal(out.get(), m.max(axis=1)) and np.array_equal(idx.get(), m.argmax(axis=1))


def test_atomics(cp, compiled):
    n = 1000
    x = RNG.standard_normal(n, dtype=np.float32)
    out = cp.asarray(np.array([0.0] + [-np.inf] * 4, dtype=np.float32))
    launch(cp, compiled("atomic"), ((n + 255) // 256, 1, 1), cp.asarray(x), out, np.int32(n))
    got = out.get()
    assert abs(got[0] - x.astype(np.float64).sum()) < 1e-3
    assert np.array_equal(got[1:], [x[j::4].max() for j in range(4)])
