"""`ir/clone.py`: a copy of a `tt.func` prints the same, and the GPU passes rewriting one leave the
other as it was (the compiler's shared-memory retry lowers copies of one `tile-opt` IR)."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec
from tileworkbench.ir import print_ir
from tileworkbench.ir.clone import clone
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import tile_opt_ir
from tileworkbench.target import TargetInfo


@tw.jit
def looped_copy(src, dst, K, BM: tl.constexpr, BN: tl.constexpr):
    row = tl.program_id(0) * BM
    for k in range(0, K, BN):
        dst.store([row, k], src.load([row, k]) * 2.0)


SIGNATURE = [ArgSpec("src", "tensordesc<fp32,16x32,zero>", True),
             ArgSpec("dst", "tensordesc<fp32,16x32,zero>", True), ArgSpec("K", "i32", True)]
HOPPER = TargetInfo("sm_90a", 90, "wgmma", tma=True, tensormap_create=True)


def test_a_clone_prints_the_same_and_stays_apart():
    func = tile_opt_ir(looped_copy.fn, SIGNATURE, {"BM": 16, "BN": 32})[0]
    text = print_ir(func, locs=True)
    copy = clone(func)
    assert print_ir(copy, locs=True) == text
    run_passes(copy, TILE_GPU, target=HOPPER)
    assert "ttng.tma_store" in print_ir(copy) and "tt.descriptor" not in print_ir(copy)
    assert print_ir(func, locs=True) == text  # the original is untouched
    assert not {id(op) for op in func.walk()} & {id(op) for op in copy.walk()}
