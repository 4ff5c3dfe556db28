"""tl.randint / randint4x / rand / randn against a pure-NumPy Philox4x32-10 written here (uint32 arithmetic,
Random123's round function and key schedule, checked on Random123's known-answer vectors): the same stream
as Triton's for the same seed and offsets. Plus the distribution of rand and randn."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import poisoned

import tileworkbench as tw
import tileworkbench.language as tl

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)


def _mulhilo(a: np.uint64, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    product = a * b.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), (product & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def philox4x32(c0, c1, c2, c3, k0, k1, rounds: int = 10):
    """Philox4x32 with `rounds` rounds on uint32 arrays (Salmon et al., SC'11; Random123)."""
    c = [np.asarray(v, np.uint32).copy() for v in (c0, c1, c2, c3)]
    k0, k1 = np.uint32(k0), np.uint32(k1)
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            hi0, lo0 = _mulhilo(M0, c[0])
            hi1, lo1 = _mulhilo(M1, c[2])
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
            k0, k1 = k0 + W0, k1 + W1
    return c


def test_reference_matches_random123_known_answers():
    zero = philox4x32(*[np.zeros(1, np.uint32)] * 4, 0, 0)
    assert [int(v[0]) for v in zero] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = philox4x32(*[np.full(1, 0xFFFFFFFF, np.uint32)] * 4, 0xFFFFFFFF, 0xFFFFFFFF)
    assert [int(v[0]) for v in ones] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def reference_randint4x(seed: int, offsets: np.ndarray):
    seed = seed % 2**64
    zeros = np.zeros_like(offsets, dtype=np.uint32)
    return philox4x32(offsets.astype(np.int64).astype(np.uint32), zeros, zeros, zeros,
                      seed & 0xFFFFFFFF, seed >> 32)


def uint_to_uniform(x: np.ndarray) -> np.ndarray:
    """Triton's uint_to_uniform_float for uint32: as int32, negative -> -x-1, times 2**-31 in fp32."""
    signed = x.view(np.int32).astype(np.int64)
    signed = np.where(signed < 0, -signed - 1, signed)
    return signed.astype(np.float32) * np.float32(4.6566127342e-10)


@tw.jit
def random_kernel(seed, int_ptr, four_ptr, rand_ptr, randn_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(int_ptr + offs, tl.randint(seed, offs))
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(four_ptr + offs, a)
    tl.store(four_ptr + BLOCK * tl.num_programs(0) + offs, b)
    tl.store(four_ptr + 2 * BLOCK * tl.num_programs(0) + offs, c)
    tl.store(four_ptr + 3 * BLOCK * tl.num_programs(0) + offs, d)
    tl.store(rand_ptr + offs, tl.rand(seed, offs))
    tl.store(randn_ptr + offs, tl.randn(seed, offs))


def _run(seed: int, programs: int = 2, block: int = 64):
    n = programs * block
    ints, four = poisoned(n, np.uint32), poisoned((4, n), np.uint32)
    rand, randn = poisoned(n, np.float32), poisoned(n, np.float32)
    random_kernel[(programs,)](seed, ints, four, rand, randn, BLOCK=block)
    return ints, four, rand, randn


@pytest.mark.parametrize("seed_kind", ["small", "int32", "int64"])
def test_philox_stream_matches_the_reference(rng, seed_kind):
    seed = {"small": int(rng.integers(1, 1000)), "int32": int(rng.integers(2**20, 2**31)),
            "int64": int(rng.integers(2**33, 2**62))}[seed_kind]
    ints, four, rand, randn = _run(seed)
    offsets = np.arange(ints.size)
    ref = reference_randint4x(seed, offsets)
    np.testing.assert_array_equal(ints, ref[0])
    for i in range(4):
        np.testing.assert_array_equal(four[i], ref[i])
    np.testing.assert_array_equal(rand, uint_to_uniform(ref[0]))
    u1 = np.maximum(uint_to_uniform(ref[0]).astype(np.float64), 1e-7)
    u2 = uint_to_uniform(ref[1]).astype(np.float64)
    want = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
    np.testing.assert_allclose(randn, want, rtol=1e-4, atol=1e-5)


def test_same_seed_same_stream_other_seed_other_stream(rng):
    seed = int(rng.integers(1, 2**31))
    a, b, c = _run(seed)[0], _run(seed)[0], _run(seed + 1)[0]
    np.testing.assert_array_equal(a, b)
    assert (a != c).mean() > 0.99


def test_rand_and_randn_distributions(rng):
    _, _, rand, randn = _run(int(rng.integers(1, 2**31)), programs=16, block=1024)
    n = rand.size
    assert rand.min() >= 0 and rand.max() < 1
    assert abs(rand.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    # Kolmogorov-Smirnov distance to U(0, 1): about 1.36 / sqrt(n) at the 5% level; allow 2.0 / sqrt(n)
    ks = np.max(np.abs(np.sort(rand) - (np.arange(1, n + 1) - 0.5) / n))
    assert ks < 2.0 / np.sqrt(n)
    assert abs(randn.mean()) < 5 / np.sqrt(n) and abs(randn.std() - 1) < 0.03
    assert len(np.unique(rand)) > 0.99 * n


@tw.jit
def philox_parts_kernel(seed, c0_ptr, out_ptr, u_ptr, n_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    c0 = tl.load(c0_ptr + offs)
    a, b, c, d = tl.philox(seed, c0, c0 + 1, c0 + 2, c0 + 3, n_rounds=7)
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + N + offs, b)
    tl.store(out_ptr + 2 * N + offs, c)
    tl.store(out_ptr + 3 * N + offs, d)
    u1 = tl.uint_to_uniform_float(a)
    u2 = tl.uint_to_uniform_float(b)
    tl.store(u_ptr + offs, u1)
    n1, n2 = tl.pair_uniform_to_normal(u1, u2)
    tl.store(n_ptr + offs, n1)
    tl.store(n_ptr + N + offs, n2)


def test_philox_with_counters_rounds_and_helpers(rng):
    n, seed = 64, int(rng.integers(2**33, 2**60))
    c0 = rng.integers(0, 2**31, n).astype(np.uint32)
    out, u, normal = poisoned((4, n), np.uint32), poisoned(n, np.float32), poisoned((2, n), np.float32)
    philox_parts_kernel[(1,)](seed, c0, out, u, normal, N=n)
    ref = philox4x32(c0, c0 + 1, c0 + 2, c0 + 3, seed & 0xFFFFFFFF, seed >> 32, rounds=7)
    for i in range(4):
        np.testing.assert_array_equal(out[i], ref[i])
    np.testing.assert_array_equal(u, uint_to_uniform(ref[0]))
    u1 = np.maximum(uint_to_uniform(ref[0]).astype(np.float64), 1e-7)
    th, r = 2 * np.pi * uint_to_uniform(ref[1]).astype(np.float64), np.sqrt(-2 * np.log(u1))
    np.testing.assert_allclose(normal[0], r * np.cos(th), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(normal[1], r * np.sin(th), rtol=1e-4, atol=1e-5)
