"""CUDA libdevice functions (`tt.extern_elementwise` symbols such as `__nv_tanhf`) as NumPy functions.

Symbols are looked up without the `__nv_` prefix; the f32 variant ends in `f` (`__nv_powf`) and the f64
one has no suffix (`__nv_pow`), except the predicates (`__nv_isnand`). Float functions run in float64 and
are rounded to the result type once, which is at least as accurate as libdevice's f32 versions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import special_more
from .rounding import EXACT_FUNCTIONS
from .special import erf, erfc, erfinv


def _vectorized(fn: Callable) -> Callable:
    """A scalar `math` function applied element by element (only for rarely used functions)."""
    vector = np.vectorize(fn, otypes=[np.float64])
    return lambda x: vector(np.asarray(x, np.float64))


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _ieee_remainder(x, y):
    return np.vectorize(math.remainder, otypes=[np.float64])(x, y)


def _mulhi(bits: int, unsigned: bool) -> Callable:
    def mulhi(a, b):
        wide = np.uint64 if unsigned else np.int64
        product = np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
        return product >> bits

    return mulhi


def _count_leading_zeros(bits: int) -> Callable:
    def clz(x):
        x = np.asarray(x).astype(np.uint64) & np.uint64((1 << bits) - 1)
        count = np.full(x.shape, bits, np.int32)
        for shift in range(bits):
            count = np.where((x >> np.uint64(shift)) != 0, bits - 1 - shift, count)
        return count

    return clz


def _find_first_set(bits: int) -> Callable:
    def ffs(x):
        x = np.asarray(x).astype(np.uint64) & np.uint64((1 << bits) - 1)
        position = np.zeros(x.shape, np.int32)
        for shift in range(bits - 1, -1, -1):
            position = np.where((x >> np.uint64(shift)) & np.uint64(1) != 0, shift + 1, position)
        return position

    return ffs


def _mulhi64(unsigned: bool) -> Callable:
    """The high 64 bits of a 64 x 64-bit product, through Python integers."""

    def mulhi(a, b):
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        flat = [(int(x) * int(y)) >> 64 for x, y in zip(a.reshape(-1), b.reshape(-1))]
        dtype = np.uint64 if unsigned else np.int64
        return np.array(flat, dtype=object).reshape(a.shape).astype(dtype)

    return mulhi


def _mul24(unsigned: bool) -> Callable:
    """The low 32 bits of the product of the low 24 bits of each argument (signed: sign-extended)."""

    def mul24(a, b):
        def low24(x):
            x = np.asarray(x).astype(np.int64) & 0xFFFFFF
            return x if unsigned else np.where(x >= 1 << 23, x - (1 << 24), x)

        return (low24(a) * low24(b)).astype(np.uint32 if unsigned else np.int32)

    return mul24


def _halving_add(rounding: int) -> Callable:
    """(x + y + rounding) >> 1 without overflow (`hadd`, `rhadd` and their unsigned forms)."""
    return lambda x, y: (
        (np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64) + rounding) >> 1
    )


def _byte_perm(x, y, selector):
    """CUDA's __byte_perm: byte i of the result is byte (selector >> 4i) & 7 of the 8 bytes y:x."""
    x, y, selector = (np.asarray(v).astype(np.int64) & 0xFFFFFFFF for v in (x, y, selector))
    source = (y << 32) | x
    out = np.zeros(np.broadcast(x, y, selector).shape, np.int64)
    for i in range(4):
        index = (selector >> (4 * i)) & 7
        out = out | (((source >> (8 * index)) & 0xFF) << (8 * i))
    return out.astype(np.uint32).view(np.int32)


def _ilogb(x):
    """The unbiased exponent as an integer: INT_MIN for 0 and NaN, INT_MAX for infinities (CUDA's)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        exponent = np.frexp(x)[1].astype(np.float64) - 1
    exponent = np.where(x == 0, -(2.0**31), exponent)
    exponent = np.where(np.isnan(x), -(2.0**31), exponent)
    return np.where(np.isinf(x), 2.0**31 - 1, exponent)


def _rcp64h(x):
    """1/x of the high word of x (low 32 bits cleared), with the low word of the result cleared: the
    approximate reciprocal of the GPU's `rcp.approx.ftz.f64`."""
    high = (np.asarray(x, np.float64).view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(
        np.float64
    )
    with np.errstate(divide="ignore"):
        inverse = 1.0 / high
    return (inverse.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)


def _norm(*values):
    total = np.abs(np.asarray(values[0], np.float64))
    for v in values[1:]:
        total = np.hypot(total, v)
    return total


def _popcount(x):
    x = np.asarray(x)
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(np.int32)  # its own width


def _bit_reverse(bits: int) -> Callable:
    def brev(x):
        x = np.asarray(x).astype(np.uint64)
        out = np.zeros(x.shape, np.uint64)
        for shift in range(bits):
            bit = (x >> np.uint64(shift)) & np.uint64(1)
            out = out | (bit << np.uint64(bits - 1 - shift))
        return out

    return brev


# Float functions: the name without prefix and precision suffix.
FLOAT_FUNCTIONS: dict[str, Callable] = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "logb": lambda x: np.floor(np.log2(np.abs(x))),
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": _round_half_away,
    "rint": np.rint,
    "nearbyint": np.rint,
    "erf": erf,
    "erfc": erfc,
    "erfinv": erfinv,
    "lgamma": _vectorized(math.lgamma),
    "tgamma": _vectorized(math.gamma),
    "sinpi": lambda x: np.sin(np.pi * x),
    "cospi": lambda x: np.cos(np.pi * x),
    "saturate": lambda x: np.clip(x, 0.0, 1.0),
    "pow": np.power,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    "remainder": _ieee_remainder,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "fdim": lambda x, y: np.where(x > y, x - y, 0.0),
    "fma": lambda a, b, c: a * b + c,
    "ldexp": lambda x, n: np.ldexp(x, np.asarray(n, np.int32)),
    "scalbn": lambda x, n: np.ldexp(x, np.asarray(n, np.int32)),
    "powi": lambda x, n: np.power(x, np.asarray(n, np.float64)),
    "div_rn": np.divide,
    "ddiv_rn": np.divide,
    "fdiv_rn": np.divide,
    "frcp_rn": lambda x: 1.0 / x,
    "fsqrt_rn": np.sqrt,
    "dsqrt_rn": np.sqrt,
    "drcp_rn": lambda x: 1.0 / x,
    "fast_fdividef": np.divide,
    "rcp64h": _rcp64h,
    "erfcx": special_more.erfcx,
    "erfcinv": special_more.erfcinv,
    "normcdf": special_more.normcdf,
    "normcdfinv": special_more.normcdfinv,
    "j0": special_more.j0,
    "j1": special_more.j1,
    "y0": special_more.y0,
    "y1": special_more.y1,
    "jn": special_more.jn,
    "yn": special_more.yn,
    "cyl_bessel_i0": special_more.i0,
    "cyl_bessel_i1": special_more.i1,
    "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "norm3d": _norm,
    "norm4d": _norm,
    "rnorm3d": lambda *v: 1.0 / _norm(*v),
    "rnorm4d": lambda *v: 1.0 / _norm(*v),
    # float in, integer out (the result is converted to the result type)
    "llrint": np.rint,
    "llround": _round_half_away,
    "ilogb": _ilogb,
}

# Float functions whose result depends on the precision: computed in the argument type itself.
NATIVE_FUNCTIONS: dict[str, Callable] = {"nextafter": np.nextafter}

# Float predicates (int results): f32 ends in `f`, f64 in `d`.
PREDICATES: dict[str, Callable] = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "finite": np.isfinite,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
}

INT_FUNCTIONS: dict[str, Callable] = {
    "popc": _popcount,
    "popcll": _popcount,
    "clz": _count_leading_zeros(32),
    "clzll": _count_leading_zeros(64),
    "ffs": _find_first_set(32),
    "ffsll": _find_first_set(64),
    "brev": _bit_reverse(32),
    "brevll": _bit_reverse(64),
    "abs": np.abs,
    "llabs": np.abs,
    "min": np.minimum,
    "max": np.maximum,
    "llmin": np.minimum,
    "llmax": np.maximum,
    "umin": np.minimum,
    "umax": np.maximum,
    "ullmin": np.minimum,
    "ullmax": np.maximum,
    "mulhi": _mulhi(32, False),
    "umulhi": _mulhi(32, True),
    "sad": lambda x, y, z: np.abs(np.asarray(x, np.int64) - y) + z,
    "usad": lambda x, y, z: np.abs(np.asarray(x, np.int64) - y) + z,
    "mul64hi": _mulhi64(False),
    "umul64hi": _mulhi64(True),
    "mul24": _mul24(False),
    "umul24": _mul24(True),
    "hadd": _halving_add(0),
    "rhadd": _halving_add(1),
    "uhadd": _halving_add(0),
    "urhadd": _halving_add(1),
    "byte_perm": _byte_perm,
}


def lookup(symbol: str) -> tuple[Callable, str] | None:
    """The NumPy function for a libdevice symbol and its family ("exact", "float", "native",
    "predicate", "int")."""
    name = symbol.removeprefix("__nv_")
    if name in EXACT_FUNCTIONS:
        return EXACT_FUNCTIONS[name], "exact"
    if name in FLOAT_FUNCTIONS:  # before the f-suffix rule (fast_fdividef)
        return FLOAT_FUNCTIONS[name], "float"
    name = name.removeprefix("fast_")
    if name in INT_FUNCTIONS:
        return INT_FUNCTIONS[name], "int"
    for table, family in ((FLOAT_FUNCTIONS, "float"), (NATIVE_FUNCTIONS, "native")):
        if name in table:
            return table[name], family
        if name.endswith("f") and name[:-1] in table:
            return table[name[:-1]], family
    if name[-1:] in ("f", "d") and name[:-1] in PREDICATES:
        return PREDICATES[name[:-1]], "predicate"
    return None
