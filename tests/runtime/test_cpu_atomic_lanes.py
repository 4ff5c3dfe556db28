"""A block of atomics on the cpu target reads each lane of its operands once: each atomic opens
blocks, and a value held as one LLVM vector gives its lanes per block, so the lowering once
extracted every lane again for every lane (256 lanes: 196,624 extracts; a 32x32 descriptor
atomic_add ran the compile out of memory). The block's result is checked against NumPy too."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config


@tw.jit
def add_block(x_ptr, y_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :]
    tl.atomic_add(y_ptr + offs, tl.load(x_ptr + offs), mask=offs < B * B - 3)


def test_each_lane_is_extracted_a_bounded_number_of_times(monkeypatch):
    calls = []
    extract = ir.IRBuilder.extract_element

    def counting(self, *args, **kwargs):
        calls.append(1)
        return extract(self, *args, **kwargs)

    monkeypatch.setattr(ir.IRBuilder, "extract_element", counting)
    tw.compile(add_block, signature={"x_ptr": "*fp32:16", "y_ptr": "*fp32:16"}, constexprs={"B": 16},
               target="cpu", use_cache=False)
    lanes = 16 * 16
    assert len(calls) <= 4 * lanes, f"{len(calls)} extracts for {lanes} lanes"


def test_the_block_of_atomics_adds_right(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "interpret", False)
    monkeypatch.setattr(config, "target", "cpu")
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    rng = np.random.default_rng()
    x = rng.standard_normal(256, dtype=np.float32)
    y = rng.standard_normal(256, dtype=np.float32)
    want = y.astype(np.float64)
    want[:-3] += x[:-3]
    add_block[(1,)](x, y, B=16)
    assert np.max(np.abs(y - want) / np.maximum(np.abs(want), 1e-6)) < 1e-5
