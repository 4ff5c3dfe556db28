"""Reductions (sum, max, min, argmax, argmin, xor_sum, reduce_or, tl.reduce with a @jit combine, axis=None,
keep_dims), scans (cumsum, cumprod, associative_scan) and tl.dot (acc, input_precision, out_dtype;
fp32/fp16/bf16/int8), against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import BF16, assert_close, poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl

M, N = 8, 32


@tw.jit
def tile_2d(ptr, M: tl.constexpr, N: tl.constexpr):
    return tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]


@tw.jit
def reduce_kernel(x_ptr, out0_ptr, out1_ptr, outall_ptr, keep_ptr, FN: tl.constexpr, M: tl.constexpr,
                  N: tl.constexpr):
    x = tl.load(x_ptr + tile_2d(x_ptr, M, N))
    tl.store(out0_ptr + tl.arange(0, N), FN(x, 0))
    tl.store(out1_ptr + tl.arange(0, M), FN(x, axis=1))
    tl.store(outall_ptr, FN(x, None))
    k = FN(x, 1, keep_dims=True)
    tl.static_assert(k.shape == (M, 1))
    tl.store(keep_ptr + tl.arange(0, M)[:, None], k)


def _xor(x, axis):
    return np.bitwise_xor.reduce(x, axis=axis)


def _or(x, axis):
    return np.bitwise_or.reduce(x, axis=axis)


REDUCTIONS = {"sum": (tl.sum, np.sum), "max": (tl.max, np.max), "min": (tl.min, np.min),
              "argmax": (tl.argmax, np.argmax), "argmin": (tl.argmin, np.argmin),
              "xor_sum": (tl.xor_sum, _xor), "reduce_or": (tl.reduce_or, _or)}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.int64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(rng, name, dtype):
    fn, ref = REDUCTIONS[name]
    is_int = np.dtype(dtype).kind in "iu"
    if name in ("xor_sum", "reduce_or") and not is_int:
        pytest.skip("bitwise reductions are for integers")
    x = randint(rng, (M, N), dtype, 0 if dtype == np.uint8 else -100, 100) if is_int \
        else randn(rng, (M, N), dtype, 5)
    arg = name.startswith("arg")
    # sums of small ints accumulate in (u)int32, as Triton; argmax/argmin give int32 indices
    out_dtype = np.int32 if arg else np.dtype(dtype)
    if name == "sum" and dtype == np.uint8:
        out_dtype = np.uint32
    out0, out1, keep = poisoned(N, out_dtype), poisoned(M, out_dtype), poisoned(M, out_dtype)
    outall = poisoned(1, out_dtype)
    reduce_kernel[(1,)](x, out0, out1, outall, keep, FN=fn, M=M, N=N)
    x64 = x.astype(np.float64) if not is_int else x.astype(np.int64)
    if name in ("xor_sum", "reduce_or"):
        x64 = x
    rtol = 0 if is_int or name != "sum" else (2e-2 if dtype == np.float16 else 1e-5)
    atol = 0 if is_int or name != "sum" else rtol * 5 * np.sqrt(M * N)
    assert_close(out0, ref(x64, 0), rtol=rtol, atol=atol)
    assert_close(out1, ref(x64, 1), rtol=rtol, atol=atol)
    assert_close(keep, ref(x64, 1), rtol=rtol, atol=atol)
    assert_close(outall, [ref(x64.ravel(), 0)], rtol=rtol, atol=atol)


@tw.jit
def max_with_indices_kernel(x_ptr, v_ptr, i_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    v, i = tl.max(x, 0, return_indices=True)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)


def test_max_return_indices_and_tie_break(rng):
    x = randint(rng, N, np.int32, -3, 3)
    x[[5, 9]] = 7  # a tie: the first index wins
    v, i = poisoned(1, np.int32), poisoned(1, np.int32)
    max_with_indices_kernel[(1,)](x, v, i, N=N)
    assert (v[0], i[0]) == (7, 5)


@tw.jit
def mul_combine(a, b):
    return a * b


@tw.jit
def argmax_combine(v0, i0, v1, i1):
    # a tuple combine: (value, index) pairs, the larger value (the smaller index on ties)
    take_left = (v0 > v1) | ((v0 == v1) & (i0 < i1))
    return tl.where(take_left, v0, v1), tl.where(take_left, i0, i1)


@tw.jit
def user_reduce_kernel(x_ptr, prod0_ptr, prodall_ptr, v_ptr, i_ptr, keep_ptr, M: tl.constexpr,
                       N: tl.constexpr):
    x = tl.load(x_ptr + tile_2d(x_ptr, M, N))
    tl.store(prod0_ptr + tl.arange(0, N), tl.reduce(x, 0, mul_combine))
    tl.store(prodall_ptr, tl.reduce(x, None, mul_combine))
    idx = tl.broadcast_to(tl.arange(0, N)[None, :], (M, N))
    v, i = tl.reduce((x, idx), 1, argmax_combine)
    tl.store(v_ptr + tl.arange(0, M), v)
    tl.store(i_ptr + tl.arange(0, M), i)
    k = x.reduce(1, mul_combine, keep_dims=True)
    tl.store(keep_ptr + tl.arange(0, M)[:, None] + tl.zeros((M, 1), tl.int32), k)


def test_reduce_with_a_jit_combine(rng):
    x = (1 + rng.random((M, N)) * 0.05).astype(np.float32)  # products stay near 1
    prod0, v, keep = poisoned(N, np.float32), poisoned(M, np.float32), poisoned(M, np.float32)
    prodall, i = poisoned(1, np.float32), poisoned(M, np.int32)
    user_reduce_kernel[(1,)](x, prod0, prodall, v, i, keep, M=M, N=N)
    x64 = x.astype(np.float64)
    assert_close(prod0, x64.prod(0), rtol=1e-5)
    assert_close(prodall, [x64.prod()], rtol=1e-4)
    assert_close(v, x64.max(1), rtol=0)
    np.testing.assert_array_equal(i, x.argmax(1))
    assert_close(keep, x64.prod(1), rtol=1e-5)


@tw.jit
def add_combine(a, b):
    return a + b


@tw.jit
def scan_kernel(x_ptr, cs_ptr, cs0_ptr, rev_ptr, cp_ptr, user_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tile_2d(x_ptr, M, N)
    x = tl.load(x_ptr + offs)
    tl.store(cs_ptr + offs, tl.cumsum(x, 1))
    tl.store(cs0_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(rev_ptr + offs, tl.cumsum(x, 1, reverse=True))
    tl.store(cp_ptr + offs, tl.cumprod(x, 1))
    tl.store(user_ptr + offs, tl.associative_scan(x, 1, add_combine))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scans(rng, dtype):
    if dtype == np.float32:
        x = (1 + rng.random((M, N)) * 0.05).astype(dtype)
    else:
        x = randint(rng, (M, N), dtype, -3, 3)
    outs = [poisoned((M, N), dtype) for _ in range(5)]
    scan_kernel[(1,)](x, *outs, M=M, N=N)
    x64 = x.astype(np.float64)
    rtol = 1e-5 if dtype == np.float32 else 0
    assert_close(outs[0], np.cumsum(x64, 1), rtol=rtol)
    assert_close(outs[1], np.cumsum(x64, 0), rtol=rtol)
    assert_close(outs[2], np.cumsum(x64[:, ::-1], 1)[:, ::-1], rtol=rtol)
    if dtype == np.float32:
        assert_close(outs[3], np.cumprod(x64, 1), rtol=rtol)
    else:  # int32 products wrap
        want = np.cumprod(x.astype(np.int64), 1).astype(np.int32)
        np.testing.assert_array_equal(outs[3], want)
    assert_close(outs[4], np.cumsum(x64, 1), rtol=rtol)


@tw.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, OUT_DTYPE: tl.constexpr, USE_ACC: tl.constexpr):
    a = tl.load(a_ptr + tile_2d(a_ptr, M, K))
    b = tl.load(b_ptr + tile_2d(b_ptr, K, N))
    if USE_ACC:
        acc = tl.load(c_ptr + tile_2d(c_ptr, M, N))
        out = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    else:
        out = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    tl.static_assert(out.dtype == OUT_DTYPE)
    tl.store(out_ptr + tile_2d(out_ptr, M, N), out)


DOT_CASES = [  # input dtype, input_precision, out dtype (numpy, tl), relative tolerance
    (np.float32, "ieee", np.float32, tl.float32, 1e-5), (np.float32, "tf32", np.float32, tl.float32, 2e-3),
    (np.float32, "tf32x3", np.float32, tl.float32, 1e-5), (np.float16, None, np.float32, tl.float32, 1e-5),
    (np.float16, None, np.float16, tl.float16, 2e-3), (BF16, None, np.float32, tl.float32, 1e-5),
    (np.int8, None, np.int32, tl.int32, 0),
]


@pytest.mark.parametrize("use_acc", [False, True])
@pytest.mark.parametrize("dtype,precision,out_np,out_tl,rtol", DOT_CASES,
                         ids=[f"{np.dtype(c[0]).name}-{c[1]}-{np.dtype(c[2]).name}" for c in DOT_CASES])
def test_dot(rng, dtype, precision, out_np, out_tl, rtol, use_acc):
    m, n, k = 16, 32, 64
    if dtype == np.int8:
        a, b = randint(rng, (m, k), np.int8), randint(rng, (k, n), np.int8)
        c = randint(rng, (m, n), np.int32, -1000, 1000)
    else:
        a, b, c = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype), randn(rng, (m, n), out_np)
    out = poisoned((m, n), out_np)
    dot_kernel[(1,)](a, b, c, out, M=m, N=n, K=k, PRECISION=precision, OUT_DTYPE=out_tl, USE_ACC=use_acc)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64 + (c.astype(np.float64) if use_acc else 0)
    if dtype == np.int8:
        np.testing.assert_array_equal(out, want.astype(np.int32))
        return
    # error relative to the magnitude of the summed products, not of a (possibly cancelling) result
    scale = np.abs(a64) @ np.abs(b64) + (np.abs(c.astype(np.float64)) if use_acc else 0)
    err = np.abs(out.astype(np.float64) - want)
    assert not np.isnan(out.astype(np.float64)).any()
    assert (err <= rtol * scale + 1e-6).all(), f"max error / scale {np.max(err / scale):.3g} > {rtol}"


@tw.jit
def dot_operator_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr):
    a = tl.load(a_ptr + tile_2d(a_ptr, M, M))
    b = tl.load(b_ptr + tile_2d(b_ptr, M, M))
    tl.store(out_ptr + tile_2d(out_ptr, M, M), a @ b.T)


def test_matmul_operator_and_transposed_operand(rng):
    a, b = randn(rng, (16, 16), np.float16), randn(rng, (16, 16), np.float16)
    out = poisoned((16, 16), np.float32)
    dot_operator_kernel[(1,)](a, b, out, M=16)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T
    assert (np.abs(out - want) <= 1e-5 * scale + 1e-6).all()


@tw.jit
def reduce_dtype_kernel(DT: tl.constexpr, SUM: tl.constexpr, MAX: tl.constexpr, IDX: tl.constexpr):
    x = tl.zeros((4, 8), DT)
    tl.static_assert(tl.sum(x, 0).dtype == SUM, f"sum of {DT}")
    tl.static_assert(tl.max(x, 1).dtype == MAX, f"max of {DT}")
    tl.static_assert(tl.min(x, 1).dtype == MAX, f"min of {DT}")
    v, i = tl.max(x, 1, return_indices=True)
    tl.static_assert(v.dtype == IDX and i.dtype == tl.int32, f"max with indices of {DT}")
    tl.static_assert(tl.argmin(x, 0).dtype == tl.int32)
    tl.static_assert(tl.sum(x, None, keep_dims=True).shape == (1, 1))
    tl.static_assert(tl.reduce(x, None, add_combine, keep_dims=True).shape == (1, 1))
    tl.static_assert(tl.max(x, None, keep_dims=True).shape == (1, 1))
    tl.static_assert(tl.sum(x, 1, keep_dims=True).shape == (4, 1))


@pytest.mark.parametrize("dt,sum_dt,max_dt,idx_dt", [
    (tl.float32, tl.float32, tl.float32, tl.float32), (tl.float16, tl.float16, tl.float32, tl.float16),
    (tl.bfloat16, tl.bfloat16, tl.float32, tl.float32), (tl.int8, tl.int32, tl.int32, tl.int8),
    (tl.uint8, tl.uint32, tl.int32, tl.uint8), (tl.int16, tl.int32, tl.int32, tl.int16),
    (tl.int64, tl.int64, tl.int64, tl.int64), (tl.uint32, tl.uint32, tl.uint32, tl.uint32),
])
def test_reduction_result_dtypes_follow_triton(dt, sum_dt, max_dt, idx_dt):
    """Triton: sums of narrow ints accumulate in (u)int32; max/min promote narrow floats to fp32 and
    narrow ints to int32; bf16 is promoted to fp32 even with return_indices; keep_dims with axis=None
    keeps every dimension."""
    tw.compile(reduce_dtype_kernel, signature={}, target="interpreter",
               constexprs={"DT": dt, "SUM": sum_dt, "MAX": max_dt, "IDX": idx_dt})
