"""Vectorized special functions NumPy lacks (erf, erfc, erfinv), in float64 to near double accuracy, so
the interpreter needs no SciPy: a positive-term series near zero and a continued fraction in the tails."""

from __future__ import annotations

import math

import numpy as np

_SERIES_LIMIT = 2.5  # |x| below: series (no cancellation); above: continued fraction for erfc
_SERIES_TERMS = 90
_FRACTION_TERMS = 80
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)): every term is positive."""
    x2 = 2.0 * x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, _SERIES_TERMS):
        term = term * x2 / (2 * n + 1)
        total = total + term
    return _TWO_OVER_SQRT_PI * np.exp(-x * x) * total


def _erfc_fraction(x: np.ndarray) -> np.ndarray:
    """erfc(x) for x > 0 from its continued fraction exp(-x^2)/sqrt(pi) / (x + 1/2/(x + 1/(x + ...)))."""
    f = x.copy()
    for k in range(_FRACTION_TERMS, 0, -1):
        f = x + (k / 2.0) / f
    return np.exp(-x * x) / math.sqrt(math.pi) / f


def erf(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a < _SERIES_LIMIT
    out = np.empty_like(a)
    out[small] = _erf_series(a[small])
    out[~small] = 1.0 - _erfc_fraction(a[~small])
    out[np.isnan(a)] = np.nan
    return np.copysign(out, x)


def erfc(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a < _SERIES_LIMIT
    out = np.empty_like(a)
    out[small] = 1.0 - _erf_series(a[small])
    out[~small] = _erfc_fraction(a[~small])
    out = np.where(x < 0, 2.0 - out, out)
    return np.where(np.isnan(x), np.nan, out)


def erfinv(y) -> np.ndarray:
    """Inverse of erf: Winitzki's closed-form guess refined by Newton steps on `erf`."""
    y = np.asarray(y, np.float64)
    a = 0.147
    log_term = np.log1p(-y * y)
    first = 2.0 / (math.pi * a) + log_term / 2.0
    x = np.copysign(np.sqrt(np.sqrt(first * first - log_term / a) - first), y)
    for _ in range(4):
        x = x - (erf(x) - y) / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
    x = np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), x)
    return np.where(np.abs(y) > 1.0, np.nan, x)
