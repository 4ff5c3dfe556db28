"""More special functions for libdevice in the interpreter, in float64 without SciPy: erfcx, erfcinv,
normcdf and its inverse, and the Bessel functions J_n, Y_n (integer order) and I_0, I_1.

The Bessel functions come from their integral representations (Bessel's integral for J_n, Schlaefli's
for Y_n, I_n = 1/pi int_0^pi exp(x cos t) cos(n t) dt) by composite Gauss-Legendre quadrature, which
converges to double accuracy for these smooth integrands; large arguments take Hankel's expansion.
"""

from __future__ import annotations

import math

import numpy as np

from .special import erfc, erfinv

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(24)
_HANKEL_FROM = 60.0  # |x| above: Hankel's asymptotic expansion


def _integrate(fn, a: float, b: float, panels: int) -> float:
    """int_a^b fn(t) dt by `panels` panels of 24-point Gauss-Legendre."""
    edges = np.linspace(a, b, panels + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2
    t = (edges[:-1, None] + edges[1:, None]) / 2 + half * _NODES[None, :]
    return float(np.sum(fn(t) * half * _WEIGHTS[None, :]))


def _elementwise(fn):
    return np.vectorize(fn, otypes=[np.float64])


def _hankel(n: int, x: float) -> tuple[float, float]:
    """(J_n(x), Y_n(x)) for large x > 0 from the asymptotic series P, Q."""
    mu = 4.0 * n * n
    p, q, term, k = 1.0, 0.0, 1.0, 1
    while k < 30:
        term *= (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2 == 1:
            q += term if (k // 2) % 2 == 0 else -term
        else:
            p += -term if (k // 2) % 2 == 1 else term
        if abs(term) < 1e-17:
            break
        k += 1
    phase = x - (n / 2.0 + 0.25) * math.pi
    scale = math.sqrt(2.0 / (math.pi * x))
    cos, sin = math.cos(phase), math.sin(phase)
    return scale * (p * cos - q * sin), scale * (p * sin + q * cos)


def _jn_one(n, x) -> float:
    n, x = int(n), float(x)
    if not math.isfinite(x):
        return 0.0 if math.isinf(x) else math.nan
    sign = -1.0 if n < 0 and n % 2 else 1.0
    n = abs(n)
    if abs(x) > _HANKEL_FROM + n * n:
        value = _hankel(n, abs(x))[0]
        return sign * (value if x > 0 or n % 2 == 0 else -value)
    panels = 2 + int(abs(x) + n) // 2
    return (
        sign * _integrate(lambda t: np.cos(n * t - x * np.sin(t)), 0.0, math.pi, panels) / math.pi
    )


def _yn_one(n, x) -> float:
    n, x = int(n), float(x)
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    if math.isinf(x):
        return 0.0
    sign = -1.0 if n < 0 and n % 2 else 1.0
    n = abs(n)
    if x > _HANKEL_FROM + n * n:
        return sign * _hankel(n, x)[1]
    first = _integrate(lambda t: np.sin(x * np.sin(t) - n * t), 0.0, math.pi, 2 + int(x + n) // 2)
    end = math.asinh(60.0 / x)  # where exp(-x sinh t) has fallen below e^-60 ...
    for _ in range(8):  # ... against the growth of exp(n t)
        end = math.asinh((60.0 + n * end) / x)
    parity = -1.0 if n % 2 else 1.0
    second = _integrate(
        lambda t: (np.exp(n * t) + parity * np.exp(-n * t)) * np.exp(-x * np.sinh(t)),
        0.0,
        end,
        8 + int(end * (n + 1)),
    )
    return sign * (first - second) / math.pi


def _i_one(n: int, x) -> float:
    x = float(x)
    if not math.isfinite(x):
        return math.nan if math.isnan(x) else (math.inf if n == 0 or x > 0 else -math.inf)
    if abs(x) > 700:
        return math.copysign(math.inf, x) if n % 2 else math.inf
    panels = 2 + int(abs(x)) // 2
    return (
        _integrate(lambda t: np.exp(x * np.cos(t)) * np.cos(n * t), 0.0, math.pi, panels) / math.pi
    )


jn = _elementwise(_jn_one)
yn = _elementwise(_yn_one)


def j0(x):
    return jn(0, x)


def j1(x):
    return jn(1, x)


def y0(x):
    return yn(0, x)


def y1(x):
    return yn(1, x)


i0 = _elementwise(lambda x: _i_one(0, x))
i1 = _elementwise(lambda x: _i_one(1, x))


def _erfcx_one(x) -> float:
    x = float(x)
    if x < 26.0:
        return math.exp(x * x) * math.erfc(x) if x > -26.7 else math.inf
    inverse = 1.0 / (2.0 * x * x)
    total, term = 1.0, 1.0
    for k in range(1, 8):  # 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k
        term *= -(2 * k - 1) * inverse
        total += term
    return total / (x * math.sqrt(math.pi))


erfcx = _elementwise(_erfcx_one)


def erfcinv(y):
    """Inverse of erfc on (0, 2): erfinv(1 - y) refined by Newton steps on log(erfc), which keeps the
    small-y tail (down to the smallest doubles) accurate."""
    y = np.asarray(y, np.float64)
    upper = y > 1.0
    tail = np.where(upper, 2.0 - y, y)  # erfcinv(2 - y) = -erfcinv(y)
    with np.errstate(all="ignore"):
        x = np.where(tail > 1e-3, erfinv(1.0 - tail), np.sqrt(-np.log(tail)))
        for _ in range(60):
            value = erfc(x)
            step = (
                (np.log(value) - np.log(tail))
                * value
                / (-2.0 / math.sqrt(math.pi) * np.exp(-x * x))
            )
            x = x - np.where(np.isfinite(step), step, 0.0)
    x = np.where(upper, -x, x)
    x = np.where(y == 0.0, np.inf, np.where(y == 2.0, -np.inf, x))
    return np.where((y < 0) | (y > 2) | np.isnan(y), np.nan, x)


def normcdf(x):
    return 0.5 * erfc(-np.asarray(x, np.float64) / math.sqrt(2.0))


def normcdfinv(p):
    return -math.sqrt(2.0) * erfcinv(2.0 * np.asarray(p, np.float64))
