"""Math builtins and tl.extra.libdevice against NumPy float64 references, in fp32, fp16, bf16 and fp64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fe_util import BF16, RTOL, assert_close, poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.language.extra import libdevice

N = 128


@tw.jit
def math1_kernel(x_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs)))


@tw.jit
def math2_kernel(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@tw.jit
def math3_kernel(x_ptr, y_ptr, z_ptr, out_ptr, FN: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)))


def _erf(x):
    return np.vectorize(math.erf)(x)


# name -> (builtin, NumPy reference, input domain: "any" or "positive", extra relative tolerance)
UNARY = {
    "exp": (tl.exp, np.exp, "any"), "exp2": (tl.exp2, np.exp2, "any"), "log": (tl.log, np.log, "positive"),
    "log2": (tl.log2, np.log2, "positive"), "sqrt": (tl.sqrt, np.sqrt, "positive"),
    "sqrt_rn": (tl.sqrt_rn, np.sqrt, "positive"), "rsqrt": (tl.rsqrt, lambda x: 1 / np.sqrt(x), "positive"),
    "sin": (tl.sin, np.sin, "any"), "cos": (tl.cos, np.cos, "any"), "abs": (tl.abs, np.abs, "any"),
    "floor": (tl.floor, np.floor, "any"), "ceil": (tl.ceil, np.ceil, "any"), "erf": (tl.erf, _erf, "any"),
    "sigmoid": (tl.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "any"),
}
DTYPES = [np.float32, np.float16, BF16, np.float64]


def _inputs(rng, domain, dtype, n=N):
    x = np.clip(randn(rng, n, np.float64, 3), -10, 10)  # exp(x) stays finite in fp16
    if domain == "positive":
        x = np.abs(x) + 0.05
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math(rng, name, dtype):
    fn, ref, domain = UNARY[name]
    x = _inputs(rng, domain, dtype)
    out = poisoned(N, dtype)
    math1_kernel[(1,)](x, out, FN=fn, N=N)
    want = ref(x.astype(np.float64))
    # the result is rounded to `dtype`; transcendental functions may be a few ulps off (fp32 and up).
    # On a GPU, log/log2/sin/cos take Triton's fast path (lg2/sin/cos.approx), whose error is bounded in
    # absolute terms: near log's zero at 1 a relative bound fails (seen: 3.5e-4 relative at 8e-6 rtol).
    rtol = RTOL[np.dtype(dtype)] * (1 if np.dtype(dtype).itemsize == 2 else 4)
    assert_close(out, want, rtol=rtol, atol=rtol if name in ("sin", "cos", "erf", "log", "log2") else 0)


def test_abs_of_integers(rng):
    x = randint(rng, N, np.int32, -1000, 1000)
    out = poisoned(N, np.int32)
    math1_kernel[(1,)](x, out, FN=tl.abs, N=N)
    np.testing.assert_array_equal(out, np.abs(x))


@tw.jit
def tensor_methods_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.exp().log() + x.abs().sqrt() * x.sigmoid() - x.floor() + x.ceil())


def test_tensor_math_methods(rng):
    x = _inputs(rng, "positive", np.float32)
    out = poisoned(N, np.float32)
    tensor_methods_kernel[(1,)](x, out, N=N)
    x64 = x.astype(np.float64)
    want = x64 + np.sqrt(x64) / (1 + np.exp(-x64)) - np.floor(x64) + np.ceil(x64)
    assert_close(out, want, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=lambda d: np.dtype(d).name)
def test_fma(rng, dtype):
    x, y, z = (randn(rng, N, dtype) for _ in range(3))
    out = poisoned(N, dtype)
    math3_kernel[(1,)](x, y, z, out, FN=tl.fma, N=N)
    x64, y64, z64 = (v.astype(np.float64) for v in (x, y, z))
    assert_close(out, x64 * y64 + z64, rtol=RTOL[np.dtype(dtype)], atol=RTOL[np.dtype(dtype)])


@tw.jit
def minmax_kernel(x_ptr, y_ptr, mx_ptr, mn_ptr, mxn_ptr, mnn_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(mx_ptr + offs, tl.maximum(x, y))
    tl.store(mn_ptr + offs, tl.minimum(x, y))
    tl.store(mxn_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(mnn_ptr + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))


def test_maximum_minimum_and_nan_propagation(rng):
    x, y = randn(rng, N), randn(rng, N)
    x[:4] = np.nan
    outs = [poisoned(N, np.float32) for _ in range(4)]
    minmax_kernel[(1,)](x, y, *outs, N=N)
    assert_close(outs[0], np.fmax(x, y), dtype=np.float32)  # NaN ignored by default (maxnum)
    assert_close(outs[1], np.fmin(x, y), dtype=np.float32)
    assert_close(outs[2], np.maximum(x, y), dtype=np.float32)  # propagate_nan=ALL: NaN wins
    assert_close(outs[3], np.minimum(x, y), dtype=np.float32)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_integer_maximum_minimum(rng, dtype):
    x, y = randint(rng, N, dtype), randint(rng, N, dtype)
    mx, mn = poisoned(N, dtype), poisoned(N, dtype)
    math2_kernel[(1,)](x, y, mx, FN=tl.maximum, N=N)
    math2_kernel[(1,)](x, y, mn, FN=tl.minimum, N=N)
    np.testing.assert_array_equal(mx, np.maximum(x, y))
    np.testing.assert_array_equal(mn, np.minimum(x, y))


@tw.jit
def clamp_kernel(x_ptr, out_ptr, outn_ptr, LO: tl.constexpr, HI: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.clamp(x, LO, HI))
    tl.store(outn_ptr + offs, tl.clamp(x, LO, HI, propagate_nan=tl.PropagateNan.ALL))


def test_clamp(rng):
    x = randn(rng, N, np.float32, 2)
    x[:2] = np.nan
    out, outn = poisoned(N, np.float32), poisoned(N, np.float32)
    clamp_kernel[(1,)](x, out, outn, LO=-0.5, HI=1.25, N=N)
    assert_close(outn, np.clip(x, -0.5, 1.25), dtype=np.float32)
    assert_close(out[2:], np.clip(x[2:], -0.5, 1.25), dtype=np.float32)
    assert not np.isnan(out[2:]).any()


def test_integer_clamp(rng):
    x = randint(rng, N, np.int32, -50, 50)
    out = poisoned(N, np.int32)
    clamp_kernel[(1,)](x, out, poisoned(N, np.int32), LO=-10, HI=20, N=N)
    np.testing.assert_array_equal(out, np.clip(x, -10, 20))


@pytest.mark.parametrize("fn", [tl.fdiv, tl.div_rn, libdevice.div_rn], ids=["fdiv", "div_rn", "libdevice"])
def test_divisions(rng, fn):
    x, y = randn(rng, N), randn(rng, N)
    y[np.abs(y) < 0.1] = 0.7
    out = poisoned(N, np.float32)
    math2_kernel[(1,)](x, y, out, FN=fn, N=N)
    assert_close(out, x.astype(np.float64) / y, rtol=2e-6)


@tw.jit
def cdiv_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.cdiv(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


def test_cdiv(rng):
    x = randint(rng, N, np.int32, 0, 10_000)
    y = randint(rng, N, np.int32, 1, 100)
    out = poisoned(N, np.int32)
    cdiv_kernel[(1,)](x, y, out, N=N)
    np.testing.assert_array_equal(out, -(-x // y))


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
def test_umulhi(rng, dtype):
    x, y = randint(rng, N, dtype), randint(rng, N, dtype)
    out = poisoned(N, dtype)
    math2_kernel[(1,)](x, y, out, FN=tl.umulhi, N=N)
    # Triton's tl.umulhi: the high 32 bits of the unsigned product of the bit patterns (int32 too)
    xu, yu = x.view(np.uint32), y.view(np.uint32)
    want = np.array([(int(a) * int(b)) >> 32 for a, b in zip(xu, yu)], dtype=np.uint32).view(dtype)
    np.testing.assert_array_equal(out, want)


@tw.jit
def softmax_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.softmax(x, 1))
    tl.store(out_ptr + M * N + offs, tl.softmax(x))  # dim=None: dimension 0, as Triton
    tl.store(out_ptr + 2 * M * N + offs, x.softmax(dim=1, keep_dims=True))


def test_softmax(rng):
    x = randn(rng, (4, 32), np.float32, 3)
    out = poisoned((3, 4, 32), np.float32)
    softmax_kernel[(1,)](x, out, M=4, N=32)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert_close(out[0], e / e.sum(1, keepdims=True), rtol=1e-5)
    assert_close(out[2], e / e.sum(1, keepdims=True), rtol=1e-5)
    e0 = np.exp(x.astype(np.float64) - x.max(0, keepdims=True))
    assert_close(out[1], e0 / e0.sum(0, keepdims=True), rtol=1e-5)


LIBDEVICE_UNARY = {
    "tanh": (np.tanh, "any"), "expm1": (np.expm1, "small"), "log1p": (np.log1p, "positive"),
    "sinh": (np.sinh, "any"), "cosh": (np.cosh, "any"), "tan": (np.tan, "small"),
    "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"), "atan": (np.arctan, "any"),
    "asinh": (np.arcsinh, "any"), "atanh": (np.arctanh, "unit"), "exp10": (lambda x: 10.0 ** x, "small"),
    "log10": (np.log10, "positive"), "cbrt": (np.cbrt, "any"), "erfc": (np.vectorize(math.erfc), "any"),
    "lgamma": (np.vectorize(math.lgamma), "positive"), "trunc": (np.trunc, "any"),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "any"), "rint": (np.rint, "any"),
    "fabs": (np.abs, "any"), "acosh": (np.arccosh, "above1"), "tgamma": (np.vectorize(math.gamma), "positive"),
    "nearbyint": (np.rint, "any"), "fast_expf": (np.exp, "small"), "fast_logf": (np.log, "positive"),
}


def _domain(rng, kind, dtype):
    x = randn(rng, N, np.float64, 2)
    if kind == "positive":
        x = np.abs(x) + 0.1
    elif kind == "unit":
        x = np.tanh(x) * 0.95
    elif kind == "small":
        x = np.tanh(x)
    elif kind == "above1":
        x = np.abs(x) + 1.05
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(LIBDEVICE_UNARY))
def test_libdevice_unary(rng, name, dtype):
    ref, kind = LIBDEVICE_UNARY[name]
    if name.startswith("fast_") and dtype == np.float64:
        pytest.skip("the fast_ functions are fp32 only")
    x = _domain(rng, kind, dtype)
    out = poisoned(N, dtype)
    math1_kernel[(1,)](x, out, FN=getattr(libdevice, name), N=N)
    rtol = 8 * RTOL[np.dtype(dtype)]
    assert_close(out, ref(x.astype(np.float64)), rtol=rtol, atol=rtol)


def test_libdevice_fp16_computes_in_fp32(rng):
    x = _domain(rng, "any", np.float16)
    out = poisoned(N, np.float16)
    math1_kernel[(1,)](x, out, FN=libdevice.tanh, N=N)
    assert_close(out, np.tanh(x.astype(np.float64)), rtol=2e-3, atol=1e-3)


LIBDEVICE_BINARY = {"pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "hypot": np.hypot,
                    "fmin": np.fmin, "fmax": np.fmax, "copysign": np.copysign, "fast_powf": np.power,
                    "fdim": lambda x, y: np.maximum(x - y, 0), "remainder": np.vectorize(math.remainder)}


@pytest.mark.parametrize("name", list(LIBDEVICE_BINARY))
def test_libdevice_binary(rng, name):
    x = np.abs(randn(rng, N, np.float32, 2)) + 0.1
    y = randn(rng, N, np.float32, 2)
    out = poisoned(N, np.float32)
    math2_kernel[(1,)](x, y, out, FN=getattr(libdevice, name), N=N)
    assert_close(out, LIBDEVICE_BINARY[name](x.astype(np.float64), y.astype(np.float64)), rtol=1e-5,
                 atol=1e-6)


@pytest.mark.parametrize("name,ref,dtype", [
    ("isnan", np.isnan, np.float32), ("isinf", np.isinf, np.float32), ("signbit", np.signbit, np.float32),
    ("finitef", np.isfinite, np.float32), ("isfinited", np.isfinite, np.float64), ("isnan", np.isnan, np.float64),
])
def test_libdevice_predicates(rng, name, ref, dtype):
    x = randn(rng, N, dtype)
    x[:3], x[3:6] = np.nan, np.inf
    x[6] = -np.inf
    out = poisoned(N, np.bool_)
    math1_kernel[(1,)](x, out, FN=getattr(libdevice, name), N=N)
    np.testing.assert_array_equal(out, ref(x))


def test_libdevice_fma(rng):
    x, y, z = (randn(rng, N) for _ in range(3))
    out = poisoned(N, np.float32)
    math3_kernel[(1,)](x, y, z, out, FN=libdevice.fma, N=N)
    assert_close(out, x.astype(np.float64) * y + z, rtol=1e-6, atol=1e-6)


def test_libdevice_erfinv_and_nextafter(rng):
    x = np.tanh(randn(rng, N, np.float64)).astype(np.float32) * 0.9
    out = poisoned(N, np.float32)
    math1_kernel[(1,)](x, out, FN=libdevice.erfinv, N=N)
    assert_close(np.vectorize(math.erf)(out.astype(np.float64)), x, rtol=1e-5, atol=1e-6)
    y = randn(rng, N)
    math2_kernel[(1,)](x, y, out, FN=libdevice.nextafter, N=N)
    np.testing.assert_array_equal(out, np.nextafter(x, y))


@tw.jit
def extern_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.extern_elementwise("libdevice", "", [x], {(tl.float32,): ("__nv_tanhf", tl.float32)}, is_pure=True)
    tl.store(out_ptr + offs, y)


def test_extern_elementwise(rng):
    x = randn(rng, N)
    out = poisoned(N, np.float32)
    extern_kernel[(1,)](x, out, N=N)
    assert_close(out, np.tanh(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
