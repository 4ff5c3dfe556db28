"""libdevice beyond the classic float functions, in the interpreter, against references written with
Python's `math`, `fractions` and `struct` (no NumPy math, no SciPy): explicitly rounded arithmetic and
conversions, reinterpretations, integer bit functions, Bessel and error-function relatives, and the
choice of overload. The NVPTX side: tests/nvptx/test_libdevice_lowering.py."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from fe_util import poisoned

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError
from tileworkbench.language.extra import libdevice

# on the cpu target, what has no LLVM intrinsic or C-library namesake (directed rounding, the Bessel
# I functions, mulhi, ...) calls back into the interpreter's version (backends/cpu/host_calls.py)

N = 16
F32 = np.float32


@tw.jit
def unary_kernel(x_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs)))


@tw.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@tw.jit
def ternary_kernel(x_ptr, y_ptr, z_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)))


def call(fn, out_dtype, *args):
    out = poisoned((N,), out_dtype)
    kernel = {1: unary_kernel, 2: binary_kernel, 3: ternary_kernel}[len(args)]
    kernel[(1,)](*args, out, fn, N)
    return out


# -- explicit rounding: rd <= exact <= ru, adjacent; rz toward zero; rn the nearer (ties even) ----------
def _check_directed(results: dict, exact: Fraction, ftype) -> None:
    down, up = results["rd"], results["ru"]
    assert Fraction(float(down)) <= exact <= Fraction(float(up))
    assert down == up or np.nextafter(down, ftype(np.inf)) == up
    assert results["rz"] == (down if exact >= 0 else up)
    nearer = down if abs(Fraction(float(down)) - exact) < abs(Fraction(float(up)) - exact) else up
    if abs(Fraction(float(down)) - exact) == abs(Fraction(float(up)) - exact):
        bits = np.asarray(down).view(np.uint32 if ftype is F32 else np.uint64)
        nearer = down if int(bits) % 2 == 0 else up
    assert results["rn"] == nearer


ARITH = {"add": (2, lambda a, b: a + b), "sub": (2, lambda a, b: a - b), "mul": (2, lambda a, b: a * b),
         "div": (2, lambda a, b: a / b), "fma": (3, lambda a, b, c: a * b + c), "rcp": (1, lambda a: 1 / a)}


@pytest.mark.parametrize("ftype", [F32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("op", list(ARITH) + ["sqrt"])
def test_rounded_arithmetic_brackets_the_exact_result(rng, op, ftype):
    arity, exact_fn = ARITH.get(op, (1, None))
    args = [(rng.standard_normal(N) * 3).astype(ftype) for _ in range(arity)]
    if op == "sqrt":
        args = [np.abs(args[0]) + ftype(0.5)]
    results = {mode: call(getattr(libdevice, f"{op}_{mode}"), ftype, *args)
               for mode in ("rn", "rz", "rd", "ru")}
    for i in range(N):
        values = [Fraction(float(a[i])) for a in args]
        per_mode = {mode: r[i] for mode, r in results.items()}
        if op == "sqrt":  # bracket by squares: rd^2 <= x <= ru^2
            down, up = Fraction(float(per_mode["rd"])), Fraction(float(per_mode["ru"]))
            assert down * down <= values[0] <= up * up
            if ftype is np.float64:  # math.sqrt is correctly rounded
                assert per_mode["rn"] == math.sqrt(float(args[0][i]))
            continue
        _check_directed(per_mode, exact_fn(*values), ftype)


def test_rsqrt_rn_is_the_nearest(rng):
    x = (np.abs(rng.standard_normal(N)) + 0.1).astype(F32)
    got = call(libdevice.rsqrt_rn, F32, x)
    for xi, gi in zip(x, got):
        exact = 1 / math.sqrt(float(xi))  # float64: far more precise than the fp32 ulp
        neighbours = [np.nextafter(gi, F32(-np.inf)), np.nextafter(gi, F32(np.inf))]
        assert all(abs(float(gi) - exact) <= abs(float(n) - exact) for n in neighbours)


@pytest.mark.parametrize("mode, rounder", [("rn", round), ("rz", math.trunc), ("rd", math.floor),
                                           ("ru", math.ceil)])
def test_float_to_int_rounds_and_saturates(rng, mode, rounder):
    x = (rng.standard_normal(N) * 1000).astype(F32)
    x[:4] = [2.5, -3.5, 3e10, -3e10]  # ties to even (rn), and values past int32's range saturate
    got = call(getattr(libdevice, f"float2int_{mode}"), np.int32, x)
    want = [max(-(2**31), min(2**31 - 1, rounder(float(v)))) for v in x]
    assert list(got) == want
    got = call(getattr(libdevice, f"double2ull_{mode}"), np.uint64, np.abs(x).astype(np.float64))
    assert list(got) == [rounder(abs(float(v))) for v in x]


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
def test_int_to_float_rounds_once(rng, mode):
    x = rng.integers(2**24, 2**31 - 1, N).astype(np.int32)  # beyond fp32's 24-bit significand
    got = {m: call(getattr(libdevice, f"int2float_{m}"), F32, x) for m in ("rn", "rz", "rd", "ru")}
    for i in range(N):
        _check_directed({m: r[i] for m, r in got.items()}, Fraction(int(x[i])), F32)
    big = rng.integers(2**53, 2**63 - 1, N, dtype=np.int64)
    down, up = (call(getattr(libdevice, f"ll2double_{m}"), np.float64, big) for m in ("rd", "ru"))
    assert all(Fraction(float(d)) <= int(b) <= Fraction(float(u)) for d, b, u in zip(down, big, up))


def test_reinterpretations_match_struct(rng):
    x = rng.standard_normal(N).astype(F32)
    bits = call(libdevice.float_as_int, np.int32, x)
    assert list(bits) == [struct.unpack("<i", struct.pack("<f", float(v)))[0] for v in x]
    assert np.array_equal(call(libdevice.int_as_float, F32, bits), x)
    d = rng.standard_normal(N)
    hi, lo = call(libdevice.double2hiint, np.int32, d), call(libdevice.double2loint, np.int32, d)
    assert np.array_equal(call(libdevice.hiloint2double, np.float64, hi, lo), d)
    assert list(call(libdevice.double_as_longlong, np.int64, d)) == \
        [struct.unpack("<q", struct.pack("<d", float(v)))[0] for v in d]


# -- integer functions against Python integers -------------------------------------------------------
def _u32(v: int) -> int:
    return v & 0xFFFFFFFF


INT_CASES = {
    "clz": (1, lambda a: 32 - _u32(a).bit_length()),
    "popc": (1, lambda a: bin(_u32(a)).count("1")),
    "ffs": (1, lambda a: (_u32(a) & -_u32(a)).bit_length()),
    "brev": (1, lambda a: _wrap32(int(f"{_u32(a):032b}"[::-1], 2))),
    "mulhi": (2, lambda a, b: (a * b) >> 32),
    "hadd": (2, lambda a, b: (a + b) >> 1),
    "rhadd": (2, lambda a, b: (a + b + 1) >> 1),
    "mul24": (2, lambda a, b: _wrap32(_signed24(a) * _signed24(b))),
    "byte_perm": (3, lambda a, b, s: _byte_perm(a, b, s)),
}


def _signed24(v: int) -> int:
    v &= 0xFFFFFF
    return v - 2**24 if v >= 2**23 else v


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 2**32 if v >= 2**31 else v


def _byte_perm(a: int, b: int, selector: int) -> int:
    source = (_u32(b) << 32) | _u32(a)
    out = 0
    for i in range(4):
        out |= ((source >> (8 * ((selector >> (4 * i)) & 7))) & 0xFF) << (8 * i)
    return _wrap32(out)


@pytest.mark.parametrize("name", list(INT_CASES))
def test_integer_functions(rng, name):
    arity, ref = INT_CASES[name]
    args = [rng.integers(-(2**31), 2**31 - 1, N).astype(np.int32) for _ in range(arity)]
    got = call(getattr(libdevice, name), np.int32, *args)
    assert list(got) == [ref(*(int(a[i]) for a in args)) for i in range(N)]


def test_64_bit_mulhi_and_unsigned_forms(rng):
    a = rng.integers(0, 2**64 - 1, N, dtype=np.uint64)
    b = rng.integers(0, 2**64 - 1, N, dtype=np.uint64)
    want = [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]
    assert list(call(libdevice.mulhi, np.uint64, a, b)) == want
    s, t = a.view(np.int64), b.view(np.int64)
    assert list(call(libdevice.mulhi, np.int64, s, t)) == [(int(x) * int(y)) >> 64 for x, y in zip(s, t)]


# -- special functions against series written with math ----------------------------------------------
def _jn(n: int, x: float) -> float:
    return sum((-1) ** k * (x / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n))
               for k in range(60))


def _in(n: int, x: float) -> float:
    return sum((x / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n)) for k in range(60))


def _harmonic(k: int) -> float:
    return sum(1.0 / j for j in range(1, k + 1))


def _y0(x: float) -> float:
    series = sum((-1) ** (k + 1) * _harmonic(k) * (x * x / 4) ** k / math.factorial(k) ** 2
                 for k in range(1, 60))
    return 2 / math.pi * ((math.log(x / 2) + 0.5772156649015329) * _jn(0, x) + series)


def _y1(x: float) -> float:
    series = sum((-1) ** k * (_harmonic(k) + _harmonic(k + 1)) * (x / 2) ** (2 * k + 1)
                 / (math.factorial(k) * math.factorial(k + 1)) for k in range(60))
    log_term = 2 / math.pi * (math.log(x / 2) + 0.5772156649015329) * _jn(1, x)
    return log_term - 2 / (math.pi * x) - series / math.pi


def _yn(n: int, x: float) -> float:
    previous, current = _y0(x), _y1(x)
    for k in range(1, n):  # Y_{k+1} = 2k/x Y_k - Y_{k-1}, stable upward
        previous, current = current, 2 * k / x * current - previous
    return previous if n == 0 else current


SPECIAL = {
    "j0": lambda x: _jn(0, x), "j1": lambda x: _jn(1, x), "y0": _y0, "y1": _y1,
    "cyl_bessel_i0": lambda x: _in(0, x), "cyl_bessel_i1": lambda x: _in(1, x),
    "erfcx": lambda x: math.exp(x * x) * math.erfc(x),
    "normcdf": lambda x: 0.5 * math.erfc(-x / math.sqrt(2)),
    "sinpi": lambda x: math.sin(math.pi * x), "rcbrt": lambda x: 1 / math.copysign(abs(x) ** (1 / 3), x),
}


@pytest.mark.parametrize("name", list(SPECIAL))
@pytest.mark.parametrize("ftype, rtol", [(F32, 3e-6), (np.float64, 1e-10)], ids=["fp32", "fp64"])
def test_special_functions(rng, name, ftype, rtol):
    x = rng.uniform(0.2, 6.0, N).astype(ftype)
    got = call(getattr(libdevice, name), ftype, x)
    want = np.array([SPECIAL[name](float(v)) for v in x])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-2)


def test_integer_order_bessel_and_inverses(rng):
    x = rng.uniform(0.5, 8.0, N)
    n = rng.integers(0, 5, N).astype(np.int32)
    np.testing.assert_allclose(call(libdevice.jn, np.float64, n, x),
                               [_jn(int(k), v) for k, v in zip(n, x)], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(call(libdevice.yn, np.float64, n, x),
                               [_yn(int(k), v) for k, v in zip(n, x)], rtol=1e-8, atol=1e-12)
    p = rng.uniform(0.01, 0.99, N)
    quantiles = call(libdevice.normcdfinv, np.float64, p)
    np.testing.assert_allclose([0.5 * math.erfc(-q / math.sqrt(2)) for q in quantiles], p, rtol=1e-12)
    y = rng.uniform(1e-12, 1.99, N)
    np.testing.assert_allclose([math.erfc(v) for v in call(libdevice.erfcinv, np.float64, y)], y, rtol=1e-10)


def test_exponent_functions(rng):
    x = (rng.standard_normal(N) * 1e4).astype(F32)
    assert list(call(libdevice.ilogb, np.int32, x)) == [math.frexp(float(v))[1] - 1 for v in x]
    k = rng.integers(-20, 20, N).astype(np.int32)
    want = [F32(math.ldexp(float(v), int(e))) for v, e in zip(x, k)]
    assert list(call(libdevice.ldexp, F32, x, k)) == want
    halves = np.array([0.5, 1.5, 2.5, -0.5, -2.5] + [3.25] * (N - 5), F32)
    assert list(call(libdevice.llrint, np.int64, halves)) == [round(float(v)) for v in halves]
    assert list(call(libdevice.llround, np.int64, halves)) == \
        [int(math.copysign(math.floor(abs(float(v)) + 0.5), float(v))) for v in halves]


def test_overload_choice_and_refusal(rng):
    x16 = rng.standard_normal(N).astype(np.float16)
    got = call(libdevice.sinpi, np.float16, x16)  # fp16 is computed in fp32, rounded back
    want = [math.sin(math.pi * float(v)) for v in x16]
    np.testing.assert_allclose(got.astype(np.float64), want, atol=2e-3)
    with pytest.raises(CompilationError, match="libdevice.clz has no version for arguments of type"):
        call(libdevice.clz, np.int32, rng.standard_normal(N).astype(F32))
