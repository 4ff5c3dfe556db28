"""The bitonic network `lowering/sort.py` runs in shared memory, modelled on integers: the same pair
numbering (lo = pair with a zero bit inserted at log2(j)), the same direction rule (bit k of the flat
index, one direction in the last merge), over several rows at once."""

from __future__ import annotations

import numpy as np
import pytest


def bitonic_model(data: np.ndarray, descending: bool) -> np.ndarray:
    flat = data.reshape(-1).copy()
    n = data.shape[-1]
    pairs = flat.size // 2
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            log_j = j.bit_length() - 1
            for pair in range(pairs):  # one compare-exchange per (thread, share) in the kernel
                lo = ((pair >> log_j) << (log_j + 1)) | (pair & (j - 1))
                hi = lo + j
                ascending = (not descending) if k == n else ((lo & k) == 0) != descending
                x, y = flat[lo], flat[hi]
                if (x > y) if ascending else (x < y):
                    flat[lo], flat[hi] = y, x
            j //= 2
        k *= 2
    return flat.reshape(data.shape)


@pytest.mark.parametrize("shape", [(2,), (64,), (4, 32), (8, 8, 16)])
@pytest.mark.parametrize("descending", [False, True])
def test_network_sorts_every_row(shape, descending):
    data = np.random.default_rng(len(shape)).standard_normal(shape)
    want = np.sort(data, axis=-1)
    assert np.array_equal(bitonic_model(data, descending), want[..., ::-1] if descending else want)
