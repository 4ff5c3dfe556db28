"""Disagreements the differential fuzzer found, one named test each, guarding the fix."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from cpu_emulator import Emulator

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config

RNG = np.random.default_rng()
E4M3 = ml_dtypes.float8_e4m3fn


@tw.jit
def fp8_sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    rows = tl.arange(0, 4)[:, None]
    x = tl.load(x_ptr + rows * N + tl.arange(0, N)[None, :]).to(tl.float8e4nv)
    tl.store(out_ptr + tl.arange(0, 4), tl.sum(x, axis=1))


@tw.jit
def fp8_arith_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.load(x_ptr + offs).to(tl.float8e4nv)
    tl.store(out_ptr + offs, y + y * y)


def _fp8(values) -> np.ndarray:
    """float32 values rounded to e4m3, saturating as `cvt.rn.satfinite` does."""
    values = np.asarray(values, np.float32)
    return np.clip(values, -448, 448).astype(E4M3).astype(np.float32)


def _run(kernel, x: np.ndarray, out: np.ndarray, target: str, monkeypatch) -> np.ndarray:
    n = x.shape[-1]
    if target == "interpreter":
        monkeypatch.setattr(config, "interpret", True)
        kernel[(1,)](x, out, n)
    else:
        Emulator(kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"N": n}).launch((1,), x, out)
    return out


TARGETS = ["interpreter", "nvptx-emulated"]


@pytest.mark.parametrize("target", TARGETS)
def test_fp8_sum(target, monkeypatch):
    """tl.sum of an fp8 tile: the NVPTX lowering emitted `fadd i8` (invalid IR, an internal error)."""
    x = RNG.integers(-2, 3, (4, 8)).astype(np.float32)
    got = _run(fp8_sum_kernel, x, np.full(4, np.nan, np.float32), target, monkeypatch)
    assert np.array_equal(got, x.sum(axis=1))  # small integers: every partial sum is exact in e4m3


@pytest.mark.parametrize("target", TARGETS)
def test_fp8_arithmetic_rounds_once_per_op_and_saturates(target, monkeypatch):
    """fp8 arithmetic computes in f32 and rounds back per op. Past the largest finite value (448) it
    saturates, as fp8 conversions do; the interpreter's arithmetic gave NaN there."""
    x = np.concatenate([RNG.uniform(-4, 4, 24), [30, -30, 21, 448, -448, 0.5, 3, 17]])
    x = x.astype(np.float32)
    got = _run(fp8_arith_kernel, x, np.full(32, np.nan, np.float32), target, monkeypatch)
    y = _fp8(x)
    assert np.array_equal(got, _fp8(y + _fp8(y * y)))
    assert got[24] == 448 and got[25] == 416  # 30 * 30 saturates to 448: 30 + 448, -30 + 448
