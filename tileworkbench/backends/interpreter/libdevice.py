"""CUDA libdevice functions (`tt.extern_elementwise` symbols such as `__nv_tanhf`) as NumPy functions.

Symbols are looked up without the `__nv_` prefix; the f32 variant ends in `f` (`__nv_powf`) and the f64
one has no suffix (`__nv_pow`), except the predicates (`__nv_isnand`). Float functions run in float64 and
are rounded to the result type once, which is at least as accurate as libdevice's f32 versions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

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


def _popcount(x):
    x = np.asarray(x).astype(np.uint64)
    return np.bitwise_count(x).astype(np.int32)


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
}


def lookup(symbol: str) -> tuple[Callable, str] | None:
    """The NumPy function for a libdevice symbol and its family ("float", "native", "predicate",
    "int")."""
    name = symbol.removeprefix("__nv_").removeprefix("fast_")
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
