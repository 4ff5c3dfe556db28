"""Fixtures shared by every test area: the `target` a kernel suite runs on.

`target` is "interpreter" (always) and "cuda" (marked `gpu`, skipped where no GPU is visible). It is a
string with `put` (host NumPy array -> an array the target launches on) and `get` (-> host NumPy).
"""

from __future__ import annotations

import time

import numpy as np
import pytest


class Target(str):
    """The name of an execution target, plus moving arrays to and from it."""

    def put(self, array: np.ndarray):
        if self == "cuda":
            import cupy

            return cupy.asarray(array)
        return array

    def get(self, array) -> np.ndarray:
        if self == "cuda":
            return array.get()
        return np.asarray(array)


@pytest.fixture(params=["interpreter", pytest.param("cuda", marks=pytest.mark.gpu)])
def target(request, monkeypatch, tmp_path) -> Target:
    from tileworkbench.config import config

    if request.param == "cuda":
        from tileworkbench.runtime.device import gpu_available

        if not gpu_available():
            pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
        monkeypatch.setattr(config, "interpret", False)
        monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    else:
        monkeypatch.setattr(config, "interpret", True)
    return Target(request.param)


@pytest.fixture
def wait_for_cache_entries(monkeypatch, tmp_path):
    """Gives the test an empty compile cache, and is `wait(count)`: wait until the cache holds `count`
    entries (an entry is written once ptxas is done, in the background)."""
    from tileworkbench.config import config
    from tileworkbench.runtime.cache import KernelCache

    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")

    def wait(count: int) -> None:
        deadline = time.monotonic() + 30
        while len(list(KernelCache().keys())) < count:
            assert time.monotonic() < deadline, "the compile cache was not written"
            time.sleep(0.01)

    return wait
