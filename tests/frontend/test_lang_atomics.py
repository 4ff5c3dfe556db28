"""Atomics: atomic_add/max/min/and/or/xor/xchg/cas with masks, duplicate addresses inside one tile and many
programs hitting one address. Results are checked against NumPy; the returned old values must be
consistent with some serial order of the updates."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import assert_close, poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl

BLOCK, BINS, PROGRAMS = 32, 4, 6


@tw.jit
def atomic_kernel(acc_ptr, val_ptr, old_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr, BINS: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    val = tl.load(val_ptr + offs, mask=mask)
    # duplicate addresses inside the tile (offs % BINS), and every program hits the same BINS addresses
    old = FN(acc_ptr + offs % BINS, val, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)


NP_REDUCE = {"atomic_add": np.add, "atomic_max": np.maximum, "atomic_min": np.minimum,
             "atomic_and": np.bitwise_and, "atomic_or": np.bitwise_or, "atomic_xor": np.bitwise_xor}


def _run(rng, name, dtype, n):
    is_int = np.dtype(dtype).kind in "iu"
    vals = randint(rng, BLOCK * PROGRAMS, dtype, 0 if np.dtype(dtype).kind == "u" else -1000, 1000) \
        if is_int else randn(rng, BLOCK * PROGRAMS, dtype, 10)
    init = vals[:BINS].copy() if name in ("atomic_max", "atomic_min") else \
        randint(rng, BINS, dtype, 0, 1000) if is_int else randn(rng, BINS, dtype)
    acc = init.copy()
    old = poisoned(BLOCK * PROGRAMS, dtype)
    atomic_kernel[(PROGRAMS,)](acc, vals, old, n, FN=getattr(tl, name), BLOCK=BLOCK, BINS=BINS)
    return init, acc, vals, old


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(NP_REDUCE))
def test_read_modify_write_atomics(rng, name, dtype):
    if name in ("atomic_and", "atomic_or", "atomic_xor") and np.dtype(dtype).kind == "f":
        pytest.skip("bitwise atomics are for integers")
    n = BLOCK * PROGRAMS - 5  # the masked-off tail must neither update nor return anything
    init, acc, vals, old = _run(rng, name, dtype, n)
    op = NP_REDUCE[name]
    bins = np.arange(n) % BINS
    for b in range(BINS):
        updates = vals[:n][bins == b]
        want = op.reduce(np.concatenate([[init[b]], updates]).astype(dtype))
        if np.dtype(dtype).kind == "f" and name == "atomic_add":
            assert_close([acc[b]], [np.sum(updates.astype(np.float64)) + init[b]], rtol=1e-5, atol=1e-4)
        else:
            assert acc[b] == want, (b, acc[b], want)
        # each old value is the running result before that update, in some serial order
        olds = old[:n][bins == b]
        if np.dtype(dtype).kind in "iu" and name == "atomic_add":
            # by old value; a tie is a zero update followed by the update after it, so zeros first
            order = np.lexsort((updates, olds)) if (updates >= 0).all() else None
            if order is not None:
                running = init[b] + np.concatenate([[0], np.cumsum(updates[order])[:-1]])
                np.testing.assert_array_equal(olds[order], running.astype(dtype))
        if name == "atomic_max":
            assert (olds <= acc[b]).all()
        if name == "atomic_min":
            assert (olds >= acc[b]).all()
    tail = old[n:]
    assert np.isnan(tail).all() if np.dtype(dtype).kind == "f" else (tail == poisoned(1, dtype)[0]).all()


def test_add_from_many_programs_to_one_address_is_exact_for_ints(rng):
    init, acc, vals, old = _run(rng, "atomic_add", np.uint32, BLOCK * PROGRAMS)
    for b in range(BINS):
        updates = vals[b::BINS].astype(np.uint64)
        assert acc[b] == (int(init[b]) + int(updates.sum())) % 2**32
        # all updates are positive: sorted, the olds and the final value are the running sums, so their
        # steps are the updates themselves in some order
        steps = np.diff(np.sort(np.concatenate([old[b::BINS], [acc[b]]]).astype(np.uint64)))
        np.testing.assert_array_equal(np.sort(steps), np.sort(updates))
        assert old[b::BINS].min() == init[b]  # the first update saw the initial value


def test_xchg(rng):
    init, acc, vals, old = _run(rng, "atomic_xchg", np.int32, BLOCK * PROGRAMS)
    for b in range(BINS):
        written = vals[b::BINS]
        # the returned olds plus the final value are the initial value plus every written value
        seen = np.sort(np.concatenate([old[b::BINS], [acc[b]]]))
        np.testing.assert_array_equal(seen, np.sort(np.concatenate([[init[b]], written])))


@tw.jit
def cas_kernel(lock_ptr, winner_ptr, seen_ptr):
    pid = tl.program_id(0)
    seen = tl.atomic_cas(lock_ptr, 0, pid + 1)
    tl.store(seen_ptr + pid, seen)
    if seen == 0:
        tl.store(winner_ptr, pid)


@tw.jit
def cas_tile_kernel(x_ptr, cmp_ptr, new_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(x_ptr + offs, tl.load(cmp_ptr + offs), tl.load(new_ptr + offs))
    tl.store(old_ptr + offs, old)


def test_cas_lock_has_exactly_one_winner():
    lock = np.zeros(1, np.int32)
    winner, seen = poisoned(1, np.int32), poisoned(PROGRAMS, np.int32)
    cas_kernel[(PROGRAMS,)](lock, winner, seen)
    assert (seen == 0).sum() == 1
    w = int(winner[0])
    assert seen[w] == 0 and lock[0] == w + 1
    assert (np.delete(seen, w) == w + 1).all()


def test_cas_tile(rng):
    x = randint(rng, BLOCK, np.int32, 0, 3)
    cmp = randint(rng, BLOCK, np.int32, 0, 3)
    new = randint(rng, BLOCK, np.int32, 10, 100)
    before = x.copy()
    old = poisoned(BLOCK, np.int32)
    cas_tile_kernel[(1,)](x, cmp, new, old, BLOCK=BLOCK)
    np.testing.assert_array_equal(old, before)
    np.testing.assert_array_equal(x, np.where(before == cmp, new, before))
    assert (before == cmp).any() and (before != cmp).any()


@tw.jit
def histogram_atomic_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + x, 1, mask=mask, sem="relaxed", scope="gpu")


def test_atomic_histogram_with_mask(rng):
    n = 200
    x = rng.integers(0, 16, n).astype(np.int32)
    hist = np.zeros(16, np.int32)
    histogram_atomic_kernel[(tw.cdiv(n, 64),)](x, hist, n, BLOCK=64)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=16))
