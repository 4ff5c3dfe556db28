"""Tutorial 08's grouped GEMM (grouped_gemm_kernel.py) lowered for the GPU and run on the CPU
emulator. Session 6's illegal address on the H200 was not the compiler: the tutorial check gave the
unmasked kernel ragged sizes, and its tiles wrote past each C into the address tables after it
(torch's caching allocator packs them so), which later programs then loaded. Here: whole tiles are
right through wgmma and mma.sync (pointers loaded from memory, runtime loops), the tables intact;
a ragged last problem overwrites them, the cause reproduced where nothing loads them afterwards."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from grouped_gemm_kernel import SIGNATURE, Arena, grouped_inputs, grouped_matmul


def run_grouped(sizes, programs, block=(64, 64, 32), **options):
    arena = Arena(1 << 20)
    a, b, c, tables = grouped_inputs(sizes, seed=len(sizes) * 10 + programs, arena=arena)
    saved = [table.copy() for table in tables]
    bm, bn, bk = block
    emulator = Emulator(grouped_matmul, SIGNATURE,
                        {"NUM_PROGRAMS": programs, "BM": bm, "BN": bn, "BK": bk}, **options)
    emulator.launch((programs,), *tables, len(sizes))
    errors = [np.abs(z.astype(np.float64) - x.astype(np.float64) @ y).max() for x, y, z in
              zip(a, b, c)]
    intact = all(np.array_equal(table, copy) for table, copy in zip(tables, saved))
    return errors, intact


# three problems over two programs: each program runs tiles of several problems in turn
WHOLE_TILES = [(128, 64, 64), (64, 128, 96), (64, 64, 32)]


@pytest.mark.parametrize("options", [dict(wgmma=True, num_stages=3), dict(num_warps=2)],
                         ids=["wgmma", "fma"])
def test_whole_tiles_are_right(options):
    errors, intact = run_grouped(WHOLE_TILES, programs=2, **options)
    assert max(errors) < 2e-3, errors  # fp16 C of sums of 96 products of values in [-0.5, 0.5)
    assert intact


def test_whole_tiles_on_mma_sync():
    errors, intact = run_grouped([(32, 32, 32), (32, 64, 16)], programs=2, block=(32, 32, 16),
                                 num_warps=1, tensor_cores=True, num_stages=2)
    assert max(errors) < 2e-3, errors
    assert intact


def test_a_ragged_problem_writes_past_its_c_into_the_tables():
    """The last tile the last program runs is ragged (33 x 40 in a 64 x 64 tile): its unmasked store
    covers the address tables placed after C (nothing loads them after it, so the run survives)."""
    errors, intact = run_grouped([(64, 64, 64), (33, 40, 64)], programs=2, wgmma=True)
    assert errors[0] < 2e-3
    assert not intact
