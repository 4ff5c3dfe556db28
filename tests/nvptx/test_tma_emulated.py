"""TMA descriptor copies run in the CPU emulator: `cp.async.bulk.tensor` and the mbarrier ops by the
host stand-in (tma_standin.py, written from the PTX ISA), so the box coordinates, the swizzle of the
shared tile, out-of-bounds fill, clipped stores and the barrier phases are checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from tma_kernels import (
    descriptor_args,
    tma_load_to_pointers,
    tma_matmul,
    tma_matmul_bt,
    tma_matmul_k_sum,
    tma_scale_copy,
    tma_shifted_copy,
    tma_store_from_pointers,
)
from tma_standin import host_tensor_map

from tileworkbench.frontend import ArgSpec


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is on by default; these tests need it whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)

RNG = np.random.default_rng(90)


def _flat(array: np.ndarray, block, padding: str = "zero") -> list:
    """A host descriptor's runtime parameters as the emulated kernel takes them."""
    rows, cols = array.shape
    return [array, rows, cols, array.strides[0] // array.itemsize,
            host_tensor_map(array, block, padding)]


@pytest.mark.parametrize("block", [(16, 32), (8, 16), (32, 8)], ids=["swizzle128", "swizzle64",
                                                                     "swizzle32"])
def test_copy_with_edge_tiles(block):
    """Edge tiles run past the tensor: their loads read zeros and their stores are clipped."""
    rows, cols = 37, 44  # 176-byte rows: whole 16-byte chunks (tma_rules.host_fits)
    args = descriptor_args(["src", "dst"], "fp32", [block, block]) + [ArgSpec("factor", "fp32")]
    emu = Emulator(tma_scale_copy, args, {"BM": block[0], "BN": block[1]}, num_warps=2, tma=True)
    x = RNG.standard_normal((rows, 52)).astype(np.float32)[:, :cols]  # row stride 52 elements
    out = np.full((rows, 52), np.nan, np.float32)
    dst = out[:, :cols]
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    emu.launch(grid, *_flat(x, block), *_flat(dst, block), np.float32(2.5))
    np.testing.assert_allclose(dst, x.astype(np.float64) * 2.5, rtol=1e-6)
    assert np.isnan(out[:, cols:]).all()  # the padding columns of the row stride: never written


@pytest.mark.parametrize("forced", [True, False], ids=["tma-forced", "rule"])
def test_store_at_a_ragged_inner_extent(forced):
    """The H200's stray writes: a 45-column fp32 tensor (180-byte rows) at a row stride of 48. TMA
    stores whole 16-byte chunks, so a TMA store writes columns 45..47 (the stand-in does as the
    hardware did); the rule (`host_fits`) keeps such a descriptor on the pointer path."""
    from tileworkbench.tma_rules import host_fits

    rows, cols, stride, block = 40, 45, 48, (16, 32)
    fits = host_fits(0x10000, [rows, cols], [stride, 1], 4)
    assert not fits
    args = descriptor_args(["src"], "fp32", [block], fits=True)
    args += descriptor_args(["dst"], "fp32", [block], fits=forced) + [ArgSpec("factor", "fp32")]
    emu = Emulator(tma_scale_copy, args, {"BM": block[0], "BN": block[1]}, num_warps=2, tma=True)
    x = RNG.standard_normal((rows, stride)).astype(np.float32)[:, :cols]
    out = np.full((rows, stride), np.nan, np.float32)
    dst = out[:, :cols]
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    dst_args = _flat(dst, block) if forced else _flat(dst, block)[:-1]
    emu.launch(grid, *_flat(x, block), *dst_args, np.float32(-1.5))
    np.testing.assert_array_equal(dst, x * np.float32(-1.5))
    assert np.isnan(out[:, cols:]).all() != forced  # stray chunk writes only through TMA


@pytest.mark.parametrize("block", [(16, 32), (16, 16), (16, 8), (8, 4)],
                         ids=["swizzle128", "swizzle64", "swizzle32", "unswizzled"])
def test_one_side_through_pointers(block):
    """A descriptor load read out by plain stores, and plain loads stored by a descriptor: the shared
    tile's swizzle must be TMA's, since nothing on the other side undoes it."""
    rows, cols = 21, 44
    consts = {"BM": block[0], "BN": block[1]}
    scalars = [ArgSpec("rows", "i32"), ArgSpec("cols", "i32")]
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    load = Emulator(tma_load_to_pointers, descriptor_args(["src"], "fp32", [block])
                    + [ArgSpec("out_ptr", "*fp32")] + scalars, consts, num_warps=1, tma=True)
    load.launch(grid, *_flat(x, block), out, rows, cols)
    np.testing.assert_array_equal(out, x)
    out[:] = np.nan
    store = Emulator(tma_store_from_pointers, [ArgSpec("x_ptr", "*fp32")]
                     + descriptor_args(["dst"], "fp32", [block]) + scalars, consts, num_warps=1,
                     tma=True)
    store.launch(grid, x, *_flat(out, block), rows, cols)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("shift", [3, 16])
def test_negative_offsets_read_the_padding(padding, shift):
    """Offsets moved by -shift: by 3 the innermost coordinate is off a 16-byte chunk (the stand-in
    traps as the H200 did), so the load takes pointers; by 16 it is TMA at negative coordinates."""
    block = (16, 16)
    args = descriptor_args(["src", "dst"], "fp32", [block, block], padding)
    args += [ArgSpec("shift", "i32", shift % 16 == 0)]
    emu = Emulator(tma_shifted_copy, args, {"BM": 16, "BN": 16}, num_warps=1, tma=True)
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    out = np.full((32, 32), -7.0, np.float32)
    emu.launch((2, 2), *_flat(x, block, padding), *_flat(out, block), shift)
    want = np.full((32, 32), 0.0 if padding == "zero" else np.nan)
    want[shift:, shift:] = x[:32 - shift, :32 - shift]
    np.testing.assert_array_equal(out, want.astype(np.float32))
    assert ("cp_async_bulk_tensor_g2s" in emu.text) == (shift % 16 == 0)


def test_the_standin_traps_on_an_unaligned_box():
    """What the H200 did (cudaErrorIllegalInstruction): a TMA box whose innermost coordinate is
    off a 16-byte chunk. The kernel claims a shift divisible by 16 and gets 3."""
    block = (16, 16)
    args = descriptor_args(["src", "dst"], "fp32", [block, block]) + [ArgSpec("shift", "i32", True)]
    emu = Emulator(tma_shifted_copy, args, {"BM": 16, "BN": 16}, num_warps=1, tma=True)
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    with pytest.raises(AssertionError, match="not on a 16-byte chunk"):
        emu.launch((2, 2), *_flat(x, block), *_flat(np.zeros_like(x), block), 3)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_matmul_loop_flips_the_barrier_phase(stages):
    """A K loop of descriptor loads: each iteration waits on the next phase of the op's mbarrier, or
    with `num_stages` > 1 of its ring slot's (a wrong parity would read the previous tile, which the
    stand-in leaves in place until waited on). K = 80 is 5 tiles: the ring wraps unevenly."""
    m, n, k = 40, 24, 80
    bm, bn, bk = 16, 8, 16
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp32", [(bm, bk), (bk, bn), (bm, bn)])
    emu = Emulator(tma_matmul, args + [ArgSpec("K", "i32")], {"BM": bm, "BN": bn, "BK": bk},
                   num_warps=1, tma=True, num_stages=stages)
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    emu.launch((-(-m // bm), n // bn), *_flat(a, (bm, bk)), *_flat(b, (bk, bn)),
               *_flat(c, (bm, bn)), k)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("blocks", [(32, 32, 32), (16, 32, 64)], ids=["64B-tiles", "128B-a"])
def test_fp16_tensor_core_operands_read_from_the_tma_tile(blocks):
    """mma.sync operands loaded by ldmatrix straight from the swizzled TMA tiles (the stand-ins of
    both), K tiles past the tensor zero-filled, the fp32 result stored through a descriptor."""
    bm, bn, bk = blocks
    m, n, k = 40, 48, 80
    args = descriptor_args(["a_desc", "b_desc"], "fp16", [(bm, bk), (bk, bn)])
    args += descriptor_args(["c_desc"], "fp32", [(bm, bn)]) + [ArgSpec("K", "i32")]
    emu = Emulator(tma_matmul, args, {"BM": bm, "BN": bn, "BK": bk}, num_warps=2,
                   tensor_cores=True, tma=True)
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    emu.launch((-(-m // bm), -(-n // bn)), *_flat(a, (bm, bk)), *_flat(b, (bk, bn)),
               *_flat(c, (bm, bn)), k)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= 1e-3


@pytest.mark.parametrize("dtype, tensor_cores, stages", [("fp32", False, 1), ("fp16", True, 1),
                                                         ("fp16", True, 3)])
def test_transposed_operand_read_from_the_tma_tile(dtype, tensor_cores, stages):
    """Tutorial 09's `dot(a, b.T)` with B stored N x K: the transpose folds into the TMA load
    (passes/tma.py), which reads its tile as a column-major view (ldmatrix without .trans)."""
    bm, bn, bk = 16, 32, 32
    m, n, k = 40, 48, 72
    args = descriptor_args(["a_desc", "b_desc"], dtype, [(bm, bk), (bn, bk)])
    args += descriptor_args(["c_desc"], "fp16", [(bm, bn)])
    args += [ArgSpec(name, "i32") for name in ("M", "N", "K")]
    consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 2}
    emu = Emulator(tma_matmul_bt, args, consts, num_warps=2, tensor_cores=tensor_cores, tma=True,
                   num_stages=stages)
    np_type = np.float16 if dtype == "fp16" else np.float32
    a = RNG.standard_normal((m, k)).astype(np_type)
    b = RNG.standard_normal((n, k)).astype(np_type)
    c = np.full((m, n), np.nan, np.float16)
    emu.launch((-(-m // bm) * -(-n // bn),), *_flat(a, (bm, bk)), *_flat(b, (bn, bk)),
               *_flat(c, (bm, bn)), m, n, k)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.abs(c - want).max() / np.abs(want).max() <= 2e-3


@pytest.mark.parametrize("dtype, blocks, stages", [
    ("fp16", (64, 128, 16), 1), ("fp16", (64, 64, 32), 2), ("bf16", (64, 64, 64), 3),
    ("fp16", (64, 128, 16), 4),
], ids=["fp16-32B-a-2-blocks-b-st1", "fp16-64B-st2", "bf16-128B-st3", "fp16-st4"])
def test_tma_feeds_wgmma_over_tails_and_stages(dtype, blocks, stages):
    """sm_90a: wgmma reads the TMA ring slots by descriptor (the stand-ins of both), K tiles past
    the tensor zero-filled, edge tiles in M and N, the ring wrapping unevenly (5 K tiles), at 1 to 4
    stages; the fp32 result through a TMA store."""
    import ml_dtypes

    bm, bn, bk = blocks
    m, n, k = 70, 136, 5 * bk - 3
    args = descriptor_args(["a_desc", "b_desc"], dtype, [(bm, bk), (bk, bn)])
    args += descriptor_args(["c_desc"], "fp32", [(bm, bn)]) + [ArgSpec("K", "i32")]
    emu = Emulator(tma_matmul, args, {"BM": bm, "BN": bn, "BK": bk}, num_warps=4, tma=True,
                   wgmma=True, num_stages=stages)
    assert "call void @emu_ldmatrix" not in emu.text  # wgmma reads the slots
    np_type = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
    k_pad = -(-k // 8) * 8  # the row stride of whole 16-byte chunks
    a = RNG.standard_normal((m, k_pad)).astype(np_type)[:, :k]
    b = RNG.standard_normal((k, n)).astype(np_type)
    c = np.full((m, n), np.nan, np.float32)
    emu.launch((-(-m // bm), -(-n // bn)), *_flat(a, (bm, bk)), *_flat(b, (bk, bn)),
               *_flat(c, (bm, bn)), k)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= 1e-3


def test_tma_feeds_wgmma_a_transposed_operand():
    """Tutorial 09's dot(a, b.T) on sm_90a: B's N x K slots (K contiguous) read by wgmma as a K-major
    operand through the transposed view, no copy; tails in M, N and K; the fp16 out's 100 columns
    (200 bytes) are no whole number of 16-byte chunks, so its store takes pointers."""
    bm, bn, bk = 64, 64, 32
    m, n, k = 70, 100, 5 * bk - 8
    args = descriptor_args(["a_desc", "b_desc"], "fp16", [(bm, bk), (bn, bk)])
    args += descriptor_args(["c_desc"], "fp16", [(bm, bn)], fits=False)
    args += [ArgSpec(name, "i32") for name in ("M", "N", "K")]
    consts = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 2}
    emu = Emulator(tma_matmul_bt, args, consts, num_warps=4, tma=True, wgmma=True, num_stages=3)
    assert "call void @emu_ldmatrix" not in emu.text  # declared always, never called
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((n, k)).astype(np.float16)
    c = np.full((m, 104), np.nan, np.float16)[:, :n]
    emu.launch((-(-m // bm) * -(-n // bn),), *_flat(a, (bm, bk)), *_flat(b, (bn, bk)),
               *_flat(c, (bm, bn))[:-1], m, n, k)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.abs(c - want).max() / np.abs(want).max() <= 2e-3


@pytest.mark.parametrize("wgmma", [False, True], ids=["mma.sync", "wgmma"])
def test_unpipelined_loop_shares_the_scratch_tile(wgmma):
    """A loop TMA cannot pipeline (its offsets have another use): A's and B's boxes go through the
    one scratch tile in turn, each after a fence and a barrier, read into registers (mma.sync) or
    copied to wgmma's tiles; K tails zero-filled."""
    bm, bn, bk = 64, 64, 32
    m, n, k = 70, 72, 4 * bk - 8
    args = descriptor_args(["a_desc", "b_desc"], "fp16", [(bm, bk), (bk, bn)])
    args += descriptor_args(["c_desc"], "fp32", [(bm, bn)])
    args += [ArgSpec("k_sum_ptr", "*i32"), ArgSpec("K", "i32")]
    emu = Emulator(tma_matmul_k_sum, args, {"BM": bm, "BN": bn, "BK": bk}, num_warps=4, tma=True,
                   tensor_cores=not wgmma, wgmma=wgmma, num_stages=3)
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    sums = np.full(4, -1, np.int32)
    emu.launch((2, 2), *_flat(a, (bm, bk)), *_flat(b, (bk, bn)), *_flat(c, (bm, bn)), sums, k)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= 1e-3
    assert (sums == sum(range(0, k, bk))).all()
