"""`tl.dot` on tensor cores: the `#mma` / `#dot_op` layouts against the PTX ISA's fragment tables, the
choice between `mma.sync` and the FMA path, the PTX of every dtype form (assembled by ptxas), and
matmuls run by the CPU emulator (whose `mma.sync`, `ldmatrix` and `cp.async` stand-ins follow the ISA,
not the compiler) against NumPy float64, over dtypes, warps, stages, transposed operands and masks.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from cpu_emulator import Emulator
from tensor_core_kernels import (
    DTYPES,
    TOLERANCE,
    batched_dot_kernel,
    matmul_kernel,
    matmul_signature,
    random_operands,
)

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import OutOfResources
from tileworkbench.ir.ops.ttg import DotOperandEncoding, MmaEncoding

RNG = np.random.default_rng(2026)


# -- layouts ------------------------------------------------------------------------------------------

def _lane_elements(layout, lane: int) -> list[tuple[int, ...]]:
    """The coordinates of warp 0, lane `lane`'s registers, in register order."""
    part = [0] * len(layout.shape)
    for bit, basis in enumerate(layout.lanes):
        if lane >> bit & 1:
            part = [p + b for p, b in zip(part, basis)]
    return [tuple(p + c for p, c in zip(part, coords)) for coords in layout.all_reg_coords()]


@pytest.mark.parametrize("kw", [1, 2, 4])
def test_fragments_match_the_ptx_isa(kw):
    """One warp's m16n8k(8*kw) tile: A a_j = (g + 8(j&1), kw*t + 4kw(j>>1) + e), B b_j = (kw*t +
    4kw*j + e, g), C c_j = (g + 8(j>>1), 2t + (j&1)) (PTX ISA, mma.m16n8k8/k16/k32 fragments)."""
    k = 8 * kw
    parent = MmaEncoding(2, (1, 1))
    a = DotOperandEncoding(0, parent, kw).linear((16, k))
    b = DotOperandEncoding(1, parent, kw).linear((k, 8))
    c = parent.linear((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        want_a = [(g + 8 * (j & 1), kw * t + 4 * kw * (j >> 1) + e) for j in range(4) for e in range(kw)]
        want_b = [(kw * t + 4 * kw * j + e, g) for j in range(2) for e in range(kw)]
        want_c = [(g + 8 * (j >> 1), 2 * t + (j & 1)) for j in range(4)]
        assert _lane_elements(a, lane) == want_a
        assert _lane_elements(b, lane) == want_b
        assert _lane_elements(c, lane) == want_c


def test_warps_tile_the_output_and_operands_copy_across_the_other_dimension():
    parent = MmaEncoding(2, (2, 2))
    c = parent.linear((64, 64))
    assert c.warps == ((0, 8), (16, 0))  # N's warps first, then M's
    a = DotOperandEncoding(0, parent, 2).linear((64, 32))
    assert a.warps == ((0, 0), (16, 0))  # warps along N hold the same A rows
    b = DotOperandEncoding(1, parent, 2).linear((32, 64))
    assert b.warps == ((0, 8), (0, 0))
    assert c.num_regs * 32 * 4 == 64 * 64


# -- which dots run on tensor cores ------------------------------------------------------------------

def _compile(dtype="fp16", arch="sm_90", out=None, precision="tf32", out_f16=False, warps=4,
             stages=3, block=(64, 64, 32)):
    bm, bn, bk = block
    return tw.compile(matmul_kernel, signature=matmul_signature(dtype, out, sizes=(4096,) * 3),
                      constexprs={"BM": bm, "BN": bn, "BK": bk, "PRECISION": precision,
                                  "OUT_F16": out_f16},
                      target=arch, num_warps=warps, num_stages=stages, use_cache=False)


FORMS = [  # (dtype, precision, out pointer, out_dtype fp16, the mma's type suffix)
    ("fp16", "tf32", None, False, "m16n8k16.row.col.f32.f16.f16.f32"),
    ("fp16", "tf32", "*fp16", True, "m16n8k16.row.col.f16.f16.f16.f16"),
    ("bf16", "tf32", None, False, "m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("fp32", "tf32", None, False, "m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("fp32", "tf32x3", None, False, "m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("int8", "tf32", None, False, "m16n8k32.row.col.s32.s8.s8.s32"),
    ("fp8e4nv", "tf32", None, False, "m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    ("fp8e5", "tf32", None, False, "m16n8k32.row.col.f32.e5m2.e5m2.f32"),
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_matmul_ptx_has_mma_ldmatrix_and_cp_async(arch):
    compiled = _compile(arch=arch, block=(128, 128, 32), warps=8, stages=3)
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global(\.L2::\w+)? \[", ptx)
    assert re.search(r"cp\.async\.wait_group\s+2;", ptx) and "cp.async.commit_group" in ptx
    gpu = compiled.asm["tile-gpu"]
    assert "#ttg.mma<{versionMajor=2" in gpu and "kWidth=2" in gpu and "#ttg.shared<{vec=8" in gpu
    assert "!ttg.memdesc<3x128x32xf16" in gpu  # the ring of num_stages slots
    # the epilogue: the accumulator through shared memory, stored in 16-byte vectors
    assert "st.global.v4.b32" in ptx and "st.global.b32" not in ptx
    if shutil.which("ptxas"):
        assert compiled.metadata.n_regs is not None and compiled.metadata.n_spills == 0


@pytest.mark.parametrize("dtype,precision,out,out_f16,suffix", FORMS, ids=[f[0] + "-" + f[4].split(".")[3]
                                                                          + ("-" + f[1] if f[0] == "fp32" else "")
                                                                          for f in FORMS])
def test_every_dtype_form_assembles(dtype, precision, out, out_f16, suffix):
    compiled = _compile(dtype, "sm_90", out, precision, out_f16)
    ptx = compiled.asm["ptx"]
    assert f"mma.sync.aligned.{suffix}" in ptx
    per_k_step = 2 * 4  # 64x64 over 2x2 warps: 2 m16 x 4 n8 tiles per warp
    k_steps = 32 // int(suffix.split(".")[0].split("k")[1])
    expected = per_k_step * k_steps * (3 if precision == "tf32x3" else 1)
    assert ptx.count(f"mma.sync.aligned.{suffix}") == expected
    if precision in ("tf32", "tf32x3") and dtype == "fp32":
        assert "cvt.rna.tf32.f32" in ptx
    if shutil.which("ptxas"):
        assert compiled.metadata.n_regs is not None


@pytest.mark.parametrize("case", ["fp64", "ieee", "int8_short_k", "fp8_on_sm80"])
def test_fma_path_where_tensor_cores_cannot(case):
    if case == "fp64":
        sig = dict(matmul_signature("fp32"), a_ptr="*fp64:16", b_ptr="*fp64:16", c_ptr="*fp64:16")
        compiled = tw.compile(matmul_kernel, signature=sig, target="sm_90", use_cache=False,
                              constexprs={"BM": 32, "BN": 32, "BK": 16, "PRECISION": "ieee",
                                          "OUT_F16": False})
    elif case == "ieee":
        compiled = _compile("fp32", precision="ieee")
    elif case == "int8_short_k":  # m16n8k32 needs K % 32 == 0
        compiled = _compile("int8", block=(32, 32, 16))
    else:
        compiled = _compile("fp8e4nv", arch="sm_80")
    assert "mma.sync" not in compiled.asm["ptx"]
    assert "#ttg.mma" not in compiled.asm["tile-gpu"]


def test_shared_memory_beyond_the_device_fails_at_compile_time():
    with pytest.raises(OutOfResources, match=r"num_stages=4.*required \d+, hardware limit 232448"):
        _compile(block=(256, 256, 64), warps=8, stages=4)


def test_acc_plus_dot_accumulates_in_the_dot():
    """`acc += tl.dot(a, b)` keeps the accumulator in the #mma layout: no conversion in the loop."""
    gpu = _compile(block=(64, 64, 32)).asm["tile-gpu"]
    assert "ttg.convert_layout" not in gpu
    loop = gpu[gpu.index("scf.for"):]
    assert re.search(r"tt\.dot %\w+, %\w+, %\w+ : tensor<64x64xf32, #mma>", loop)


# -- emulated runs --------------------------------------------------------------------------------------

def _emulate(dtype="fp16", m=32, n=32, k=64, block=(32, 32, 32), warps=4, stages=3, precision="tf32",
             trans_a=False, trans_b=False, out=None, out_f16=False):
    a, b = random_operands(dtype, m, n, k, RNG)
    if trans_a:  # A as the transpose of a K x M array: M is the contiguous dimension
        a = np.ascontiguousarray(a.T).T
    if trans_b:
        b = np.ascontiguousarray(b.T).T
    out_ptr = out or DTYPES[dtype][2]
    c_dtype = {"*fp32": np.float32, "*i32": np.int32, "*fp16": np.float16}[out_ptr]
    c = np.full((m, n), np.nan if c_dtype != np.int32 else -12345, dtype=c_dtype)
    bm, bn, bk = block
    emulator = Emulator(matmul_kernel, matmul_signature(dtype, out, trans_a, trans_b, (m, n, k)), {
        "BM": bm, "BN": bn, "BK": bk, "PRECISION": precision, "OUT_F16": out_f16},
        num_warps=warps, tensor_cores=True, num_stages=stages)
    item = a.itemsize
    emulator.launch(((m + bm - 1) // bm, (n + bn - 1) // bn), a, b, c, m, n, k,
                    a.strides[0] // item, a.strides[1] // item, b.strides[0] // item,
                    b.strides[1] // item, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30)
    return err


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "int8", "fp8e4nv", "fp8e5"])
def test_emulated_matmul_dtypes(dtype):
    assert _emulate(dtype) <= TOLERANCE[dtype]


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_emulated_tf32(precision):
    err = _emulate("fp32", m=16, n=16, k=32, block=(16, 16, 16), warps=1, precision=precision)
    assert err <= TOLERANCE[precision]
    if precision == "tf32":
        assert err > 1e-6  # tf32 really rounds the inputs (10-bit mantissa)


def test_emulated_fp16_accumulator():
    assert _emulate("fp16", out="*fp16", out_f16=True) <= TOLERANCE["fp16_acc"]


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
def test_emulated_transposed_operands(trans_a, trans_b):
    """Strided views: ldmatrix .trans where the tile's contiguous dimension is not the operand's K."""
    assert _emulate("fp16", trans_a=trans_a, trans_b=trans_b) <= TOLERANCE["fp16"]


@pytest.mark.parametrize("stages", [2, 4])
def test_emulated_stages_and_masked_tails(stages):
    """Masked tails on M and N (zero-filled async copies), more iterations than stages."""
    err = _emulate("fp16", m=40, n=24, k=80, block=(32, 16, 16), warps=2, stages=stages)
    assert err <= TOLERANCE["fp16"]


def test_emulated_k_tail_without_cp_async():
    """A K that is no multiple of 16: 2-byte masks, so a plain load is staged each iteration."""
    err = _emulate("fp16", m=40, n=24, k=72, block=(32, 16, 16), warps=2, stages=3)
    assert err <= TOLERANCE["fp16"]


def test_pipelined_only_where_copies_are_four_bytes_or_more():
    sig = matmul_signature("fp16", sizes=(40, 24, 72))
    compiled = tw.compile(matmul_kernel, signature=sig, target="sm_90", num_stages=3, use_cache=False,
                          constexprs={"BM": 32, "BN": 16, "BK": 16, "PRECISION": "tf32",
                                      "OUT_F16": False})
    assert "async_copy" not in compiled.asm["tile-gpu"] and "ttg.local_alloc %" in compiled.asm["tile-gpu"]


@pytest.mark.parametrize("warps,size", [(1, 32), (8, 64)])
def test_emulated_warp_counts(warps, size):
    err = _emulate("bf16", m=size, n=size, k=32, block=(size, size, 16), warps=warps)
    assert err <= TOLERANCE["bf16"]


def test_emulated_batched_dot():
    """A 3-D dot: the batch dimension repeats the #mma tile in each thread's registers."""
    a = RNG.standard_normal((2, 16, 32)).astype(np.float16)
    b = RNG.standard_normal((2, 32, 16)).astype(np.float16)
    c = np.full((2, 16, 16), np.nan, dtype=np.float32)
    emulator = Emulator(batched_dot_kernel, {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16",
                                             "c_ptr": "*fp32:16"},
                        {"B": 2, "M": 16, "N": 16, "K": 32}, num_warps=2, tensor_cores=True)
    emulator.launch((1,), a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= TOLERANCE["fp16"]


def test_interpreter_matmul_dtypes():
    """The interpreter's tl.dot, the semantic reference, on the same kernel (integers exact)."""
    for dtype in ("fp16", "int8"):
        m, n, k = 24, 40, 48
        a, b = random_operands(dtype, m, n, k, RNG)
        c = np.full((m, n), -7, dtype=np.int32 if dtype == "int8" else np.float32)
        matmul_kernel[(2, 2)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=16, BN=32, BK=16,
                              PRECISION="tf32", OUT_F16=False)
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.abs(c - want).max() / np.abs(want).max() <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype,np_dtype", [("fp8e4nv", "float8_e4m3fn"), ("fp8e5", "float8_e5m2")])
def test_abs_of_fp8_clears_the_sign_bit(dtype, np_dtype):
    """Triton's test_abs_fp8 on the GPU: `tl.abs` of fp8 made `llvm.fabs.i8`, which LLVM (assertions
    on) aborted the process on. Every fp8 code (NaN aside) through the emulated lowering."""
    import ml_dtypes

    @tw.jit
    def abs_kernel(x_ptr, z_ptr, SIZE: tl.constexpr):
        off = tl.arange(0, SIZE)
        tl.store(z_ptr + off, tl.abs(tl.load(x_ptr + off)))

    fp8 = getattr(ml_dtypes, np_dtype)
    x = np.arange(-128, 128, dtype=np.int8).view(fp8)
    x = np.where(np.isnan(x.astype(np.float32)), fp8(1.0), x).astype(fp8)
    z = np.full(256, 0x7F, np.uint8).view(fp8)  # NaN-ish poison
    sig = {"x_ptr": f"*{dtype}:16", "z_ptr": f"*{dtype}:16"}
    assert "llvm.fabs" not in tw.compile(abs_kernel, signature=sig, constexprs={"SIZE": 256},
                                         target="sm_90", use_cache=False).asm["llvm"]
    Emulator(abs_kernel, sig, {"SIZE": 256}, num_warps=2).launch((1,), x, z)
    assert np.array_equal(z.astype(np.float32), np.abs(x.astype(np.float32)))


@pytest.mark.parametrize("dtype,arch,bk,staged", [("fp8e4nv", "sm_90", 128, True),
                                                   ("fp16", "sm_86", 32, False)])
def test_a_large_accumulator_is_staged_where_it_fits(dtype, arch, bk, staged):
    """A 128x256 fp32 accumulator (128 KB). Beside fp8 rings of 144 KB (Triton's
    test_dot_max_num_imprecise_acc config) on an H200 (227 KB), the staging tile reuses the rings'
    bytes after the loop and the store is coalesced; an sm_86 block (99 KB) cannot hold the operand
    tiles and the staging tile at once, so there it is stored from the #mma layout directly."""
    compiled = _compile(dtype, arch=arch, block=(128, 256, bk), warps=8, stages=3)
    ptx = compiled.asm["ptx"]
    assert "mma.sync" in ptx
    plan = {e["use"]: e for e in compiled.metadata.shared_plan}
    size = 1 if dtype == "fp8e4nv" else 2
    rings = 3 * (128 * bk + bk * 256) * size
    assert compiled.metadata.shared == rings
    if staged:
        assert plan["epilogue staging"]["offset"] == 0 and plan["epilogue staging"]["bytes"] == 128 * 1024
        assert "st.global.v4" in ptx
    else:
        assert "epilogue staging" not in plan and "st.global.v4" not in ptx
