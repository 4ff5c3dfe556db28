"""Checks of one target's output: against the oracle (within the error bound, NaN and inf exact,
unwritten elements still poisoned) and against another target's output."""

from __future__ import annotations

import numpy as np
from fuzz_programs import Program

SLACK = 2.0  # the bounds are first-order; allow for the second-order terms they leave out


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _where(mask: np.ndarray, limit: int = 4) -> str:
    return str([tuple(int(i) for i in ix) for ix in np.argwhere(mask)[:limit]])


def against_reference(program: Program, got: np.ndarray, poison: np.ndarray) -> list[str]:
    expected = program.expected
    written = program.written.reshape(got.shape)
    problems = []
    kept = _bits(got) == _bits(poison)
    if not np.all(kept[~written]):
        problems.append(f"wrote outside the mask at {_where(~written & ~kept)}")
    if program.cross_only:
        return problems
    checked = written & ~expected.unchecked.reshape(got.shape)
    ref = expected.ref.reshape(got.shape)
    if not expected.dtype.is_float:
        bad = checked & (got != ref.astype(got.dtype))
        if bad.any():
            problems.append(f"{bad.sum()} wrong at {_where(bad)}: got {got[bad][:4]}, want "
                            f"{ref.astype(got.dtype)[bad][:4]}")
        return problems
    g = got.astype(np.float64)
    err = expected.err.reshape(got.shape)
    with np.errstate(all="ignore"):
        nan_mismatch = checked & (np.isnan(ref) != np.isnan(g))
        inf_mismatch = checked & np.isinf(ref) & (g != ref)
        far = checked & np.isfinite(ref) & ~(np.abs(g - ref) <= SLACK * err)
    for what, bad in (("NaN where", nan_mismatch), ("inf where", inf_mismatch), ("off", far)):
        if bad.any():
            problems.append(f"{bad.sum()} {what} expected at {_where(bad)}: got {g[bad][:4]}, want "
                            f"{ref[bad][:4]} (bound {err[bad][:4]})")
    return problems


def between(program: Program, a: np.ndarray, b: np.ndarray) -> list[str]:
    """Two targets agree on every checked element: integers exactly, floats within twice the bound
    (each lies within one bound of the oracle) and on where NaN is."""
    expected = program.expected
    if program.cross_only:
        return _close(a, b, program.written.reshape(a.shape) & ~expected.unchecked.reshape(a.shape))
    checked = program.written.reshape(a.shape) & ~expected.unchecked.reshape(a.shape)
    if not expected.dtype.is_float:
        bad = checked & (a != b)
    else:
        x, y = a.astype(np.float64), b.astype(np.float64)
        err = expected.err.reshape(a.shape)
        with np.errstate(all="ignore"):
            bad = checked & ((np.isnan(x) != np.isnan(y)) |
                             (~np.isnan(x) & ~(np.abs(x - y) <= 2 * SLACK * err) & (x != y)))
    if bad.any():
        return [f"{bad.sum()} differ at {_where(bad)}: {a[bad][:4]} vs {b[bad][:4]}"]
    return []


def _close(a: np.ndarray, b: np.ndarray, checked: np.ndarray) -> list[str]:
    """Without an oracle: equal, or (floats) within 1e-3 relative (a 16-bit intermediate may round
    differently where a target keeps more precision), NaN in the same places."""
    if a.dtype.kind != "f":
        bad = checked & (a != b)
    else:
        x, y = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            near = (x == y) | (np.abs(x - y) <= 1e-3 * np.maximum(np.abs(x), np.abs(y)) + 1e-30)
            bad = checked & ((np.isnan(x) != np.isnan(y)) | (~np.isnan(x) & ~near))
    if bad.any():
        return [f"{bad.sum()} differ at {_where(bad)}: {a[bad][:4]} vs {b[bad][:4]}"]
    return []
