"""TMA in the compiled kernel: host descriptors that fit become `cp.async.bulk.tensor` with mbarrier
completion on sm_90+ (assembled by ptxas), their tensor maps `.param .align 64 .b8 [128]` read in
place (grid_constant: never copied to local memory); every other case keeps the pointer lowering."""

from __future__ import annotations

import re

import pytest
from nvptx_support import needs_ptxas, run_ptxas
from tma_kernels import (
    descriptor_args,
    tma_matmul,
    tma_matmul_bt,
    tma_scale_copy,
    tma_shifted_copy,
    tma_strided_sum,
)

import tileworkbench as tw
from tileworkbench.frontend import ArgSpec


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is on by default; these tests need it whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)

_COPY_CONSTS = {"BM": 64, "BN": 64}


def _copy(arch: str, element: str = "fp16", block=(64, 64), padding: str = "zero", fits=True):
    args = descriptor_args(["src", "dst"], element, [block, block], padding, fits)
    return tw.compile(tma_scale_copy, signature=args + [ArgSpec("factor", "fp32")],
                      constexprs={"BM": block[0], "BN": block[1]}, target=arch)


def _matmul(arch: str, num_stages: int = 1):
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(64, 64), (64, 64), (64, 64)])
    return tw.compile(tma_matmul, signature=args + [ArgSpec("K", "i32")],
                      constexprs={"BM": 64, "BN": 64, "BK": 64}, target=arch,
                      num_stages=num_stages)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_descriptor_copy_and_matmul_use_tma(arch, tmp_path):
    # the matmul's loop loads are a ring of 2 slots even at num_stages=1: 2 copies before the loop
    for kernel, loads, stores, descs in ((_copy(arch), 1, 1, 2), (_matmul(arch), 4, 1, 3)):
        ptx = kernel.asm["ptx"]
        assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier") == loads
        assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == stores
        assert "mbarrier.init" in ptx and "mbarrier.try_wait.parity" in ptx
        assert "mbarrier.arrive.expect_tx" in ptx and "fence.proxy.async.shared::cta" in ptx
        assert "cp.async.bulk.wait_group.read" in ptx
        maps = re.findall(r"\.param \.align 64 \.b8 \w+_param_(\d+)\[128\]", ptx)
        assert len(maps) == descs
        for index in maps:  # the map is addressed in the parameter space, not copied to local
            assert re.search(rf"mov.b64\s+%rd\d+, \w+_param_{index};", ptx)
        assert ptx.count("cvta.param.u64") == len(maps)
        assert ".local" not in ptx and "ld.param.u8" not in ptx
        result = run_ptxas(ptx, arch, tmp_path)
        assert result.returncode == 0, result.stderr
    assert "ttng.tma_wait_read" in _matmul("sm_90").asm["tile-gpu"]
    assert "ttng.tma_wait %" in _matmul("sm_90a").asm["tile-gpu"]


@needs_ptxas
def test_num_stages_make_a_ring_per_load(tmp_path):
    """num_stages=3: two rings of 3 slots, 2 iterations issued before the loop, one wait-and-read per
    load and one copy per load at the end of each iteration; one mbarrier per slot."""
    kernel = _matmul("sm_90", num_stages=3)
    gpu_ir = kernel.asm["tile-gpu"]
    assert len(re.findall(r"ttng\.tma_ring : !ttg\.memdesc<3x", gpu_ir)) == 2
    assert gpu_ir.count("ttng.tma_copy") == 2 * 3 and gpu_ir.count("ttng.tma_wait_read") == 2
    assert "ttng.tma_load" not in gpu_ir
    ptx = kernel.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 6
    assert ptx.count("mbarrier.init") == 6
    ring_bytes = 3 * (64 * 64 + 64 * 64) * 2
    assert kernel.metadata.shared >= ring_bytes
    result = run_ptxas(ptx, "sm_90", tmp_path)
    assert result.returncode == 0, result.stderr


def test_matmul_operands_go_from_the_tma_tile_to_ldmatrix():
    """No second trip through shared memory: the loads take the dot operand layouts themselves."""
    gpu_ir = _matmul("sm_90").asm["tile-gpu"]
    assert re.search(r"ttng\.tma_wait_read .*#dot_op\d?>", gpu_ir)
    assert "ttg.local_alloc" not in gpu_ir and "ttg.convert_layout" not in gpu_ir
    assert "ldmatrix" in _matmul("sm_90").asm["ptx"]


def test_a_transposed_operand_folds_into_its_tma_load():
    """Tutorial 09's dot(a, b.T): the transpose becomes the load's column-major view of its tile."""
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(64, 64), (64, 64), (64, 64)])
    kernel = tw.compile(tma_matmul_bt, signature=args + [ArgSpec(n, "i32") for n in "MNK"],
                        constexprs={"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64,
                                    "GROUP_SIZE_M": 8}, target="sm_90", num_stages=1)
    gpu_ir = kernel.asm["tile-gpu"]
    pattern = r"ttng\.tma_wait_read %b, .*trans = true.*tensor<64x64xf16, #dot_op"
    assert re.search(pattern, gpu_ir)
    assert "tt.trans" not in gpu_ir and "ttg.local_alloc" not in gpu_ir


@pytest.mark.parametrize("arch, case", [
    ("sm_80", {}),  # no TMA before Hopper
    ("sm_90", {"fits": False}),  # the launch saw a base or stride TMA cannot take
    ("sm_90", {"block": (64, 512), "element": "fp16"}),  # a box dimension over 256
    ("sm_90", {"block": (16, 2), "element": "fp32"}),  # an 8-byte box row (TMA needs 16)
    ("sm_90", {"element": "fp8e4nv", "padding": "nan"}),  # NaN fill has no 8-bit float type
])
def test_other_descriptors_keep_the_pointer_lowering(arch, case):
    kernel = _copy(arch, **case)
    assert "cp.async.bulk" not in kernel.asm["ptx"] and "mbarrier" not in kernel.asm["ptx"]
    # the frontend's IR is target-neutral; the descriptor pass (tile-gpu) chose pointers
    assert "tensormap" not in kernel.asm["tile"] and "tt.descriptor_load" in kernel.asm["tile"]
    gpu = kernel.asm["tile-gpu"]
    assert "tensormap" not in gpu
    # on a TMA target the IR says why each descriptor stays on pointers
    assert gpu.count("ttng.tma_fallback") == (2 if arch != "sm_80" else 0)
    assert "tt.load" in gpu and "tt.store" in gpu


@pytest.mark.parametrize("block, copies", [((16, 16), 1), ((8, 32), 1), ((16, 8), 1),
                                            ((64, 64), 2), ((32, 128), 4), ((4, 64), 1)])
def test_every_swizzle_and_wide_rows(block, copies):
    """32-, 64- and 128-byte rows take TMA (the H200's wrong 64-byte case was the store past a
    ragged extent); rows of 256 bytes and more are 128-byte column blocks, one box each; a block of
    fewer than 8 rows is one unswizzled box."""
    ptx = _copy("sm_90", element="fp32", block=block).asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == copies
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == copies


def test_unaligned_inner_offset_keeps_the_pointer_lowering():
    """An innermost offset not known to be on a 16-byte chunk (a shift by a runtime scalar) traps
    TMA on the H200: that load takes pointers after a `ttng.tma_fallback` that says why; the store
    at aligned offsets stays TMA. With the shift known to be a multiple of 16, both are TMA."""
    for aligned in (False, True):
        args = descriptor_args(["src", "dst"], "fp32", [(64, 32), (64, 32)])
        kernel = tw.compile(tma_shifted_copy, signature=args + [ArgSpec("shift", "i32", aligned)],
                            constexprs={"BM": 64, "BN": 32}, target="sm_90a")
        tile, ptx = kernel.asm["tile-gpu"], kernel.asm["ptx"]
        assert ("ttng.tma_fallback" in tile) != aligned
        assert ("tt.load" in tile) != aligned and "ttng.tma_store" in tile
        assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == (1 if aligned else 0)
    assert "not provably a multiple of 16 bytes" in tw.compile(
        tma_shifted_copy, signature=descriptor_args(["src", "dst"], "fp32", [(64, 32), (64, 32)])
        + [ArgSpec("shift", "i32")], constexprs={"BM": 64, "BN": 32},
        target="sm_90a").asm["tile-gpu"]


def test_an_innermost_offset_the_loop_carries_is_as_aligned_as_its_start_and_steps():
    """`col += step` in the loop: the load's innermost offset is a carried value, a multiple of 16
    elements where it starts as one (a block's column) and each step is one (`step` specialized
    :16), so the load stays TMA; with a step of unknown divisibility it takes pointers and says
    why (tutorial 06's fp8 V offset, `offsetv_y += BLOCK_N`, had fallen back this way)."""
    for aligned in (False, True):
        args = descriptor_args(["src", "dst"], "fp32", [(64, 32), (64, 32)])
        args += [ArgSpec("n", "i32"), ArgSpec("step", "i32", aligned)]
        tile = tw.compile(tma_strided_sum, signature=args, constexprs={"BM": 64, "BN": 32},
                          target="sm_90a", use_cache=False).asm["tile-gpu"]
        assert ("ttng.tma_fallback" in tile) != aligned
        assert ("ttng.tma_copy" in tile or "ttng.tma_load" in tile) == aligned
        if not aligned:
            assert "innermost offset not provably a multiple of 16 bytes" in tile


def test_interpreter_and_cpu_targets_take_no_tensor_map():
    for target in ("interpreter", "cpu"):
        kernel = _copy(target, element="fp32", block=(16, 32))  # small: the cpu target unrolls it
        assert "tensormap" not in kernel.asm["tile"] and "ttng." not in kernel.asm["tile-opt"]
        assert "ttng." not in kernel.asm.get("tile-gpu", "")


@needs_ptxas
@pytest.mark.parametrize("kernel, stages", [("ab", 1), ("ab", 3), ("bt", 4)])
def test_tma_feeds_wgmma_from_its_ring_slots(kernel, stages, tmp_path):
    """sm_90a: the descriptor loads of the K loop land in rings of 128-byte-swizzled slots (B's
    256-byte rows as two column blocks) that wgmma reads by descriptor: no ldmatrix, no copy into
    another shared tile; one mbarrier per slot; one wgmma group in flight (wait 1 in the loop, 0
    after it); the fp16 result leaves through a TMA store. Assembled by ptxas."""
    if kernel == "ab":
        args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16",
                               [(128, 64), (64, 128), (128, 128)])
        compiled = tw.compile(tma_matmul, signature=args + [ArgSpec("K", "i32")],
                              constexprs={"BM": 128, "BN": 128, "BK": 64}, target="sm_90a",
                              num_stages=stages)
    else:
        args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16",
                               [(128, 64), (128, 64), (128, 128)])
        compiled = tw.compile(tma_matmul_bt, signature=args + [ArgSpec(n, "i32") for n in "MNK"],
                              constexprs={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128,
                                          "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                              target="sm_90a", num_stages=stages)
    gpu_ir, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    slots = max(2, stages)
    ring = rf"ttng\.tma_ring : !ttg\.memdesc<{slots}x\d+x\d+xf16, #nvmma_shared"
    assert len(re.findall(ring, gpu_ir)) == 2
    assert gpu_ir.count("ttng.tma_wait %") == 2 and "ttg.local_alloc" not in gpu_ir
    assert "ttng.warp_group_dot_wait" in gpu_ir and "pendings = 1" in gpu_ir
    b_boxes = 2 if kernel == "ab" else 1  # ab: B's 128 fp16 columns are two 128-byte blocks
    per_iteration = 1 + b_boxes
    assert ptx.count(LOAD) == per_iteration * slots  # S-1 iterations ahead + one in the loop
    assert ptx.count("mbarrier.init") == 2 * slots
    assert "wgmma.mma_async" in ptx and "ldmatrix" not in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 2  # 256-byte rows: 2 boxes
    result = run_ptxas(ptx, "sm_90a", tmp_path)
    assert result.returncode == 0, result.stderr


LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global"
