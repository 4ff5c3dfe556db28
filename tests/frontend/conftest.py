"""Frontend tests launch `@tw.jit` kernels on every target: the interpreter, cpu, and the GPU where one is."""

from __future__ import annotations


import numpy as np
import pytest


@pytest.fixture(autouse=True)
def on_every_target(target):
    """Every kernel of this suite runs on every target (tests/conftest.py's `target`)."""
    return target


@pytest.fixture
def rng():
    """A generator with a fresh random seed; the seed is printed so a failure can be replayed."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)
