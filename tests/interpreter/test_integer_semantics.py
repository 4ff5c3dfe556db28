"""Integer ops follow C and LLVM: division truncates toward zero, signed overflow wraps, signedness comes
from the op (divsi vs divui, shrsi vs shrui, slt vs ult), casts wrap or saturate."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kernels import f32, i1, i8, i32, i64, run_elementwise, u8, u32, u64

from tileworkbench.ir.ops import arith, tt

RNG = np.random.default_rng(99)


def _ints(n, dtype, low=None, high=None):
    info = np.iinfo(dtype)
    return RNG.integers(
        info.min if low is None else low,
        (info.max if high is None else high),
        n,
        dtype=dtype,
        endpoint=True,
    )


def _binary(cls, a, b, element, dtype, out_element=None, out_dtype=None):
    return run_elementwise(
        lambda kb, x, y: kb.binary(cls, x, y),
        [a, b],
        [element, element],
        out_element or element,
        out_dtype or dtype,
    )


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("element, dtype", [(i32, np.int32), (i8, np.int8), (i64, np.int64)])
def test_signed_division_and_remainder_truncate_toward_zero(element, dtype):
    a = _ints(256, dtype)
    b = _ints(256, dtype, -50, 50)
    b[b == 0] = 7
    a[:4], b[:4] = [-7, 7, -7, 7], [2, -2, -2, 2]
    quotient = _binary(arith.DivSIOp, a, b, element, dtype)
    remainder = _binary(arith.RemSIOp, a, b, element, dtype)
    ref_q = [_c_div(int(x), int(y)) for x, y in zip(a, b)]
    ref_r = [int(x) - int(y) * q for x, y, q in zip(a, b, ref_q)]
    wrap = 1 << (8 * np.dtype(dtype).itemsize)
    ref_q = [((q + wrap // 2) % wrap) - wrap // 2 for q in ref_q]  # INT_MIN / -1 wraps
    np.testing.assert_array_equal(quotient, np.array(ref_q, dtype=np.int64).astype(dtype))
    np.testing.assert_array_equal(remainder, np.array(ref_r, dtype=np.int64).astype(dtype))
    np.testing.assert_array_equal(quotient[:4], [-3, -3, 3, 3])
    np.testing.assert_array_equal(remainder[:4], [-1, 1, -1, 1])


def test_signed_overflow_wraps_silently():
    a = np.array([2**31 - 1, -(2**31), 65536, 3] * 4, np.int32)
    b = np.array([1, -1, 65536, -5] * 4, np.int32)
    with np.errstate(all="raise"):  # the interpreter itself must not warn or raise
        added = _binary(arith.AddIOp, a, b, i32, np.int32)
        product = _binary(arith.MulIOp, a, b, i32, np.int32)
    ref_add = [(int(x) + int(y) + 2**31) % 2**32 - 2**31 for x, y in zip(a, b)]
    ref_mul = [(int(x) * int(y) + 2**31) % 2**32 - 2**31 for x, y in zip(a, b)]
    np.testing.assert_array_equal(added, ref_add)
    np.testing.assert_array_equal(product, ref_mul)


def test_unsigned_types_wrap_and_divide_unsigned():
    a = _ints(64, np.uint32)
    b = _ints(64, np.uint32, 1, 1000)
    np.testing.assert_array_equal(
        _binary(arith.SubIOp, b, a, u32, np.uint32),
        [(int(y) - int(x)) % 2**32 for x, y in zip(a, b)],
    )
    np.testing.assert_array_equal(
        _binary(arith.DivUIOp, a, b, u32, np.uint32), [int(x) // int(y) for x, y in zip(a, b)]
    )
    small = _ints(64, np.uint8)
    np.testing.assert_array_equal(
        _binary(arith.AddIOp, small, small, u8, np.uint8), (small.astype(np.int64) * 2) % 256
    )


def test_divui_reads_signed_values_as_unsigned():
    a = np.array([-1, -8, 10, 7] * 4, np.int32)
    b = np.array([2, 3, -1, 1] * 4, np.int32)
    got = _binary(arith.DivUIOp, a, b, i32, np.int32)
    ref = [(int(x) % 2**32) // (int(y) % 2**32) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got.view(np.uint32), ref)


def test_shifts_arithmetic_and_logical():
    a = np.array([-16, 16, -1, 2**30] * 4, np.int32)
    s = np.array([2, 3, 31, 1] * 4, np.int32)
    np.testing.assert_array_equal(
        _binary(arith.ShRSIOp, a, s, i32, np.int32), [int(x) >> int(k) for x, k in zip(a, s)]
    )
    np.testing.assert_array_equal(
        _binary(arith.ShRUIOp, a, s, i32, np.int32).view(np.uint32),
        [(int(x) % 2**32) >> int(k) for x, k in zip(a, s)],
    )
    np.testing.assert_array_equal(
        _binary(arith.ShLIOp, a, s, i32, np.int32),
        [((int(x) << int(k)) + 2**31) % 2**32 - 2**31 for x, k in zip(a, s)],
    )


@pytest.mark.parametrize(
    "predicate, ref",
    [
        ("slt", lambda a, b: a < b),
        ("ult", lambda a, b: (a % 2**32) < (b % 2**32)),
        ("sge", lambda a, b: a >= b),
        ("ugt", lambda a, b: (a % 2**32) > (b % 2**32)),
    ],
)
def test_cmpi_signedness_comes_from_the_predicate(predicate, ref):
    a, b = _ints(128, np.int32, -5, 5), _ints(128, np.int32, -5, 5)
    got = run_elementwise(
        lambda kb, x, y: kb.cmpi(predicate, x, y), [a, b], [i32, i32], i1, np.bool_
    )
    np.testing.assert_array_equal(got, [ref(int(x), int(y)) for x, y in zip(a, b)])


def test_integer_casts_wrap_and_extend_by_the_op():
    a = np.array([-1, 200, -128, 127] * 4, np.int32)
    trunc = run_elementwise(lambda kb, x: kb.cast(arith.TruncIOp, x, i8), [a], [i32], i8, np.int8)
    np.testing.assert_array_equal(trunc, [-1, -56, -128, 127] * 4)
    b = np.array([-1, -128, 5, 127] * 4, np.int8)
    sext = run_elementwise(lambda kb, x: kb.cast(arith.ExtSIOp, x, i64), [b], [i8], i64, np.int64)
    zext = run_elementwise(lambda kb, x: kb.cast(arith.ExtUIOp, x, i64), [b], [i8], i64, np.int64)
    np.testing.assert_array_equal(sext, b.astype(np.int64))
    np.testing.assert_array_equal(zext, b.view(np.uint8).astype(np.int64))


def test_fptosi_truncates_saturates_and_maps_nan_to_zero():
    x = np.array([2.9, -2.9, 1e20, -1e20, np.nan, np.inf, -0.5, 3e9], np.float32)
    with np.errstate(all="raise"):
        got = run_elementwise(
            lambda kb, v: kb.cast(arith.FPToSIOp, v, i32), [x], [f32], i32, np.int32
        )
        unsigned = run_elementwise(
            lambda kb, v: kb.cast(arith.FPToUIOp, v, u32), [x], [f32], u32, np.uint32
        )
    np.testing.assert_array_equal(got, [2, -2, 2**31 - 1, -(2**31), 0, 2**31 - 1, 0, 2**31 - 1])
    np.testing.assert_array_equal(unsigned, [2, 0, 2**32 - 1, 0, 0, 2**32 - 1, 0, 3000000000])


def test_int_to_float_reads_the_ops_signedness():
    a = np.array([-1, 5, -(2**31), 7], np.int32)
    signed = run_elementwise(
        lambda kb, x: kb.cast(arith.SIToFPOp, x, f32), [a], [i32], f32, np.float32
    )
    unsigned = run_elementwise(
        lambda kb, x: kb.cast(arith.UIToFPOp, x, f32), [a], [i32], f32, np.float32
    )
    np.testing.assert_array_equal(signed, a.astype(np.float32))
    np.testing.assert_array_equal(unsigned, a.view(np.uint32).astype(np.float32))


@pytest.mark.parametrize("element, dtype", [(u32, np.uint32), (u64, np.uint64), (i32, np.int32)])
def test_mulhiui_is_the_high_half_of_the_unsigned_product(element, dtype):
    a, b = _ints(64, dtype), _ints(64, dtype)
    bits = 8 * np.dtype(dtype).itemsize
    got = run_elementwise(
        lambda kb, x, y: kb.op(tt.MulhiUIOp, [x.type], lhs=x, rhs=y),
        [a, b],
        [element, element],
        element,
        dtype,
    )
    ref = [((int(x) % 2**bits) * (int(y) % 2**bits)) >> bits for x, y in zip(a, b)]
    np.testing.assert_array_equal(
        got.view(np.dtype(f"u{np.dtype(dtype).itemsize}")),
        np.array(ref, dtype=object).astype(np.uint64),
    )


def test_bitcast_reinterprets_bits():
    x = RNG.standard_normal(16).astype(np.float32)
    got = run_elementwise(lambda kb, v: kb.cast(arith.BitcastOp, v, i32), [x], [f32], i32, np.int32)
    np.testing.assert_array_equal(got, x.view(np.int32))


def test_i1_arithmetic_wraps_mod_2():
    a = np.array([True, True, False, False] * 4)
    b = np.array([True, False, True, False] * 4)
    added = _binary(arith.AddIOp, a, b, i1, np.bool_)
    anded = _binary(arith.AndIOp, a, b, i1, np.bool_)
    np.testing.assert_array_equal(added, a ^ b)  # 1 + 1 = 0 in one bit
    np.testing.assert_array_equal(anded, a & b)
