"""Correctness of a kernel's output against a reference: max abs/rel error, a dtype tolerance, a hint.

Both arrays are compared in float64 on the host. The hint recognises errors of the size that tf32 or
fp16 rounding leaves (only where the kernel has an fp32 tl.dot or fp16 values), and the fp32
rounding that Python float literals bring into a float64 kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (rtol, atol) by output dtype; sums of many terms need the looser end, so these are not bit-tight.
TOLERANCES = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float8_e4m3fn": (1.25e-1, 1e-1),
    "float8_e5m2": (2.5e-1, 1e-1),
}
UNIT_ROUNDOFF = {"tf32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}


@dataclass
class CheckResult:
    """The outcome of comparing `out` with `ref`."""

    passed: bool
    max_abs: float
    max_rel: float
    rtol: float
    atol: float
    dtype: str
    shape: tuple[int, ...]
    n_bad: int = 0
    n_nan: int = 0
    hint: str | None = None
    error: str | None = None  # when the two could not be compared at all

    def summary(self) -> str:
        if self.error:
            return f"check failed: {self.error}"
        verdict = "PASS" if self.passed else "FAIL"
        text = (
            f"{verdict}: max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g} "
            f"({self.dtype}, rtol {self.rtol:g}, atol {self.atol:g})"
        )
        if self.n_bad:
            text += f"; {self.n_bad} of {int(np.prod(self.shape))} elements out of tolerance"
        return text


def to_host(array: object) -> np.ndarray:
    """A NumPy copy of a NumPy/CuPy/torch array (or anything array-like)."""
    if hasattr(array, "get") and hasattr(array, "__cuda_array_interface__"):
        return array.get()
    if hasattr(array, "detach") and hasattr(array, "cpu"):
        return array.detach().cpu().numpy()
    return np.asarray(array)


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        return 0.0, 0.0
    return TOLERANCES.get(np.dtype(dtype).name, TOLERANCES["float32"])


def compare(
    out: object,
    ref: object,
    rtol: float | None = None,
    atol: float | None = None,
    dot_dtype: str | None = None,
    kernel_types: frozenset[str] = frozenset(),
) -> CheckResult:
    """Compare the kernel's `out` with `ref` (any array-likes); tolerances default by out's dtype.

    `dot_dtype` (the kernel's tt.dot input type: "tf32", "f16", ..., None without a dot) and
    `kernel_types` (element types in its IR: "f16", "bf16", ...) decide which hints are earned.
    """
    out_h, ref_h = to_host(out), to_host(ref)
    dtype = out_h.dtype
    default_rtol, default_atol = tolerance(dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if out_h.shape != np.shape(ref_h) and np.size(ref_h) != out_h.size:
        return CheckResult(
            False,
            float("nan"),
            float("nan"),
            rtol,
            atol,
            dtype.name,
            out_h.shape,
            error=f"shapes differ: output {out_h.shape}, reference {np.shape(ref_h)}",
        )
    o = out_h.astype(np.float64).reshape(out_h.shape)
    r = np.asarray(ref_h, dtype=np.float64).reshape(out_h.shape)
    diff = np.abs(o - r)
    n_nan = int(np.count_nonzero(np.isnan(o) & ~np.isnan(r)))
    finite = np.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else float("nan")
    rel = diff / np.maximum(np.abs(r), np.finfo(np.float64).tiny)
    max_rel = float(rel[finite].max()) if finite.any() else float("nan")
    bad = ~np.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True)
    result = CheckResult(
        not bad.any(),
        max_abs,
        max_rel,
        rtol,
        atol,
        dtype.name,
        out_h.shape,
        n_bad=int(bad.sum()),
        n_nan=n_nan,
    )
    result.hint = _hint(result, r, dot_dtype, kernel_types)
    return result


def _hint(
    result: CheckResult, ref: np.ndarray, dot_dtype: str | None, kernel_types: frozenset[str]
) -> str | None:
    """A hint only where the kernel can cause what it names: tf32 needs an fp32 tl.dot, an fp16/bf16
    rounding needs such values in the kernel."""
    if result.passed:
        return None
    if result.n_nan:
        return (
            f"{result.n_nan} NaNs where the reference has numbers: elements never written "
            "(a mask or grid that misses them?) or a division by zero"
        )
    scale = float(np.abs(ref).max()) or 1.0
    norm_err = result.max_abs / scale
    if result.dtype == "float64" and norm_err < 64 * 2.0**-24:
        return (
            "the error has the size of fp32 rounding: a Python float literal in a kernel is an "
            "fp32 constant (Triton's rule), so `x * 0.1` multiplies by 0.1 rounded to fp32; pass the "
            "constant as a float64 argument (np.float64(0.1)) or build it with "
            "tl.full((), 0.1, tl.float64)"
        )
    if result.dtype != "float32":
        return None
    if dot_dtype == "tf32" and norm_err < 64 * UNIT_ROUNDOFF["tf32"]:
        return (
            "the error has the size of tf32 rounding (about 1e-3 relative): tl.dot on fp32 inputs "
            "uses tf32 tensor cores unless you pass input_precision='ieee'; compare with a looser "
            "rtol or use 'ieee'"
        )
    for name, kind in (("fp16", "f16"), ("bf16", "bf16")):
        if kind in kernel_types and norm_err < 64 * UNIT_ROUNDOFF[name]:
            return (
                f"the error has the size of {name} rounding: the kernel holds {name} values, and "
                f"an {name} intermediate rounds to {UNIT_ROUNDOFF[name]:.1g} relative"
            )
    return None
