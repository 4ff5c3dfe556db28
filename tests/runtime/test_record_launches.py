"""Launch recorders nest: each sees every launch made while it is open, and closing the inner one
leaves the outer one recording (the profile CLI runs scripts that record their own launches)."""

from __future__ import annotations

import numpy as np
from canonical_kernels import add_kernel

from tileworkbench.runtime.record import ACTIVE, record_launches


def _launch(rng):
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    add_kernel[(1,)](x, y, out, 64, BLOCK_SIZE=64)  # NumPy arrays: the interpreter
    assert np.max(np.abs(out - (x.astype(np.float64) + y))) < 1e-6


def test_nested_recorders_each_see_their_launches_and_close_cleanly():
    rng = np.random.default_rng()
    before = list(ACTIVE)
    with record_launches() as outer:
        with record_launches() as inner:
            _launch(rng)
        _launch(rng)  # the inner recorder is closed: only the outer one sees this
        assert len(inner) == 1 and len(outer) == 2
        assert any(entry is outer for entry in ACTIVE)
        assert not any(entry is inner for entry in ACTIVE)
    assert ACTIVE == before
