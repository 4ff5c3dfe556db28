"""The oracle of the differential fuzzer: every value a generated kernel computes, evaluated alongside
in NumPy. Integers are exact (NumPy in the kernel's own type, with C's `//` and `%`); floats are the
float64 value of the operation *without* rounding plus an error bound that grows with each op as
forward error analysis says (`u` per rounding, the inputs' bounds times the op's derivative). A target
passes where it lies within the bound of the float64 value. Elements whose result the language leaves
undefined (float -> int out of range, min/max of NaN) or whose bound is useless (an intermediate that
overflows the type) are marked unchecked, and stay so in every value computed from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str  # the tl attribute: tl.int8, tl.float16, ...
    sig: str  # the signature kind: "i8", "fp16", ...
    numpy: np.dtype
    u: float = 0.0  # unit roundoff (floats)
    tiny: float = 0.0  # absolute slack: a few of the smallest normals (subnormal flushing)

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f" or self.name in ("bfloat16", "float8e4nv", "float8e5")

    @property
    def bits(self) -> int:
        return self.numpy.itemsize * 8

    @property
    def max(self) -> float:
        return float(ml_dtypes.finfo(self.numpy).max) if self.is_float else int(np.iinfo(self.numpy).max)

    @property
    def min(self) -> float:
        return -self.max if self.is_float else int(np.iinfo(self.numpy).min)

    @property
    def signed(self) -> bool:
        return self.is_float or self.numpy.kind == "i"


def _float(name, sig, np_type, mantissa_bits):
    info = ml_dtypes.finfo(np_type)
    return DType(name, sig, np.dtype(np_type), 2.0 ** -(mantissa_bits + 1), 4 * float(info.tiny))


DTYPES = {d.name: d for d in [
    *(DType(f"int{b}", f"i{b}", np.dtype(f"int{b}")) for b in (8, 16, 32, 64)),
    *(DType(f"uint{b}", f"u{b}", np.dtype(f"uint{b}")) for b in (8, 16, 32, 64)),
    _float("float16", "fp16", np.float16, 10),
    _float("bfloat16", "bf16", ml_dtypes.bfloat16, 7),
    _float("float32", "fp32", np.float32, 23),
    _float("float64", "fp64", np.float64, 52),
    _float("float8e4nv", "fp8e4nv", ml_dtypes.float8_e4m3fn, 3),
    _float("float8e5", "fp8e5", ml_dtypes.float8_e5m2, 2),
]}
F32 = DTYPES["float32"]


@dataclass
class Value:
    """One tile of the kernel, as source and as reference."""

    expr: str
    dtype: DType
    ref: np.ndarray  # float64 for floats, the kernel's integer type for integers
    err: np.ndarray  # float64 bound on |computed - ref| (zero for integers)
    unchecked: np.ndarray  # bool

    def exact_float(self) -> bool:
        return self.dtype.is_float


def settle(dtype: DType, ref, err, unchecked) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Common bookkeeping after a float op: an exact special (inf, NaN) has no error; a finite value
    whose bound reaches past the type's range may overflow in the target, so it is not checked."""
    ref = np.asarray(ref, np.float64)
    special = ~np.isfinite(ref)
    err = np.where(special, 0.0, np.asarray(err, np.float64) + dtype.tiny)
    unchecked = unchecked | (~special & (~np.isfinite(err) | (np.abs(ref) + err > dtype.max)))
    return ref, np.where(np.isfinite(err), err, 0.0), unchecked


def round_exact(values: np.ndarray, dtype: DType) -> np.ndarray:
    """float64 values rounded to `dtype` (to nearest even) and back: the value a cast of exact data
    gives. fp8 saturates as the GPU's `cvt.rn.satfinite` (and the interpreter) do."""
    with np.errstate(all="ignore"):
        if dtype.name.startswith("float8"):  # infinities saturate too
            values = np.where(np.isnan(values), values, np.clip(values, -dtype.max, dtype.max))
            values = values.astype(np.float32)
        return values.astype(dtype.numpy).astype(np.float64)


def c_divmod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's truncating `//` and `%` on integer arrays of one type (b != 0, no MIN // -1)."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        r = a - q * b
        fix = (r != 0) & ((a < 0) != (b < 0)) if a.dtype.kind == "i" else np.zeros(a.shape, bool)
        q = np.where(fix, q + 1, q).astype(a.dtype)
        return q, (a - q * b).astype(a.dtype)
