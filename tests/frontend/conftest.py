"""Frontend tests launch `@tw.jit` kernels in the interpreter, even where a GPU is visible."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)


@pytest.fixture
def rng():
    """A generator with a fresh random seed; the seed is printed so a failure can be replayed."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)
