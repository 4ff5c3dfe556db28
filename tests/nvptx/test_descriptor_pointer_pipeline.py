"""Descriptor loads that cannot take TMA (TILEWORKBENCH_TMA=0, or a target or descriptor TMA refuses)
stay asynchronous (issue 21, "no cliffs"): their pointer tiles (passes/descriptors.py) are copied by
cp.async into rings of `num_stages` slots that wgmma reads by descriptor, as hand-written pointer
loads are (passes/software_pipeline.py), and the edges they mask read zeros. Before, a `:16` host
descriptor's strides were unknown to axis info (one fp16 element per thread, below cp.async's 4
bytes) and `desc.load(...).T` was a register transpose: every tile went through registers. Checked in
the tile-gpu IR and PTX (ptxas: no spills), and on the emulator against float64 on ragged shapes.
A descriptor padded with NaN keeps its loads in registers: cp.async fills zeros only. Where the full
rings do not fit in shared memory, the compiler's retry keeps only the rings that fit (descriptor
lowering is its choice: no OutOfResources for it); a hand-written pointer kernel still raises."""

from __future__ import annotations

import re

import dataclasses

import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas
from attention_kernel import attention_forward, reference, signature
from tensor_core_kernels import matmul_kernel, matmul_signature
from tma_kernels import descriptor_args, tma_attention, tma_matmul, tma_matmul_bt

import tileworkbench as tw
from tileworkbench.backends.nvptx import archs
from tileworkbench.errors import OutOfResources
from tileworkbench.frontend import ArgSpec
from tileworkbench.target import TMAFallback

RNG = np.random.default_rng()
FP16_TOLERANCE = 2e-3  # relative (norm-wise): fp16 operands, fp32 accumulation, fp16 output


@pytest.fixture(autouse=True)
def tma_off(monkeypatch):
    """The pointer path whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", False)


def _loops(gpu: str) -> list[str]:
    return re.findall(r"scf\.for .*?scf\.yield", gpu, re.S)


def _assert_pipelined(compiled, copies: int) -> None:
    """Each loop's descriptor tiles are cp.async copies into ring slots, none a register load; the
    PTX copies 16 bytes at a time and ptxas reports no spills."""
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    for body in _loops(gpu):
        assert " tt.load " not in body
        assert body.count("ttg.async_copy_global_to_local") == copies
        assert "ttg.local_alloc" not in body
    assert re.search(r"cp\.async\.cg\.shared\.global(\.L2::\w+)? \[[^\]]+\], \[[^\]]+\], 16", ptx)
    assert "cp.async.bulk.tensor" not in ptx
    if compiled.metadata.n_spills is not None:
        assert compiled.metadata.n_spills == 0, compiled.metadata.resources


def _matmul(kernel, b_block, padding="zero", stages=3, block=(128, 128, 64), arch="sm_90a"):
    bm, bn, bk = block
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16",
                           [(bm, bk), b_block, (bm, bn)], padding)
    if kernel is tma_matmul:
        sizes, consts = [ArgSpec("K", "i32", True)], {"BM": bm, "BN": bn, "BK": bk}
    else:
        sizes = [ArgSpec(n, "i32", True) for n in "MNK"]
        consts = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
    return tw.compile(kernel, signature=args + sizes, constexprs=consts, target=arch,
                      num_warps=8, num_stages=stages, use_cache=False)


def _attention(head_dim, stages=2, block_m=128, block_n=64, warps=4):
    args = descriptor_args(["q_desc", "k_desc", "v_desc", "o_desc"], "fp16",
                           [(block_m, head_dim), (block_n, head_dim), (block_n, head_dim),
                            (block_m, head_dim)])
    args += [ArgSpec("n_ctx", "i32"), ArgSpec("qk_scale", "fp32")]
    return tw.compile(tma_attention, signature=args,
                      constexprs={"BLOCK_M": block_m, "BLOCK_N": block_n}, target="sm_90a",
                      num_warps=warps, num_stages=stages, use_cache=False)


@needs_ptxas
@pytest.mark.parametrize("kernel, b_block", [(tma_matmul, (64, 128)), (tma_matmul_bt, (128, 64))],
                         ids=["b-k-major", "b-transposed"])
def test_descriptor_matmul_on_pointers_is_pipelined(kernel, b_block):
    """A and B on cp.async rings of 3 slots, wgmma reading them; B given N x K and read as `b.T`
    copies its tile as it lies in memory (the transpose folded into the pointer tile)."""
    compiled = _matmul(kernel, b_block)
    _assert_pipelined(compiled, copies=2)
    assert len(re.findall(r"= ttg\.local_alloc : !ttg\.memdesc<3x", compiled.asm["tile-gpu"])) == 2
    assert "tt.trans" not in compiled.asm["tile-gpu"]


@needs_ptxas
@pytest.mark.parametrize("head_dim", [64, 128])
def test_descriptor_attention_on_pointers_is_pipelined(head_dim):
    """Tutorial 06's loop at its test config (128 x 64 blocks, 4 warps, 2 stages): K (through `.T`)
    and V at offsets the loop carries, both on rings; the loads' tiles are 16-byte vectors."""
    compiled = _attention(head_dim)
    gpu = compiled.asm["tile-gpu"]
    assert "sizePerThread=[1, 8]" in gpu and "sizePerThread=[8, 1]" in gpu  # V's rows, K^T's columns
    loops = _loops(gpu)
    assert len(loops) == 1 and " tt.load " not in loops[0]
    assert loops[0].count("ttg.async_copy_global_to_local") == 2
    if head_dim == 64:  # 128 x 128 fp32 of accumulator at 4 warps leaves no room (nor with TMA)
        _assert_pipelined(compiled, copies=2)


@needs_ptxas
def test_causal_loops_share_their_rings():
    """Tutorial 06's causal off-band and on-band loops (descriptors made in the kernel, on
    pointers) take the same K and V rings, as on TMA: at head dim 128, 128 x 128 blocks and 3
    stages, two pairs of rings (384 KB) would not fit; one pair and Q's tile take 224 KB."""
    compiled = tw.compile(attention_forward, signature=signature("fp16", aligned=True),
                          constexprs=dict(N_CTX=256, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128,
                                          CAUSAL=True),
                          target="sm_90a", num_warps=8, num_stages=3, use_cache=False)
    gpu = compiled.asm["tile-gpu"]
    assert len(re.findall(r"= ttg\.local_alloc : !ttg\.memdesc<3x128x128xf16", gpu)) == 2
    assert len(_loops(gpu)) == 2
    _assert_pipelined(compiled, copies=2)
    assert compiled.metadata.shared == 224 * 1024


def _rings(gpu: str) -> list[str]:
    return re.findall(r"= ttg\.local_alloc : !ttg\.memdesc<(\d+x\d+x\d+)xf16", gpu)


def _assert_cut_to_fit(compiled, rings: list[str]) -> None:
    """The retry's plan (no tensor map to leave out: it only cuts the rings), the rings kept, and
    ptxas's view: it fits the block's shared memory with no spills."""
    md = compiled.launch_metadata
    assert md.tma_fallback["host"] == [] and not md.tma_fallback["device"]
    assert "the rings of its pointer loads need" in md.tma_fallback["reason"]
    assert _rings(compiled.asm["tile-gpu"]) == rings
    assert md.shared <= archs.ARCHS[md.target].shared_per_block
    assert ("cp.async.cg.shared.global" in compiled.asm["ptx"]) == bool(rings)
    assert compiled.cubin is not None and compiled.metadata.n_spills == 0


@needs_ptxas
@pytest.mark.parametrize("arch, stages, ring, shared_kb",
                         [("sm_90a", 8, "9x128x64", 160), ("sm_80", 6, "6x128x64", 112)])
def test_rings_that_do_not_fit_are_cut_where_tma_is_off(arch, stages, ring, shared_kb):
    """128 x 128 x 64 blocks: A's and B's rings (32 KB a stage) exceed the block's shared memory
    (227 KB on sm_90a, 163 KB on sm_80); the retry keeps A's ring and stages B once (wgmma keeps a
    spare slot for the dot in flight). The same matmul on hand-written pointers raises."""
    compiled = _matmul(tma_matmul, (64, 128), stages=stages, arch=arch)
    _assert_cut_to_fit(compiled, [ring])
    assert compiled.metadata.shared == shared_kb * 1024
    with pytest.raises(OutOfResources, match=rf"num_stages={stages}\), required {stages * 32768}"):
        tw.compile(matmul_kernel, signature=matmul_signature("fp16"), target=arch,
                   constexprs=dict(BM=128, BN=128, BK=64, PRECISION="tf32", OUT_F16=False),
                   num_warps=8, num_stages=stages, use_cache=False)


@needs_ptxas
def test_tutorial_attention_at_four_stages_fits_where_tma_is_off():
    """Tutorial 06's autotune config of 128 x 128 blocks, 8 warps and 4 stages at head dim 128
    raised OutOfResources with TMA off (two 128 KB rings and four 32 KB tiles); beside Q, P and the
    output's tiles not even one ring fits, so K and V are staged once per step (96 KB in all)."""
    compiled = _attention(128, stages=4, block_m=128, block_n=128, warps=8)
    _assert_cut_to_fit(compiled, [])
    assert compiled.metadata.shared == 96 * 1024


def test_nan_padding_stays_in_registers():
    """cp.async fills the masked edge with zeros: a NaN-padded descriptor's loads stay `tt.load`."""
    gpu = _matmul(tma_matmul, (64, 128), padding="nan").asm["tile-gpu"]
    (body,) = _loops(gpu)
    assert body.count(" tt.load ") == 2 and "async_copy" not in body


# -- emulated runs --------------------------------------------------------------------------------


def _flat(array: np.ndarray) -> list:
    """A host descriptor's runtime parameters without a tensor map: base, shape, row stride."""
    rows, cols = array.shape
    return [array, rows, cols, array.strides[0] // array.itemsize]


def _relative_error(got, want) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


@pytest.mark.parametrize("transposed", [False, True], ids=["b-k-major", "b-transposed"])
@pytest.mark.parametrize("stages, cores", [(2, "wgmma"), (3, "wgmma"), (3, "mma.sync")])
def test_descriptor_matmul_on_pointers_emulated(transposed, stages, cores):
    """M, N and K ragged (40 x 48 x 72 with 64 x 32 x 32 blocks: edge tiles in M and N, a last K
    tile past the tensor), the rings wrapping unevenly: the masked rows and columns of the cp.async
    copies must read zeros. wgmma (sm_90a) reads the slots by descriptor, mma.sync by ldmatrix."""
    m, n, k = 40, 48, 72
    bm, bn, bk = 64, 32, 32
    b_block = (bn, bk) if transposed else (bk, bn)
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(bm, bk), b_block, (bm, bn)])
    if transposed:
        kernel, sizes = tma_matmul_bt, [ArgSpec(name, "i32") for name in "MNK"]
        consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 2}
    else:
        kernel, sizes, consts = tma_matmul, [ArgSpec("K", "i32")], {"BM": bm, "BN": bn, "BK": bk}
    emulator = Emulator(kernel, args + sizes, consts, num_warps=4, wgmma=cores == "wgmma",
                        tensor_cores=cores == "mma.sync", num_stages=stages)
    assert "@emu_cp_async(" in emulator.text and "cp_async_bulk_tensor" not in emulator.text
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((n, k) if transposed else (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    programs = -(-m // bm) * -(-n // bn)
    grid = (programs,) if transposed else (-(-m // bm), -(-n // bn))
    emulator.launch(grid, *_flat(a), *_flat(b), *_flat(c), *((m, n, k) if transposed else (k,)))
    b64 = b.astype(np.float64)
    want = a.astype(np.float64) @ (b64.T if transposed else b64)
    assert not np.isnan(c).any()
    assert _relative_error(c, want) <= FP16_TOLERANCE


def test_nan_padding_reaches_the_result_emulated():
    """K = 40 with 32-wide K tiles: the last tile reads 24 columns of A's NaN padding, which must
    not turn into zeros on the pointer path (every output is NaN, as with TMA)."""
    m, n, k, bm, bn, bk = 64, 32, 40, 64, 32, 32
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(bm, bk), (bk, bn), (bm, bn)],
                           "nan")
    emulator = Emulator(tma_matmul, args + [ArgSpec("K", "i32")], {"BM": bm, "BN": bn, "BK": bk},
                        num_warps=4, wgmma=True, num_stages=2)
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    emulator.launch((1, 1), *_flat(a), *_flat(b), *_flat(c), k)
    assert np.isnan(c).all()


def _attention_reference(q, k, v, qk_scale):
    scores = q.astype(np.float64) @ k.astype(np.float64).T * qk_scale
    p = np.exp2(scores - scores.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("stages", [2, 3])
def test_descriptor_attention_on_pointers_emulated(stages):
    """150 rows in 64 x 32 blocks: the last query block and the last key block run past the
    tensor (their K and V rows must read zeros: a NaN there would reach every output row through
    `p @ v`), five key blocks wrap the rings; the key offset is carried by the loop."""
    n_ctx, head_dim, block_m, block_n = 150, 64, 64, 32
    args = descriptor_args(["q_desc", "k_desc", "v_desc", "o_desc"], "fp16",
                           [(block_m, head_dim), (block_n, head_dim), (block_n, head_dim),
                            (block_m, head_dim)])
    args += [ArgSpec("n_ctx", "i32"), ArgSpec("qk_scale", "fp32")]
    emulator = Emulator(tma_attention, args, {"BLOCK_M": block_m, "BLOCK_N": block_n},
                        num_warps=4, wgmma=True, num_stages=stages)
    assert "@emu_cp_async(" in emulator.text
    q, k, v = (RNG.normal(0.0, 0.5, (n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    qk_scale = 0.5 * 1.44269504
    emulator.launch((-(-n_ctx // block_m), 1), *_flat(q), *_flat(k), *_flat(v), *_flat(o), n_ctx,
                    np.float32(qk_scale))
    assert not np.isnan(o).any()
    assert _relative_error(o, _attention_reference(q, k, v, qk_scale)) <= FP16_TOLERANCE


@pytest.mark.parametrize("stages", [2, 3])
def test_causal_loops_sharing_rings_emulated(stages):
    """Causal, TMA off: the last query block runs four off-band key blocks, then two on-band ones
    whose copies refill the rings the off-band loop left at another slot; against float64."""
    n_ctx, head_dim, block_m, block_n = 192, 64, 64, 32
    constexprs = {"N_CTX": n_ctx, "HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                  "CAUSAL": True}
    emulator = Emulator(attention_forward, signature("fp16", aligned=True), constexprs,
                        num_warps=4, wgmma=True, num_stages=stages)
    assert "@emu_cp_async(" in emulator.text
    q, k, v = (RNG.normal(0.0, 0.5, (n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    lse = np.full(n_ctx, np.nan, np.float32)
    emulator.launch((n_ctx // block_m, 1), q, k, v, o, lse, np.float32(0.5))
    want_o, want_lse = reference(q, k, v, 0.5, True)
    assert not np.isnan(o).any()
    assert _relative_error(o, want_o) <= FP16_TOLERANCE
    assert np.abs(lse - want_lse).max() < 1e-3


def test_rings_cut_to_fit_emulated(monkeypatch):
    """The retry's plan at a block limit of 95 KB (8 stages of A and B need 96 KB): A keeps its
    8-slot ring, B is staged once per step; 10 K steps wrap the ring, the last one ragged, M and N
    ragged too: against float64, the output poisoned."""
    m, n, k, bm, bn, bk, stages, limit = 40, 48, 600, 64, 32, 64, 8, 95 * 1024
    row = archs.ARCHS["sm_90a"]
    monkeypatch.setitem(archs.ARCHS, "sm_90a", dataclasses.replace(row, shared_per_block=limit))
    compiled = _matmul(tma_matmul, (bk, bn), stages=stages, block=(bm, bn, bk))
    assert _rings(compiled.asm["tile-gpu"]) == ["8x64x64"]
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(bm, bk), (bk, bn), (bm, bn)])
    emulator = Emulator(tma_matmul, args + [ArgSpec("K", "i32")], {"BM": bm, "BN": bn, "BK": bk},
                        num_warps=4, wgmma=True, num_stages=stages, shared_limit=limit,
                        tma_fallback=TMAFallback.from_dict(compiled.launch_metadata.tma_fallback))
    assert "@emu_cp_async(" in emulator.text
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    emulator.launch((-(-m // bm), -(-n // bn)), *_flat(a), *_flat(b), *_flat(c), k)
    assert not np.isnan(c).any()
    assert _relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) <= FP16_TOLERANCE


@tw.jit
def _rows_at(in_desc, out_ptr, row, BM: tw.language.constexpr, BN: tw.language.constexpr):
    tile = in_desc.load([row, 0])
    r = tw.language.arange(0, BM)
    c = tw.language.arange(0, BN)
    tw.language.store(out_ptr + r[:, None] * BN + c[None, :], tile)


@pytest.mark.parametrize("row", [40, -8, 2**31 - 8])
def test_descriptor_rows_in_32_bits_mask_past_the_edges_emulated(row):
    """The pointer form adds and compares a descriptor's row positions in 32 bits (its extents are
    below 2**31, checked at launch). Rows past the tensor read zeros; so do rows whose 32-bit sum
    wraps negative (row 2**31 - 8 + 8..15), whose true positions lie past the tensor too. The rows
    inside read the tensor's. The loaded block goes out through pointers."""
    bm, bn = 16, 16
    args = descriptor_args(["in_desc"], "fp16", [(bm, bn)])
    args += [ArgSpec("out_ptr", "*fp16", True), ArgSpec("row", "i32")]
    emulator = Emulator(_rows_at, args, {"BM": bm, "BN": bn}, num_warps=4)
    data = RNG.standard_normal((48, bn)).astype(np.float16)
    out = np.full((bm, bn), np.nan, np.float16)
    emulator.launch((1, 1), *_flat(data), out, row)
    want = np.zeros((bm, bn), np.float64)
    for i in range(bm):
        if 0 <= row + i < data.shape[0]:
            want[i] = data[row + i]
    assert np.array_equal(out.astype(np.float64), want)


def test_descriptor_rows_stay_64_bit_where_the_extent_may_not_fit_32():
    """A descriptor made in the kernel from an int64 extent keeps 64-bit positions."""

    @tw.jit
    def made(base, rows, out_ptr, row, BM: tw.language.constexpr, BN: tw.language.constexpr):
        desc = tw.language.make_tensor_descriptor(base, [rows, BN], [BN, 1], [BM, BN])
        tile = desc.load([row, 0])
        r = tw.language.arange(0, BM)
        c = tw.language.arange(0, BN)
        tw.language.store(out_ptr + r[:, None] * BN + c[None, :], tile)

    signature = {"base": "*fp16:16", "out_ptr": "*fp16:16", "row": "i32"}
    for rows, wide in (("i32", False), ("i64", True)):
        ptx = tw.compile(made, signature={**signature, "rows": rows}, constexprs={"BM": 16, "BN": 16},
                         target="sm_80", num_warps=4, use_cache=False).asm["ptx"]
        assert ("setp.lt.s64" in ptx) == wide, rows
