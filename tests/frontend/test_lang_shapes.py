"""Shape builtins against NumPy: broadcast_to, expand_dims and x[:, None] / x[None, :], reshape, view,
ravel, squeeze/unsqueeze, flip, trans/permute/.T, split/join/interleave/cat, gather, sort, topk and
histogram."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import assert_close, poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def load_2d(ptr, M: tl.constexpr, N: tl.constexpr):
    return tl.load(ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])


@tw.jit
def store_2d(ptr, value, M: tl.constexpr, N: tl.constexpr):
    tl.store(ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], value)


@tw.jit
def broadcast_kernel(row_ptr, col_ptr, out_a, out_b, out_c, out_d, M: tl.constexpr, N: tl.constexpr):
    row = tl.load(row_ptr + tl.arange(0, N))  # (N,)
    col = tl.load(col_ptr + tl.arange(0, M))  # (M,)
    store_2d(out_a, col[:, None] + row[None, :], M, N)
    store_2d(out_b, tl.broadcast_to(row[None, :], (M, N)) * 2, M, N)
    store_2d(out_c, tl.expand_dims(col, 1) - tl.expand_dims(row, 0), M, N)
    # implicit broadcasting of a 1-D row against a 2-D tile, and of the scalar tl.broadcast_to(x, M, N)
    b = tl.broadcast_to(col[:, None], M, N)
    store_2d(out_d, b + row, M, N)


def test_broadcast_and_new_axes(rng):
    m, n = 4, 8
    row, col = randn(rng, n), randn(rng, m)
    outs = [poisoned((m, n), np.float32) for _ in range(4)]
    broadcast_kernel[(1,)](row, col, *outs, M=m, N=n)
    r, c = row.astype(np.float64), col.astype(np.float64)
    assert_close(outs[0], c[:, None] + r[None, :], dtype=np.float32)
    assert_close(outs[1], np.broadcast_to(r * 2, (m, n)), dtype=np.float32)
    assert_close(outs[2], c[:, None] - r[None, :], dtype=np.float32)
    assert_close(outs[3], c[:, None] + r, dtype=np.float32)


@tw.jit
def reshape_kernel(x_ptr, r_ptr, v_ptr, rv_ptr, sq_ptr, us_ptr, M: tl.constexpr, N: tl.constexpr):
    x = load_2d(x_ptr, M, N)
    store_2d(r_ptr, tl.reshape(x, (N, M)), N, M)
    v = tl.view(x, (M * N,))
    tl.store(v_ptr + tl.arange(0, M * N), tl.sort(v))  # view's order is unspecified: compare sorted
    tl.store(rv_ptr + tl.arange(0, M * N), tl.ravel(x))
    col = tl.reshape(x, M * N, 1)
    tl.store(sq_ptr + tl.arange(0, M * N), tl.squeeze(col, 1))
    u = tl.unsqueeze(tl.ravel(x), 0)  # (1, M*N)
    tl.static_assert(u.shape == (1, M * N))
    store_2d(us_ptr, x.reshape(M, N) + tl.sum(u, 0).reshape(M, N), M, N)


def test_reshape_view_ravel_squeeze_unsqueeze(rng):
    m, n = 4, 8
    x = randn(rng, (m, n))
    r, us = poisoned((n, m), np.float32), poisoned((m, n), np.float32)
    v, rv, sq = (poisoned(m * n, np.float32) for _ in range(3))
    reshape_kernel[(1,)](x, r, v, rv, sq, us, M=m, N=n)
    x64 = x.astype(np.float64)
    assert_close(r, x64.reshape(n, m), dtype=np.float32)
    assert_close(v, np.sort(x64.ravel()), dtype=np.float32)
    assert_close(rv, x64.ravel(), dtype=np.float32)
    assert_close(sq, x64.ravel(), dtype=np.float32)
    assert_close(us, 2 * x64, dtype=np.float32)


@tw.jit
def trans_kernel(x_ptr, t_ptr, p_ptr, tt_ptr, f0_ptr, f1_ptr, M: tl.constexpr, N: tl.constexpr):
    x = load_2d(x_ptr, M, N)
    store_2d(t_ptr, tl.trans(x), N, M)
    store_2d(p_ptr, tl.permute(x, (1, 0)), N, M)
    store_2d(tt_ptr, x.T, N, M)
    store_2d(f0_ptr, tl.flip(x, 0), M, N)
    store_2d(f1_ptr, tl.flip(x), M, N)


def test_trans_permute_T_flip(rng):
    m, n = 4, 16
    x = randn(rng, (m, n))
    t, p, tt_ = (poisoned((n, m), np.float32) for _ in range(3))
    f0, f1 = poisoned((m, n), np.float32), poisoned((m, n), np.float32)
    trans_kernel[(1,)](x, t, p, tt_, f0, f1, M=m, N=n)
    for out in (t, p, tt_):
        np.testing.assert_array_equal(out, x.T)
    np.testing.assert_array_equal(f0, x[::-1])
    np.testing.assert_array_equal(f1, x[:, ::-1])


@tw.jit
def permute_3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    i = tl.arange(0, A)[:, None, None]
    j = tl.arange(0, B)[None, :, None]
    k = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + (i * B + j) * C + k)
    y = tl.permute(x, 2, 0, 1)  # (C, A, B)
    ci = tl.arange(0, C)[:, None, None]
    ai = tl.arange(0, A)[None, :, None]
    bi = tl.arange(0, B)[None, None, :]
    tl.store(out_ptr + (ci * A + ai) * B + bi, y)


def test_permute_3d(rng):
    x = randn(rng, (2, 4, 8))
    out = poisoned((8, 2, 4), np.float32)
    permute_3d_kernel[(1,)](x, out, A=2, B=4, C=8)
    np.testing.assert_array_equal(out, np.transpose(x, (2, 0, 1)))


@tw.jit
def join_split_kernel(a_ptr, b_ptr, j_ptr, s0_ptr, s1_ptr, il_ptr, cat_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)  # (N, 2)
    tl.static_assert(j.shape == (N, 2))
    store_2d(j_ptr, j, N, 2)
    lo, hi = tl.split(j * 3)
    tl.store(s0_ptr + offs, lo)
    tl.store(s1_ptr + offs, hi)
    tl.store(il_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))
    tl.store(cat_ptr + tl.arange(0, 2 * N), tl.cat(a, b, can_reorder=True))


def test_join_split_interleave_cat(rng):
    n = 16
    a, b = randn(rng, n), randn(rng, n)
    j = poisoned((n, 2), np.float32)
    s0, s1 = poisoned(n, np.float32), poisoned(n, np.float32)
    il, cat = poisoned(2 * n, np.float32), poisoned(2 * n, np.float32)
    join_split_kernel[(1,)](a, b, j, s0, s1, il, cat, N=n)
    np.testing.assert_array_equal(j, np.stack([a, b], -1))
    assert_close(s0, a.astype(np.float64) * 3, dtype=np.float32)
    assert_close(s1, b.astype(np.float64) * 3, dtype=np.float32)
    np.testing.assert_array_equal(il, np.stack([a, b], -1).ravel())
    # cat may reorder (can_reorder=True, as Triton requires): compare the multiset
    np.testing.assert_array_equal(np.sort(cat), np.sort(np.concatenate([a, b])))


@tw.jit
def gather_kernel(x_ptr, idx_ptr, out0_ptr, out1_ptr, M: tl.constexpr, N: tl.constexpr):
    x = load_2d(x_ptr, M, N)
    idx = load_2d(idx_ptr, M, N)
    store_2d(out1_ptr, tl.gather(x, idx, 1), M, N)
    store_2d(out0_ptr, tl.gather(x, idx % M, 0), M, N)


def test_gather(rng):
    m, n = 4, 8
    x = randn(rng, (m, n))
    idx = rng.integers(0, n, (m, n)).astype(np.int32)
    out0, out1 = poisoned((m, n), np.float32), poisoned((m, n), np.float32)
    gather_kernel[(1,)](x, idx, out0, out1, M=m, N=n)
    np.testing.assert_array_equal(out1, np.take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(out0, np.take_along_axis(x, idx % m, 0))


@tw.jit
def sort_kernel(x_ptr, asc_ptr, desc_ptr, top_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = load_2d(x_ptr, M, N)
    store_2d(asc_ptr, tl.sort(x), M, N)
    store_2d(desc_ptr, tl.sort(x, dim=1, descending=True), M, N)
    store_2d(top_ptr, tl.topk(x, K), M, K)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_sort_and_topk(rng, dtype):
    m, n, k = 4, 16, 4
    x = randn(rng, (m, n), np.float32, 50).astype(dtype) if dtype == np.float32 \
        else randint(rng, (m, n), dtype)
    asc, desc = poisoned((m, n), dtype), poisoned((m, n), dtype)
    top = poisoned((m, k), dtype)
    sort_kernel[(1,)](x, asc, desc, top, M=m, N=n, K=k)
    np.testing.assert_array_equal(asc, np.sort(x, 1))
    np.testing.assert_array_equal(desc, np.sort(x, 1)[:, ::-1])
    np.testing.assert_array_equal(top, np.sort(x, 1)[:, ::-1][:, :k])


@tw.jit
def histogram_kernel(x_ptr, out_ptr, masked_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))
    tl.store(masked_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


def test_histogram(rng):
    size, bins, n = 64, 8, 40
    x = rng.integers(0, bins, size).astype(np.int32)
    out, masked = poisoned(bins, np.int32), poisoned(bins, np.int32)
    histogram_kernel[(1,)](x, out, masked, n, N=size, BINS=bins)
    np.testing.assert_array_equal(out, np.bincount(x, minlength=bins))
    np.testing.assert_array_equal(masked, np.bincount(x[:n], minlength=bins))


@tw.jit
def broadcast_cast_kernel(row_ptr, col_ptr, out_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
    row = tl.load(row_ptr + tl.arange(0, N))[None, :]
    col = tl.load(col_ptr + tl.arange(0, M))[:, None]
    a, b = tl.broadcast(row, col)
    tl.static_assert(a.shape == (M, N) and b.shape == (M, N))
    store_2d(out_ptr, tl.cast(a, tl.float16) - tl.cast(b, tl.float16), M, N)
    s = tl.to_tensor(3)
    tl.static_assert(s.dtype == tl.int32 and s.shape == ())
    tl.store(s_ptr, tl.cast(s, tl.float32, bitcast=True))
    tl.store(s_ptr + 1, tl.to_tensor(2.5))


def test_broadcast_cast_to_tensor(rng):
    m, n = 4, 8
    row, col = randn(rng, n), randn(rng, m)
    out, s = poisoned((m, n), np.float16), poisoned(2, np.float32)
    broadcast_cast_kernel[(1,)](row, col, out, s, M=m, N=n)
    want = row.astype(np.float16)[None, :].astype(np.float64) - col.astype(np.float16)[:, None]
    assert_close(out, want.astype(np.float16).astype(np.float64), rtol=0)
    assert s[0] == np.array([3], np.int32).view(np.float32)[0] and s[1] == 2.5
