"""Helpers for the frontend tests: poisoned outputs, dtype tolerances, relative-error comparison."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tileworkbench as tw

BF16 = np.dtype(ml_dtypes.bfloat16)
# Relative tolerance per dtype: a few ulps of the storage type (libm vs NumPy differ by an ulp or two).
RTOL = {np.dtype(np.float16): 2e-3, BF16: 1.6e-2, np.dtype(np.float32): 2e-6,
        np.dtype(np.float64): 1e-13}


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer full of NaN (floats) or a sentinel (integers), so unwritten lanes show up."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":  # V: ml_dtypes' bf16 and fp8
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype)  # tests that store bools expect some False lanes
    return np.full(shape, np.iinfo(dtype).max - 3, dtype)


def randn(rng, shape, dtype=np.float32, scale=1.0) -> np.ndarray:
    """Standard normal values (never all zeros) stored in `dtype`."""
    return (rng.standard_normal(shape) * scale).astype(dtype)


def randint(rng, shape, dtype, low=None, high=None) -> np.ndarray:
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int64 if low < 0 else np.uint64) \
        .astype(dtype)


def assert_close(got, want, rtol=None, atol=0.0, dtype=None) -> None:
    """|got - want| <= atol + rtol * |want| element by element, NaNs only where `want` has them."""
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    if rtol is None:
        rtol = RTOL[np.dtype(dtype)]
    assert got.shape == want.shape, (got.shape, want.shape)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    assert np.array_equal(nan_got, nan_want), f"NaN mismatch at {np.argwhere(nan_got != nan_want)[:5]}"
    ok = ~nan_want
    err = np.abs(got[ok] - want[ok])
    limit = atol + rtol * np.abs(want[ok])
    bad = err > limit
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements differ; worst relative error "
                           f"{np.max(err / np.maximum(np.abs(want[ok]), 1e-300)):.3g} (rtol {rtol})")


def compile_tile(kernel, signature, constexprs=None) -> str:
    """The `tile` stage text of `kernel` for the interpreter."""
    return tw.compile(kernel, signature=signature, constexprs=constexprs or {}, target="interpreter") \
        .asm["tile"]
