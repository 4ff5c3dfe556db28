"""Hopper's `wgmma` for `tl.dot` (sm_90a): the version-3 `#mma` layout against the PTX ISA's accumulator
fragments, the choice between `wgmma` and `mma.sync` (and when each falls back), the PTX of every
dtype form assembled by ptxas, the one-group-in-flight pipeline, the default target of an H200, and
matmuls run by the CPU emulator, whose `wgmma` stand-in (wgmma_standin.py) decodes the descriptors
by the PTX ISA's canonical layouts, against NumPy float64.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from cpu_emulator import Emulator
from tensor_core_kernels import DTYPES, TOLERANCE, matmul_kernel, matmul_signature, random_operands

import tileworkbench as tw
from tileworkbench.backends.nvptx.archs import has_wgmma, native_arch
from tileworkbench.ir.ops.ttg import MmaEncoding, NvmmaSharedEncoding

RNG = np.random.default_rng(90)


def _compile(dtype="fp16", arch="sm_90a", block=(128, 128, 64), warps=4, stages=3, precision="tf32",
             trans_a=False, trans_b=False, out=None, out_f16=False):
    bm, bn, bk = block
    return tw.compile(matmul_kernel, signature=matmul_signature(dtype, out, trans_a, trans_b,
                                                                (4096,) * 3),
                      constexprs={"BM": bm, "BN": bn, "BK": bk, "PRECISION": precision,
                                  "OUT_F16": out_f16},
                      target=arch, num_warps=warps, num_stages=stages, use_cache=False)


# -- layouts ------------------------------------------------------------------------------------------

def test_accumulator_fragment_matches_the_ptx_isa():
    """wgmma m64nNk16's D: thread t of the warp group holds d[i] at row 16 (t / 32) + (t % 32) / 4 +
    8 ((i >> 1) & 1), column 8 (i >> 2) + 2 (t % 4) + (i & 1) (PTX ISA, wgmma D fragment)."""
    n = 32
    layout = MmaEncoding(3, (4, 1), (16, n, 16)).linear((64, n))
    regs = layout.all_reg_coords()
    for t in range(128):
        lane, warp = t % 32, t // 32
        part = [0, 0]
        for bit, basis in enumerate(layout.lanes + layout.warps):
            if (lane | warp << 5) >> bit & 1:
                part = [p + b for p, b in zip(part, basis)]
        held = {(part[0] + r[0], part[1] + r[1]) for r in regs}
        want = {(16 * warp + lane // 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1))
                for i in range(n // 2)}
        assert held == want


def test_warp_groups_tile_m_then_n():
    layout = MmaEncoding(3, (8, 2), (16, 64, 16)).linear((128, 128))
    assert layout.warps == ((16, 0), (32, 0), (64, 0), (0, 64))  # warps 0-3: one group on M


def test_tile_gpu_shows_mma_v3_and_nvmma_shared():
    gpu = _compile().asm["tile-gpu"]
    assert "#ttg.mma<{versionMajor=3, versionMinor=0, warpsPerCTA=[4, 1], instrShape=[16, 128, 16]}>" in gpu
    assert "#ttg.nvmma_shared<{swizzlingByteWidth=128, transposed=false, elementBitWidth=16}>" in gpu
    assert "ttng.warp_group_dot %" in gpu and "ttng.warp_group_dot_wait" in gpu
    assert "ttg.async_wait {num = 2, fence_async = true}" in gpu  # (3 - 2) stages x 2 loads


# -- which dots run on wgmma ---------------------------------------------------------------------------

FORMS = [  # (dtype, trans_b, out, out_f16, instruction)
    ("fp16", False, None, False, "m64n64k16.f32.f16.f16"),
    ("fp16", False, "*fp16", True, "m64n64k16.f16.f16.f16"),
    ("bf16", False, None, False, "m64n64k16.f32.bf16.bf16"),
    ("fp32", True, None, False, "m64n64k8.f32.tf32.tf32"),
    ("int8", True, None, False, "m64n64k32.s32.s8.s8"),
    ("fp8e4nv", True, None, False, "m64n64k32.f32.e4m3.e4m3"),
    ("fp8e5", True, None, False, "m64n64k32.f32.e5m2.e5m2"),
]


@pytest.mark.parametrize("dtype,trans_b,out,out_f16,instruction", FORMS, ids=[f[4] for f in FORMS])
def test_every_dtype_form_assembles(dtype, trans_b, out, out_f16, instruction):
    compiled = _compile(dtype, block=(64, 64, 64), trans_b=trans_b, out=out, out_f16=out_f16)
    ptx = compiled.asm["ptx"]
    k_steps = 64 // int(instruction.split(".")[0].split("k")[1])
    assert ptx.count(f"wgmma.mma_async.sync.aligned.{instruction}") == k_steps
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    # the copies' fence for the async proxy, then the barrier (.loc lines may come between)
    assert re.search(r"fence\.proxy\.async\.shared::cta;\n(\s*(\.loc|//)[^\n]*\n)*\s*bar\.sync", ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    if shutil.which("ptxas"):
        assert compiled.metadata.n_regs is not None and compiled.metadata.n_spills == 0


def test_transposed_16_bit_operands_are_read_mn_major():
    ptx = _compile(block=(64, 128, 64), trans_a=True, trans_b=True).asm["ptx"]
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 .*, 1, 1, 1, 0;", ptx)
    ptx = _compile(block=(64, 128, 64)).asm["ptx"]  # row-major B is N-major
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 .*, 1, 1, 0, 1;", ptx)


@pytest.mark.parametrize("case", ["sm_90", "two_warps", "tf32x3", "int8_n_major", "tf32_n_major",
                                  "m32"])
def test_mma_sync_where_wgmma_cannot(case):
    kwargs = {"sm_90": dict(arch="sm_90"), "two_warps": dict(warps=2),
              "tf32x3": dict(dtype="fp32", precision="tf32x3", trans_b=True, block=(64, 64, 32)),
              "int8_n_major": dict(dtype="int8"), "tf32_n_major": dict(dtype="fp32", block=(64, 64, 32)),
              "m32": dict(block=(32, 64, 64))}[case]
    compiled = _compile(**{"block": (64, 64, 64), **kwargs})
    assert "wgmma." not in compiled.asm["ptx"] and "mma.sync.aligned" in compiled.asm["ptx"]
    assert "versionMajor=2" in compiled.asm["tile-gpu"]


@pytest.mark.parametrize("block, warps, stages, slots", [
    ((128, 128, 64), 4, 3, 3),  # 3 x 32 KB: two blocks per SM, a spare would leave one
    ((64, 128, 64), 4, 4, 4),  # 4 x 24 KB: the same
    ((256, 256, 64), 8, 3, 3),  # 3 x 64 KB: no room for a fourth
    ((256, 128, 64), 8, 3, 4),  # 3 or 4 x 48 KB: one block per SM either way, so the spare
    ((128, 128, 64), 4, 4, 5),  # 4 or 5 x 32 KB: the same
])
def test_ring_slots_and_the_barrier_before_the_refill(block, warps, stages, slots):
    """One wgmma group stays in flight (wait(1)) in every case. With num_stages slots (as Triton) a
    barrier between that wait and the copies that refill the slot the previous iteration read (its
    wgmma has retired in this warp group only); with a spare slot no barrier is needed, and the
    spare is taken only where it costs no block per SM."""
    bm, bn, bk = block
    gpu = _compile(block=block, warps=warps, stages=stages).asm["tile-gpu"]
    assert f"!ttg.memdesc<{slots}x{bm}x{bk}xf16" in gpu and "{pendings = 1}" in gpu
    body = gpu[gpu.index("scf.for"):]
    if slots == stages:
        wait, barrier = body.index("{pendings = 1}"), body.index("gpu.barrier")
        assert wait < barrier < body.index("ttg.async_copy_global_to_local")
    else:
        assert "gpu.barrier" not in body


def test_the_spare_slot_knob_restores_num_stages_plus_one_slots(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "spare_slot", True)
    gpu = _compile(stages=3).asm["tile-gpu"]
    assert "!ttg.memdesc<4x128x64xf16" in gpu and "{pendings = 1}" in gpu  # 3 without it
    assert "gpu.barrier" not in gpu[gpu.index("scf.for"):]


def test_the_default_target_of_an_h200_is_sm_90a():
    assert native_arch(9, 0) == "sm_90a" and native_arch(8, 0) == "sm_80"
    assert native_arch(10, 0) == "sm_100" and native_arch(8, 9) == "sm_89"
    assert has_wgmma("sm_90a") and not has_wgmma("sm_90") and not has_wgmma("sm_100a")


def test_nvmma_shared_swizzle_follows_the_row_width():
    assert str(NvmmaSharedEncoding(64, 16, (0, 1))) == (
        "#nvmma_shared<{swizzlingByteWidth=64, transposed=true, elementBitWidth=16}>")
    gpu = _compile(block=(64, 64, 32), trans_b=True).asm["tile-gpu"]  # 64-byte K rows
    assert "swizzlingByteWidth=64, transposed=false" in gpu and "transposed=true" in gpu


# -- emulated runs ------------------------------------------------------------------------------------

def _emulate(dtype="fp16", m=64, n=64, k=64, block=(64, 64, 32), warps=4, stages=3, trans_a=False,
             trans_b=False, out=None, out_f16=False, shared_limit=None):
    a, b = random_operands(dtype, m, n, k, RNG)
    if trans_a:
        a = np.ascontiguousarray(a.T).T
    if trans_b:
        b = np.ascontiguousarray(b.T).T
    out_ptr = out or DTYPES[dtype][2]
    c_dtype = {"*fp32": np.float32, "*i32": np.int32, "*fp16": np.float16}[out_ptr]
    c = np.full((m, n), np.nan if c_dtype != np.int32 else -12345, dtype=c_dtype)
    bm, bn, bk = block
    emulator = Emulator(matmul_kernel, matmul_signature(dtype, out, trans_a, trans_b, (m, n, k)),
                        {"BM": bm, "BN": bn, "BK": bk, "PRECISION": "tf32", "OUT_F16": out_f16},
                        num_warps=warps, num_stages=stages, wgmma=True, shared_limit=shared_limit)
    assert emulator.text.count("@emu_wgmma(") >= 1  # ran on the wgmma stand-in
    item = a.itemsize
    emulator.launch(((m + bm - 1) // bm, (n + bn - 1) // bn), a, b, c, m, n, k,
                    a.strides[0] // item, a.strides[1] // item, b.strides[0] // item,
                    b.strides[1] // item, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    return np.abs(c.astype(np.float64) - want).max() / np.abs(want).max()


@pytest.mark.parametrize("dtype,trans_b", [("fp16", False), ("bf16", False), ("fp32", True),
                                           ("int8", True), ("fp8e4nv", True), ("fp8e5", True)])
def test_emulated_dtypes(dtype, trans_b):
    block = (64, 64, 64 if dtype in ("int8", "fp8e4nv", "fp8e5") else 32)
    err = _emulate(dtype, block=block, trans_b=trans_b)
    assert err <= TOLERANCE[dtype]
    if dtype == "fp32":
        assert err > 1e-6  # tf32 really drops mantissa bits


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
def test_emulated_transposed_operands(trans_a, trans_b):
    """K-major and MN-major descriptors (the imm-trans flags) for 16-bit operands."""
    assert _emulate(trans_a=trans_a, trans_b=trans_b) <= TOLERANCE["fp16"]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_emulated_stages_and_masked_tails(stages):
    """Masked M and N tails (zero-filled cp.async), 3 K iterations, 64-byte swizzled B rows."""
    err = _emulate(m=80, n=72, k=96, block=(64, 32, 32), stages=stages)
    assert err <= TOLERANCE["fp16"]


@pytest.mark.parametrize("m,n,block,warps", [(128, 128, (128, 128, 32), 8), (64, 128, (64, 128, 32), 8),
                                             (128, 128, (128, 128, 32), 4)])
def test_emulated_warp_groups_and_column_blocks(m, n, block, warps):
    """Two warp groups on M or on N, two M halves per group, and a 128-wide N-major B tile stored as
    two 64-column blocks (the descriptor's leading byte offset)."""
    assert _emulate(m=m, n=n, block=block, warps=warps) <= TOLERANCE["fp16"]


def test_emulated_long_k_rows_and_fp16_accumulator():
    """K rows of 256 bytes (two column blocks of a K-major A), and f16 accumulators packed in pairs."""
    assert _emulate(k=256, block=(64, 64, 128)) <= TOLERANCE["fp16"]
    assert _emulate(out="*fp16", out_f16=True) <= TOLERANCE["fp16_acc"]


def test_emulated_without_spare_slot_and_without_cp_async():
    """wait(0) where the rings have no spare slot; registers staged (no cp.async) on a K tail."""
    assert _emulate(shared_limit=1) <= TOLERANCE["fp16"]
    assert _emulate(m=64, n=64, k=72, block=(64, 64, 16)) <= TOLERANCE["fp16"]


def test_the_epilogue_tile_lies_over_the_rings():
    """The staged fp16 epilogue (64 KB) starts over the loop's rings, so 128x256x64 with 3 stages keeps
    its spare slot (4 x 48 KB) and one wgmma group in flight, in 192 KB."""
    import kernels

    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16",
           "N": "i32:16", "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
           "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_cm": "i32:16", "stride_cn": "i32:1"}
    compiled = tw.compile(kernels.load("tileworkbench").matmul_kernel, signature=sig,
                          target="sm_90a", num_warps=8, num_stages=3, use_cache=False,
                          constexprs={"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8})
    gpu = compiled.asm["tile-gpu"]
    assert "!ttg.memdesc<4x128x64xf16" in gpu and "ttg.local_alloc %c" in gpu
    assert compiled.metadata.shared == 4 * 48 * 1024
    assert "wgmma.wait_group.sync.aligned 1;" in compiled.asm["ptx"]


def test_the_stand_in_catches_a_missing_wait(monkeypatch):
    """The check can fail: the stand-in is asynchronous as the GPU, so without the waits the
    accumulators stored are the in-flight NaN tokens."""
    from tileworkbench.backends.llvm.lowering import LOWERINGS
    from tileworkbench.ir.ops.wgmma import WarpGroupDotWaitOp

    monkeypatch.setitem(LOWERINGS, WarpGroupDotWaitOp, lambda lw, op: lw.set(op.result, lw.get(op.acc)))
    assert np.isnan(_emulate())


def test_one_wait_asm_per_wait_even_with_128_accumulators():
    """128x256 on 8 warps: 128 accumulators per thread go through one `wgmma.wait_group` asm (as
    Triton's); split in two, the k loop's SASS had a second WARPGROUP.DEPBAR."""
    ptx = _compile(block=(128, 256, 64), warps=8, stages=3).asm["ptx"]
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == 1


@pytest.mark.parametrize("dtype, out, cvt", [("fp16", "*fp16", "f16x2"), ("bf16", "*bf16", "bf16x2")])
def test_the_epilogue_rounds_two_accumulators_per_cvt(dtype, out, cvt):
    """`acc.to(fp16)` (fp32 accumulators) before stmatrix: one `cvt.rn.f16x2.f32` (`bf16x2`) per
    pair, as Triton's F2FP.PACK_AB, not two cvt and a prmt per pair; emulated right."""
    from tensor_core_kernels import persistent_matmul_kernel

    m, n, k = 96, 80, 64
    constexprs = {"BM": 64, "BN": 64, "BK": 32, "PROGRAMS": 2}
    signature = matmul_signature(dtype, out, sizes=(m, n, k))
    ptx = tw.compile(persistent_matmul_kernel, signature=signature, constexprs=constexprs,
                     target="sm_90a", num_warps=4, num_stages=3, use_cache=False).asm["ptx"]
    converts = re.findall(r"cvt\.rn\.(\w+)\.f32", ptx)
    assert converts.count(cvt) == 64 * 64 // 128 // 2 and set(converts) == {cvt}
    a, b = random_operands(dtype, m, n, k, RNG)
    c = np.full((m, n), np.nan, np.float32).astype(DTYPES[dtype][1])
    emulator = Emulator(persistent_matmul_kernel, signature, constexprs, num_warps=4, num_stages=3,
                        wgmma=True)
    emulator.launch((2,), a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = {"fp16": 2e-3, "bf16": 1e-2}[dtype]  # the output's rounding (11 or 8 bits)
    assert np.abs(c.astype(np.float64) - want).max() / np.abs(want).max() <= bound


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_takes_cp_async_while_b_stays_in_registers(arch):
    """Tutorial 03's matmul with N not known to be a multiple of 16: `% N` leaves B's rows no known
    contiguity (2 bytes per thread, under cp.async's 4), while A can take cp.async. A gets its ring
    (as Triton pipelines it) and B stays a register load staged each iteration; the mask bound both
    share (`K - k * BK`) is computed for the current iteration in the body and, run ahead, for the
    copies. On wgmma and on mma.sync; emulated with ragged M and N, against float64."""
    from test_wgmma_register_a import kernels  # bench/kernels.py

    kernel = kernels.load("tileworkbench").matmul_kernel
    signature = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32",
                 "N": "i32", "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
                 "stride_bk": "i32", "stride_bn": "i32:1", "stride_cm": "i32", "stride_cn": "i32:1"}
    constexprs = {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8}
    gpu = tw.compile(kernel, signature=signature, constexprs=constexprs, target=arch,
                     num_warps=4, num_stages=3, use_cache=False).asm["tile-gpu"]
    body = gpu[gpu.index("scf.for"):gpu.index("scf.yield")]
    assert body.count("ttg.async_copy_global_to_local") == 1  # A's next copy
    assert len(re.findall(r"= tt\.load ", body)) == 1  # B, in registers
    m, n, k = 100, 72, 96
    a, b = random_operands("fp16", m, n, k, RNG)
    c = np.full((m, n), np.nan, np.float16)
    emulator = Emulator(kernel, signature, constexprs, num_warps=4, num_stages=3,
                        wgmma=arch == "sm_90a", tensor_cores=arch == "sm_80")
    grid = (-(-m // 64) * -(-n // 64),)
    emulator.launch(grid, a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # C is stored in fp16: 2^-11 of each value
    assert np.abs(c.astype(np.float64) - want).max() / np.abs(want).max() <= 2.0**-10
