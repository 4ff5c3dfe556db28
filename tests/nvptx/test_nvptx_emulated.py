"""The NVPTX lowering run on the CPU (`cpu_emulator`: the LLVM module JIT-compiled for the host, one host
thread per GPU thread) against NumPy float64: shared-memory exchanges, warp shuffles, barriers, the
FMA dot, scans, sorts, gathers and control flow, without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_kernels import CASES

RNG = np.random.default_rng(11)


def emulator(name: str, **signature_overrides) -> Emulator:
    fn, signature, constexprs, num_warps = CASES[name]
    return Emulator(fn, {**signature, **signature_overrides}, constexprs, num_warps)


@pytest.mark.parametrize("through_shared", [True, False], ids=["k-slices", "registers"])
def test_fma_dot(monkeypatch, through_shared):
    if not through_shared:  # the path where the operands arrive in registers, whole along K
        from tileworkbench.backends.llvm.lowering import dot
        monkeypatch.setattr(dot, "defer_conversion", lambda lw, op: False)
    emu = emulator("matmul", a_ptr="*fp32:16", b_ptr="*fp32:16")  # the host JIT has no f16 support
    m, n, k = 64, 48, 40
    a = RNG.standard_normal((m, 48)).astype(np.float32)
    b = RNG.standard_normal((48, 64)).astype(np.float32)
    c = np.full((m, 64), np.nan, np.float32)
    emu.launch((2, 2), a, b, c, m, n, k, 48, 64, 64)
    want = a[:, :k].astype(np.float64) @ b[:k, :n].astype(np.float64)
    assert np.allclose(c[:, :n], want, rtol=1e-5, atol=1e-5)
    assert np.isnan(c[:, n:]).all()  # masked-off columns untouched


def test_scans_and_column_sums():
    emu = emulator("columns")
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    sums, scans = np.full(32, np.nan, np.float32), np.full((64, 32), np.nan, np.float32)
    emu.launch((1,), x, sums, scans)
    d = x.astype(np.float64)
    assert np.allclose(sums, d.sum(0), rtol=1e-5, atol=1e-5)
    assert np.allclose(scans, np.cumsum(d[::-1], axis=0)[::-1], rtol=1e-4, atol=1e-4)
    one_d = emulator("cumsum")
    v, out = RNG.standard_normal(256).astype(np.float32), np.full(256, np.nan, np.float32)
    one_d.launch((1,), v, out)
    assert np.allclose(out, np.cumsum(v.astype(np.float64)), rtol=1e-4, atol=1e-4)


def test_sort_topk_gather_histogram():
    x = RNG.standard_normal(128).astype(np.float32)
    sorted_out = np.full(64, np.nan, np.float32)
    emulator("sort").launch((1,), x[:64].copy(), sorted_out)
    assert np.array_equal(sorted_out, np.sort(x[:64]))
    y, h, t = np.full(128, np.nan, np.float32), np.full(16, -1, np.int32), np.full(8, np.nan, np.float32)
    emulator("gather_hist").launch((1,), x, y, h, t)
    offs = np.arange(128)
    assert np.array_equal(y, x[(offs * 7) % 128])
    assert np.array_equal(h, np.bincount(offs % 13, minlength=16))
    assert np.array_equal(t, np.sort(x)[::-1][:8])


def test_argmax_shapes_and_control_flow():
    m = RNG.standard_normal((8, 64)).astype(np.float32)
    out, idx = np.full(8, np.nan, np.float32), np.full(8, -1, np.int32)
    emulator("argmax").launch((1,), m, out, idx)
    assert np.array_equal(out, m.max(1)) and np.array_equal(idx, m.argmax(1))
    x, y = RNG.standard_normal(256).astype(np.float32), RNG.standard_normal(256).astype(np.float32)
    z = np.full(288, np.nan, np.float32)
    emulator("shapes").launch((1,), x, y, z)
    assert np.allclose(z[:256], x.astype(np.float64) * y) and \
        np.allclose(z[256:], x.reshape(32, 8).astype(np.float64).sum(1), rtol=1e-5)
    loop = emulator("control")
    data, res = RNG.standard_normal(3 * 256).astype(np.float32), np.full(256, np.nan, np.float32)
    loop.launch((1,), data, res, 3)
    assert np.allclose(res, data.reshape(3, 256).astype(np.float64).sum(0) * 2, rtol=1e-5)


def test_softmax_layer_norm_and_atomics():
    emu = emulator("softmax", n_cols="i32")
    x = RNG.standard_normal((4, 1024)).astype(np.float32) * 3
    out = np.full((4, 1024), np.nan, np.float32)
    emu.launch((4,), out, x, 1024, 1024, 1000)
    e = np.exp(x[:, :1000] - x[:, :1000].max(1, keepdims=True))
    assert np.allclose(out[:, :1000], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert np.isnan(out[:, 1000:]).all()
    values = RNG.standard_normal(1000).astype(np.float32)
    acc = np.array([0.0] + [-np.inf] * 4, dtype=np.float32)
    emulator("atomic").launch((4,), values, acc, 1000)
    assert abs(acc[0] - values.astype(np.float64).sum()) < 1e-3
    assert np.array_equal(acc[1:], [values[j::4].max() for j in range(4)])


def test_masked_loads_of_every_width_fill_other():
    """Predicated PTX loads and stores of 1-, 2- and 8-byte elements: masked-off lanes read `other`
    and are not written (the emulator runs the inline PTX's host equivalent)."""
    n = 77
    flag = RNG.random(128) < 0.5
    small = RNG.integers(-100, 100, 128).astype(np.int8)
    mid = RNG.integers(-30000, 30000, 128).astype(np.int16)
    wide = RNG.standard_normal(128)
    out = np.full(128, np.nan)
    small_before = small.copy()
    emulator("masked_widths").launch((1,), flag, small, mid, wide, out, n)
    m = np.arange(128) < n
    f = np.where(m, flag, True)
    want = (np.where(f, np.where(m, wide, 0.5), -np.where(m, wide, 0.5))
            + np.where(m, small_before, -3) + np.where(m, mid, 7))
    assert np.allclose(out, want, rtol=1e-12)
    assert np.array_equal(small[:n], (small_before[:n] + 1).astype(np.int8))
    assert np.array_equal(small[n:], small_before[n:])
