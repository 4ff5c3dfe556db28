"""Counter-based random numbers (Philox 4x32-10), written in the tile language: the same stream as Triton's
`tl.rand`/`randn`/`randint` for the same seed and offsets, on every target."""

from __future__ import annotations

from . import builtins as _b
from .core import constexpr, float32, int32, language_function, static_range, uint32, uint64

PHILOX_KEY_A: constexpr = constexpr(0x9E3779B9)
PHILOX_KEY_B: constexpr = constexpr(0xBB67AE85)
PHILOX_ROUND_A: constexpr = constexpr(0xD2511F53)
PHILOX_ROUND_B: constexpr = constexpr(0xCD9E8D57)
N_ROUNDS_DEFAULT: constexpr = constexpr(10)


@language_function
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the four uint32 counters with the key (k0, k1)."""
    for _ in static_range(n_rounds):
        prev_c0 = c0
        prev_c2 = c2
        c0 = _b.umulhi(PHILOX_ROUND_B, prev_c2) ^ c1 ^ k0
        c2 = _b.umulhi(PHILOX_ROUND_A, prev_c0) ^ c3 ^ k1
        c1 = PHILOX_ROUND_B * prev_c2
        c3 = PHILOX_ROUND_A * prev_c0
        k0 = k0 + PHILOX_KEY_A
        k1 = k1 + PHILOX_KEY_B
    return c0, c1, c2, c3


@language_function
def philox(seed, c0, c1, c2, c3, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    seed = _b.to_tensor(seed)
    seed = seed.to(uint64)
    seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(uint32)
    seed_lo = (seed & 0xFFFFFFFF).to(uint32)
    c0 = c0.to(uint32, bitcast=True)
    c1 = c1.to(uint32, bitcast=True)
    c2 = c2.to(uint32, bitcast=True)
    c3 = c3.to(uint32, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@language_function
def randint4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four tiles of random uint32 from `seed` and the int32 `offset` tile."""
    zero = _b.zeros_like(offset)
    return philox(seed, offset, zero, zero, zero, n_rounds)


@language_function
def randint(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A tile of random uint32 from `seed` and the int32 `offset` tile."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@language_function
def uint_to_uniform_float(x):
    """Random uint32 bits to float32 uniform in [0, 1)."""
    x = x.to(int32, bitcast=True)
    x = _b.where(x < 0, -x - 1, x)
    return x.to(float32) * 4.6566127342e-10


@language_function
def rand(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A tile of float32 uniform in [0, 1) from `seed` and the int32 `offset` tile."""
    offset = offset.to(uint32, bitcast=True)
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@language_function
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform tiles to two standard normal tiles."""
    u1 = _b.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = _b.sqrt(-2.0 * _b.log(u1))
    return r * _b.cos(th), r * _b.sin(th)


@language_function
def randn(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A tile of float32 standard normal values from `seed` and the int32 `offset` tile."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1
