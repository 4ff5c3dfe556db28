"""libdevice's explicitly rounded operations in the interpreter: `__nv_fadd_rz`, `__nv_dsqrt_ru`,
`__nv_float2int_rd`, `__nv_ull2float_rn`, ... and the bit reinterpretations (`__nv_float_as_int`).

Each result is the exact value rounded once in the requested direction (rn: nearest even, rz: toward
zero, rd: down, ru: up). The exact value is a `Fraction` (or, for square roots, known through an exact
comparison), so there is no double rounding; this runs per element and is meant for small tiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

_MODES = ("rn", "rz", "rd", "ru")
_FLOATS = {"f": np.float32, "d": np.float64}
_BOUNDS = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int32, np.uint32, np.int64, np.uint64)
}


def _sign(value) -> int:
    return (value > 0) - (value < 0)


def round_to(ftype, approx: float, compare: Callable[[Fraction], int], mode: str):
    """The `ftype` value the exact result rounds to. `approx` is a float within one `ftype` ulp of the
    exact result; `compare(f)` is the sign of f - exact for a rational f."""
    if not math.isfinite(approx) or abs(approx) > float(np.finfo(ftype).max):
        return _overflow(ftype, approx, mode)
    candidate = ftype(approx)
    side = compare(Fraction(float(candidate)))
    if side == 0:
        return candidate
    lo, hi = (
        (np.nextafter(candidate, ftype(-np.inf)), candidate)
        if side > 0
        else (candidate, np.nextafter(candidate, ftype(np.inf)))
    )
    while compare(Fraction(float(lo))) > 0:  # a guard: `approx` was off by more than an ulp
        lo, hi = np.nextafter(lo, ftype(-np.inf)), lo
    while compare(Fraction(float(hi))) < 0:
        lo, hi = hi, np.nextafter(hi, ftype(np.inf))
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if hi > 0 else hi
    middle = compare((Fraction(float(lo)) + Fraction(float(hi))) / 2)
    if middle != 0:
        return lo if middle > 0 else hi
    return lo if int(np.asarray(lo).view(_bits(ftype))) % 2 == 0 else hi  # a tie: the even one


def _bits(ftype):
    return np.uint32 if np.dtype(ftype).itemsize == 4 else np.uint64


def _overflow(ftype, approx: float, mode: str):
    if math.isnan(approx):
        return ftype(np.nan)
    largest = np.finfo(ftype).max
    positive = approx > 0
    if mode == "rn" or (mode == "ru" and positive) or (mode == "rd" and not positive):
        return ftype(approx)  # inf (or the nearest of a finite overshoot)
    return ftype(largest if positive else -largest)


def _nearest_double(exact: Fraction) -> float:
    """The double nearest to `exact` (Fraction -> float rounds correctly), or an infinity past it."""
    try:
        return float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)


def _rational(ftype, mode: str, approx: float, exact: Fraction):
    return round_to(ftype, approx, lambda f: _sign(f - exact), mode)


def _elementwise(fn: Callable, ftype) -> Callable:
    def apply(*args):
        arrays = np.broadcast_arrays(*(np.asarray(a) for a in args))
        out = np.empty(arrays[0].shape, ftype)
        for index in np.ndindex(out.shape):
            out[index] = fn(*(a[index] for a in arrays))
        return out

    return apply


def _finite(*values) -> bool:
    return all(math.isfinite(float(v)) for v in values)


def _arith(op: str, ftype, mode: str) -> Callable:
    """add/sub/mul/div/fma/rcp/sqrt/rsqrt of `ftype` values, rounded by `mode`."""

    def one(*args):
        values = [float(a) for a in args]
        with np.errstate(all="ignore"):
            approx = float(_NEAREST[op](*(np.float64(v) for v in values)))
        if (
            not _finite(*values)
            or (op in ("div", "rcp") and values[-1] == 0)
            or (op in ("sqrt", "rsqrt") and values[0] <= 0)
        ):
            with np.errstate(all="ignore"):
                return ftype(_NEAREST[op](*(ftype(v) for v in values)))
        if op == "sqrt":
            x = Fraction(values[0])
            return round_to(ftype, approx, lambda f: -1 if f < 0 else _sign(f * f - x), mode)
        if op == "rsqrt":
            x = Fraction(values[0])
            return round_to(ftype, approx, lambda f: -1 if f <= 0 else _sign(x * f * f - 1), mode)
        exact = _EXACT[op](*(Fraction(v) for v in values))
        return _rational(ftype, mode, _nearest_double(exact), exact)

    return _elementwise(one, ftype)


_NEAREST = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "fma": lambda a, b, c: a * b + c,
    "rcp": lambda a: 1 / a,
    "sqrt": np.sqrt,
    "rsqrt": lambda a: 1 / np.sqrt(a),
}
_EXACT = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "fma": lambda a, b, c: a * b + c,
    "rcp": lambda a: 1 / a,
}


def _to_float(ftype, mode: str) -> Callable:
    """An integer or float argument converted to `ftype` with one rounding."""

    def one(value):
        if isinstance(value, (np.floating, float)) and not math.isfinite(float(value)):
            return ftype(value)
        exact = (
            Fraction(int(value)) if isinstance(value, (np.integer, int)) else Fraction(float(value))
        )
        return _rational(ftype, mode, _nearest_double(exact), exact)

    return _elementwise(one, ftype)


def _to_int(result_dtype, mode: str) -> Callable:
    """A float rounded to an integer by `mode`, saturated to the result type (NaN gives 0), as cvt."""
    rounders = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}

    def convert(x):
        x = np.asarray(x, np.float64)
        low, high = _BOUNDS[np.dtype(result_dtype)]
        rounded = rounders[mode](np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf))
        flat = [low if r <= low else high if r >= high else int(r) for r in rounded.reshape(-1)]
        return np.array(flat, dtype=object).reshape(x.shape).astype(result_dtype)

    return convert


def _view(dtype) -> Callable:
    return lambda x: np.ascontiguousarray(np.asarray(x)).view(dtype)


def _hilo_to_double(hi, lo):
    hi, lo = np.broadcast_arrays(np.asarray(hi).astype(np.uint32), np.asarray(lo).astype(np.uint32))
    return ((hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)).view(np.float64)


def _double_word(high: bool) -> Callable:
    def word(x):
        bits = np.ascontiguousarray(np.asarray(x, np.float64)).view(np.uint64)
        part = bits >> np.uint64(32) if high else bits & np.uint64(0xFFFFFFFF)
        return part.astype(np.uint32).view(np.int32)

    return word


_INT_NAMES = {"int": np.int32, "uint": np.uint32, "ll": np.int64, "ull": np.uint64}
_FLOAT_NAMES = {"float": np.float32, "double": np.float64}


def _build() -> dict[str, Callable]:
    table: dict[str, Callable] = {}
    for prefix, ftype in _FLOATS.items():
        for mode in _MODES:
            for op in ("add", "sub", "mul", "div", "rcp", "sqrt"):
                table[f"{prefix}{op}_{mode}"] = _arith(op, ftype, mode)
        table[f"fma{'f' if prefix == 'f' else ''}_" + "rn"] = _arith("fma", ftype, "rn")
        for mode in _MODES[1:]:
            table[f"fma{'f' if prefix == 'f' else ''}_{mode}"] = _arith("fma", ftype, mode)
    table["frsqrt_rn"] = _arith("rsqrt", np.float32, "rn")
    for mode in _MODES:
        for source in ("float", "double", *_INT_NAMES):
            for target, ftype in _FLOAT_NAMES.items():
                if source != target:
                    table[f"{source}2{target}_{mode}"] = _to_float(ftype, mode)
        for source in _FLOAT_NAMES:
            for target, itype in _INT_NAMES.items():
                table[f"{source}2{target}_{mode}"] = _to_int(itype, mode)
    table.update(
        {
            "int_as_float": _view(np.float32),
            "uint_as_float": _view(np.float32),
            "float_as_int": _view(np.int32),
            "float_as_uint": _view(np.uint32),
            "longlong_as_double": _view(np.float64),
            "double_as_longlong": _view(np.int64),
            "hiloint2double": _hilo_to_double,
            "double2hiint": _double_word(True),
            "double2loint": _double_word(False),
        }
    )
    return table


# libdevice name (without `__nv_`) -> function of the raw arguments
EXACT_FUNCTIONS: dict[str, Callable] = _build()
