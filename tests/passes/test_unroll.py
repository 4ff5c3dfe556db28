"""`unroll`: `tl.range(..., loop_unroll_factor=k)` runs k copies of the body per iteration and a
remainder loop (test_core's test_unroll_attr counts the copies in TTIR); the results are the loop's
for every trip count, on every target."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError


@tw.jit
def unrolled_kernel(dst, values, n, FACTOR: tl.constexpr):
    pid = tl.program_id(axis=0)
    acc = 0.0
    for i in tl.range(0, n, 2, loop_unroll_factor=FACTOR):
        tl.atomic_add(dst + pid, i + pid)
        acc = acc * 0.5 + tl.load(values + i)  # order matters: copies must chain the carried value
    tl.store(dst + 1 + pid, acc.to(tl.int32))


def reference(values: np.ndarray, n: int) -> tuple[int, int]:
    acc = 0.0
    for i in range(0, n, 2):
        acc = acc * 0.5 + float(values[i])
    return sum(range(0, n, 2)), int(acc)


@pytest.mark.parametrize("factor", [2, 3, 8])
def test_copies_in_tile_opt(factor):
    compiled = tw.compile(unrolled_kernel, signature={"dst": "*i32", "values": "*fp32", "n": "i32"},
                          constexprs={"FACTOR": factor}, target="interpreter")
    assert compiled.asm["ttir"].count("tt.atomic_rmw") == factor + 1  # k copies, one remainder
    assert compiled.asm["ttir"].count("scf.for") == 2


@pytest.mark.parametrize("factor", [1, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 6, 13, 24])
def test_unrolled_loop_computes_the_same(target, factor, n):
    values = np.random.default_rng(n + factor).integers(1, 50, 32).astype(np.float32)
    host = np.full(2, -7, np.int32)
    host[0] = 0
    dst = target.put(host)
    unrolled_kernel[(1,)](dst, target.put(values), n, FACTOR=factor)
    assert tuple(target.get(dst)) == reference(values, n)


def test_a_bad_factor_is_a_compile_error():
    with pytest.raises(CompilationError, match="loop_unroll_factor must be a positive integer"):
        tw.compile(unrolled_kernel, signature={"dst": "*i32", "values": "*fp32", "n": "i32"},
                   constexprs={"FACTOR": 0}, target="interpreter")
