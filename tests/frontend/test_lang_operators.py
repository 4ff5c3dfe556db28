"""Operator values against NumPy: arithmetic in the promoted dtype (integers wrap), C semantics for
integer // and % (truncation toward zero, the remainder takes the dividend's sign), signed vs unsigned
comparisons, shifts, unary operators and `.to(dtype, bitcast=...)`."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from fe_util import BF16, assert_close, poisoned, randint, randn
from test_lang_promotion import OP_FNS

import tileworkbench as tw
import tileworkbench.language as tl

N = 64


@tw.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = OP(tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    tl.store(out_ptr + offs, z)


@tw.jit
def scalar_rhs_kernel(x_ptr, out_ptr, OP: tl.constexpr, S: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, OP(tl.load(x_ptr + offs), S))


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division (toward zero), computed exactly in Python integers."""
    return np.array([abs(int(p)) // abs(int(q)) * (1 if (p < 0) == (q < 0) else -1)
                     for p, q in zip(a, b)], dtype=object)


def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([int(p) - int(q) * int(d) for p, q, d in zip(a, b, c_div(a, b))], dtype=object)


def wrap(values, dtype) -> np.ndarray:
    """Python integers reduced modulo 2**bits into `dtype` (two's complement)."""
    bits = np.dtype(dtype).itemsize * 8
    out = [int(v) & ((1 << bits) - 1) for v in values]
    if np.issubdtype(dtype, np.signedinteger):
        out = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in out]
    return np.array(out, dtype=dtype)


INT_CASES = [(np.int8, np.int8, np.int8), (np.int32, np.int32, np.int32), (np.int8, np.uint8, np.uint8),
             (np.int16, np.uint8, np.int16), (np.int64, np.int32, np.int64), (np.uint32, np.uint32, np.uint32),
             (np.uint16, np.uint64, np.uint64)]


@pytest.mark.parametrize("op", ["+", "-", "*", "&", "|", "^"])
@pytest.mark.parametrize("a,b,res", INT_CASES, ids=lambda t: np.dtype(t).name)
def test_integer_arithmetic_wraps(rng, op, a, b, res):
    x, y = randint(rng, N, a), randint(rng, N, b)
    out = poisoned(N, res)
    binary_kernel[(1,)](x, y, out, OP=OP_FNS[op], N=N)
    xs, ys = [int(v) for v in x.astype(res)], [int(v) for v in y.astype(res)]
    fn = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q,
          "&": lambda p, q: p & q, "|": lambda p, q: p | q, "^": lambda p, q: p ^ q}[op]
    np.testing.assert_array_equal(out, wrap([fn(p, q) for p, q in zip(xs, ys)], res))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_floordiv_and_mod_follow_c(rng, dtype):
    signed = np.issubdtype(dtype, np.signedinteger)
    x = randint(rng, N, dtype)
    y = randint(rng, N, dtype, -9 if signed else 1, 9)
    y[y == 0] = 3
    if signed:  # make sure every sign combination is present, and the overflowing MIN // -1 is not
        x[:4], y[:4] = [7, -7, 7, -7], [2, 2, -2, -2]
        x[x == np.iinfo(dtype).min] = 5
    q, r = poisoned(N, dtype), poisoned(N, dtype)
    binary_kernel[(1,)](x, y, q, OP=OP_FNS["//"], N=N)
    binary_kernel[(1,)](x, y, r, OP=OP_FNS["%"], N=N)
    np.testing.assert_array_equal(q, c_div(x, y).astype(dtype))
    np.testing.assert_array_equal(r, c_mod(x, y).astype(dtype))
    if signed:
        np.testing.assert_array_equal(q[:4], [3, -3, -3, 3])
        np.testing.assert_array_equal(r[:4], [1, -1, 1, -1])


@pytest.mark.parametrize("s", [3, -4])
def test_integer_division_by_a_python_scalar(rng, s):
    x = randint(rng, N, np.int32, -1000, 1000)
    q, r = poisoned(N, np.int32), poisoned(N, np.int32)
    scalar_rhs_kernel[(1,)](x, q, OP=OP_FNS["//"], S=s, N=N)
    scalar_rhs_kernel[(1,)](x, r, OP=OP_FNS["%"], S=s, N=N)
    ys = np.full(N, s)
    np.testing.assert_array_equal(q, c_div(x, ys).astype(np.int32))
    np.testing.assert_array_equal(r, c_mod(x, ys).astype(np.int32))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint16, np.int64])
def test_shifts(rng, dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = randint(rng, N, dtype)
    y = rng.integers(0, bits, N).astype(dtype)
    left, right = poisoned(N, dtype), poisoned(N, dtype)
    binary_kernel[(1,)](x, y, left, OP=OP_FNS["<<"], N=N)
    binary_kernel[(1,)](x, y, right, OP=OP_FNS[">>"], N=N)
    np.testing.assert_array_equal(left, wrap([int(p) << int(q) for p, q in zip(x, y)], dtype))
    # >> is arithmetic for signed types (Python's >> on negative ints), logical for unsigned
    np.testing.assert_array_equal(right, np.array([int(p) >> int(q) for p, q in zip(x, y)], dtype))


@pytest.mark.parametrize("op", ["<", "==", ">=", "!=", "<=", ">"])
def test_mixed_signedness_comparison_is_unsigned(rng, op):
    x = randint(rng, N, np.int32, -5, 5)
    y = randint(rng, N, np.uint32, 0, 5)
    out = poisoned(N, np.bool_)
    binary_kernel[(1,)](x, y, out, OP=OP_FNS[op], N=N)
    xu = x.astype(np.uint32)  # C: -1 < 1u is false, since -1 becomes 4294967295
    want = {"<": xu < y, "==": xu == y, ">=": xu >= y, "!=": xu != y, "<=": xu <= y, ">": xu > y}[op]
    np.testing.assert_array_equal(out, want)
    assert (x < 0).any()


FLOAT_CASES = [(np.float32, np.float32, np.float32), (np.float16, np.float16, np.float16),
               (BF16, BF16, BF16), (np.float16, np.float32, np.float32), (np.int32, np.float32, np.float32),
               (np.float64, np.float16, np.float64)]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
@pytest.mark.parametrize("a,b,res", FLOAT_CASES, ids=lambda t: np.dtype(t).name)
def test_float_arithmetic(rng, op, a, b, res):
    x = randn(rng, N, np.float64, 4).astype(a)
    y = randn(rng, N, np.float64, 4).astype(b)
    y[np.abs(y.astype(np.float64)) < 0.1] = 0.5
    out = poisoned(N, np.float64)
    binary_kernel[(1,)](x, y, out, OP=OP_FNS[op], N=N)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    want = {"+": xd + yd, "-": xd - yd, "*": xd * yd, "/": xd / yd, "%": np.fmod(xd, yd)}[op]
    compute = np.dtype(np.float32) if op in "/%" and res in (np.float16, BF16) else np.dtype(res)
    if op == "%":  # fmod is exact; only the operands' rounding and C's sign rule matter
        assert_close(out, want, rtol=1e-6, atol=1e-6)
    else:
        assert_close(out, want.astype(compute).astype(np.float64), rtol=1e-6 if compute.itemsize > 2 else 0)


@tw.jit
def unary_kernel(x_ptr, neg_ptr, inv_ptr, not_ptr, pos_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(neg_ptr + offs, -x)
    tl.store(inv_ptr + offs, ~x)
    tl.store(not_ptr + offs, not x)
    tl.store(pos_ptr + offs, +x)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_unary_operators(rng, dtype):
    x = randint(rng, N, dtype, 0 if dtype == np.uint16 else -100, 100)
    x[0] = 0
    neg, inv, pos = poisoned(N, dtype), poisoned(N, dtype), poisoned(N, dtype)
    nt = poisoned(N, np.bool_)
    unary_kernel[(1,)](x, neg, inv, nt, pos, N=N)
    np.testing.assert_array_equal(neg, wrap([-int(v) for v in x], dtype))
    np.testing.assert_array_equal(inv, wrap([~int(v) for v in x], dtype))
    np.testing.assert_array_equal(nt, x == 0)
    np.testing.assert_array_equal(pos, x)


@tw.jit
def cast_kernel(x_ptr, out_ptr, DST: tl.constexpr, BITCAST: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.load(x_ptr + offs).to(DST, bitcast=BITCAST)
    tl.static_assert(y.dtype == DST)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("src,dst,tl_dst", [
    (np.float32, np.int32, tl.int32), (np.float32, np.float16, tl.float16), (np.float32, BF16, tl.bfloat16),
    (np.float16, np.float64, tl.float64), (np.int32, np.int8, tl.int8), (np.int8, np.int64, tl.int64),
    (np.uint8, np.int32, tl.int32), (np.int32, np.float32, tl.float32), (np.float32, np.uint8, tl.uint8),
    (np.float32, np.bool_, tl.int1), (np.float32, ml_dtypes.float8_e5m2, tl.float8e5),
    (np.float32, ml_dtypes.float8_e4m3fn, tl.float8e4nv),
])
def test_value_casts(rng, src, dst, tl_dst):
    x = randn(rng, N, np.float64, 20)
    if np.dtype(dst) == np.uint8:
        x = np.abs(x)
    if np.dtype(dst).kind in "iu":
        x = np.trunc(x)  # float -> int truncates toward zero; avoid out-of-range lanes
    if np.dtype(src).kind in "iu":
        x = randint(rng, N, src)
    x = x.astype(src)
    out = poisoned(N, dst)
    cast_kernel[(1,)](x, out, DST=tl_dst, BITCAST=False, N=N)
    want = x.astype(np.float64).astype(dst) if np.dtype(src).kind == "f" and np.dtype(dst).kind != "b" \
        else x.astype(dst)
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("src,dst,tl_dst", [(np.float32, np.int32, tl.int32), (np.int32, np.uint32, tl.uint32),
                                            (np.float16, np.int16, tl.int16), (BF16, np.uint16, tl.uint16),
                                            (np.float64, np.uint64, tl.uint64)])
def test_bitcasts(rng, src, dst, tl_dst):
    x = randn(rng, N, np.float64, 1e3).astype(src)
    out = poisoned(N, dst)
    cast_kernel[(1,)](x, out, DST=tl_dst, BITCAST=True, N=N)
    np.testing.assert_array_equal(out, x.view(dst))


def test_bitcast_of_different_widths_is_an_error(rng):
    x = randn(rng, N)
    with pytest.raises(tw.CompilationError, match="bit widths differ"):
        cast_kernel[(1,)](x, poisoned(N, np.int16), DST=tl.int16, BITCAST=True, N=N)


@pytest.mark.parametrize("dtype,op,scalar", [(np.int8, "*", 200), (np.uint32, "+", -1), (np.int32, "+", 2**40),
                                             (np.uint8, "<", 300), (np.int16, "&", 1 << 20)])
def test_out_of_range_python_int_is_an_error(dtype, op, scalar):
    """Triton's rule (no silent wrap): the scalar must fit the dtype the operation computes in."""
    x = np.ones(N, dtype)
    with pytest.raises(tw.CompilationError, match=f"constant {scalar} is out of range"):
        scalar_rhs_kernel[(1,)](x, poisoned(N, dtype), OP=OP_FNS[op], S=scalar, N=N)


def test_in_range_python_ints_at_the_edges(rng):
    x = randint(rng, N, np.uint8, 0, 10)
    out = poisoned(N, np.uint8)
    scalar_rhs_kernel[(1,)](x, out, OP=OP_FNS["+"], S=245, N=N)
    np.testing.assert_array_equal(out, x + np.uint8(245))


@pytest.mark.parametrize("op", ["<", "==", ">=", "!=", "<=", ">"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, np.uint8])
def test_comparisons_with_nan_and_ties(rng, op, dtype):
    if np.dtype(dtype).kind == "f":
        x, y = randn(rng, N, dtype), randn(rng, N, dtype)
        x[:3], y[3:5] = np.nan, np.nan  # ordered predicates are false on NaN, != is true
    else:
        x, y = randint(rng, N, dtype, 0, 5), randint(rng, N, dtype, 0, 5)
    y[10:14] = x[10:14]  # ties
    out = poisoned(N, np.bool_)
    binary_kernel[(1,)](x, y, out, OP=OP_FNS[op], N=N)
    fn = {"<": np.less, "==": np.equal, ">=": np.greater_equal, "!=": np.not_equal, "<=": np.less_equal,
          ">": np.greater}[op]
    np.testing.assert_array_equal(out, fn(x, y))
