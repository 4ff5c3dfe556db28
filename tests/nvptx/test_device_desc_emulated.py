"""Descriptors made in the kernel, run in the CPU emulator: the kernel builds each tensor map with
`tensormap.replace` in shared memory, copies it to the launch's global scratch and copies tiles with
`cp.async.bulk.tensor` through it. The stand-in (tma_standin.py) decodes the fields as the PTX ISA
defines them, so a wrong rank, dimension order, byte stride, element type, swizzle or fill gives wrong
numbers against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from device_desc_kernels import (
    device_desc_copy,
    device_desc_matmul,
    device_desc_persistent_matmul,
    device_desc_shifted,
)

from tileworkbench.frontend import ArgSpec

RNG = np.random.default_rng(907)


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA on (the default; TILEWORKBENCH_TMA=0 turns it off)."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def _copy_args(element: str) -> list[ArgSpec]:
    return [ArgSpec("src_ptr", f"*{element}", True), ArgSpec("dst_ptr", f"*{element}", True),
            ArgSpec("M", "i32"), ArgSpec("N", "i32", True), ArgSpec("stride_src", "i32", True),
            ArgSpec("stride_dst", "i32", True), ArgSpec("factor", "fp32")]


@pytest.mark.parametrize("element, block", [("fp32", (16, 32)), ("fp32", (8, 16)), ("fp16", (16, 64))],
                         ids=["fp32-swizzle128", "fp32-swizzle64", "fp16-swizzle128"])
def test_copy_with_edge_tiles(element, block):
    """Edge tiles run past M x N: loads read zeros there and stores are clipped (the row stride's
    padding columns stay poisoned). N is a multiple of 16 elements, as the map needs."""
    rows, cols, stride = 37, 48, 64
    emu = Emulator(device_desc_copy, _copy_args(element), {"BM": block[0], "BN": block[1]},
                   num_warps=2, tma=True)
    assert "@emu_tensormap_replace" in emu.text and "@emu_tma_load" in emu.text
    dtype = np.dtype(element.replace("fp", "float"))
    x = RNG.standard_normal((rows, stride)).astype(dtype)
    out = np.full((rows, stride), np.nan, dtype)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    emu.launch(grid, x, out, rows, cols, stride, stride, np.float32(2.5))
    expected = x[:, :cols].astype(np.float64) * 2.5
    np.testing.assert_allclose(out[:, :cols].astype(np.float64), expected, rtol=1e-3)
    assert np.isnan(out[:, cols:]).all()
    assert emu.scratch_bytes == 256  # two maps of 128 bytes per program


def test_a_row_stride_of_whole_16_byte_chunks_takes_tma():
    """A stride of 56 fp32 (224 bytes) specializes `:8`, not `:16`: the map's byte stride is still
    whole 16-byte chunks, so the tiles go through TMA, with the same edge handling."""
    args = [*_copy_args("fp32")[:4], ArgSpec("stride_src", "i32", divisible_by=8),
            ArgSpec("stride_dst", "i32", divisible_by=8), ArgSpec("factor", "fp32")]
    emu = Emulator(device_desc_copy, args, {"BM": 32, "BN": 32}, num_warps=2, tma=True)
    assert "@emu_tensormap_replace" in emu.text and "@emu_tma_load" in emu.text
    rows, cols, stride = 77, 48, 56
    x = RNG.standard_normal((rows, stride)).astype(np.float32)
    out = np.full((rows, stride), np.nan, np.float32)
    emu.launch((3, 2), x, out, rows, cols, stride, stride, np.float32(2.0))
    np.testing.assert_array_equal(out[:, :cols], x[:, :cols] * np.float32(2.0))
    assert np.isnan(out[:, cols:]).all()
    assert emu.scratch_bytes == 256


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_out_of_bounds_tiles_read_the_padding(padding):
    """Tiles at negative offsets, partly and wholly past the tensor read zeros (or NaN) there. The
    shift keeps the innermost coordinate on a 16-byte chunk (TMA traps otherwise)."""
    rows, cols, shift = 37, 32, 16
    args = [ArgSpec("src_ptr", "*fp32", True), ArgSpec("out_ptr", "*fp32", True),
            ArgSpec("M", "i32"), ArgSpec("N", "i32", True), ArgSpec("stride_src", "i32", True),
            ArgSpec("shift", "i32", True)]
    emu = Emulator(device_desc_shifted, args, {"BM": 16, "BN": 16, "PADDING": padding},
                   num_warps=1, tma=True)
    assert "@emu_tensormap_replace" in emu.text and "@emu_tma_load" in emu.text
    x = RNG.standard_normal((rows, 48)).astype(np.float32)
    grid = (4, 4)  # 64 x 64 of tiles: past the 37 x 32 tensor
    out = np.full((64, 64), 7.0, np.float32)
    emu.launch(grid, x, out, rows, cols, 48, shift)
    fill = np.nan if padding == "nan" else 0.0
    expected = np.full((64, 64), fill)
    r, c = np.meshgrid(np.arange(64) - shift, np.arange(64) - shift, indexing="ij")
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    expected[inside] = x[r[inside], c[inside]]
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_matmul_with_descriptors_made_in_the_kernel():
    """a @ b with a, b and c through in-kernel descriptors (fp16 in, fp32 accumulation, fp16 out),
    M and N not multiples of the block."""
    m, n, k = 40, 48, 64
    args = [ArgSpec("a_ptr", "*fp16", True), ArgSpec("b_ptr", "*fp16", True),
            ArgSpec("c_ptr", "*fp16", True), ArgSpec("M", "i32"), ArgSpec("N", "i32", True),
            ArgSpec("K", "i32", True), ArgSpec("stride_am", "i32", True),
            ArgSpec("stride_bk", "i32", True), ArgSpec("stride_cm", "i32", True)]
    emu = Emulator(device_desc_matmul, args, {"BM": 32, "BN": 32, "BK": 32}, num_warps=1,
                   tensor_cores=True, tma=True)
    assert emu.scratch_bytes == 3 * 128  # a map per descriptor in each program's scratch
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, 64), np.nan, np.float16)
    emu.launch((2, 2), a, b, c, m, n, k, k, n, 64)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    error = np.abs(c[:, :n] - expected).max() / np.abs(expected).max()
    assert error < 2e-3, error
    assert np.isnan(c[:, n:]).all()


def test_persistent_matmul_reuses_its_maps_across_tiles():
    """Two programs loop over six tiles of c with the maps they built once (ragged M and N edges)."""
    m, n, k = 40, 48, 32
    args = [ArgSpec("a_ptr", "*fp16", True), ArgSpec("b_ptr", "*fp16", True),
            ArgSpec("c_ptr", "*fp32", True), ArgSpec("M", "i32"), ArgSpec("N", "i32", True),
            ArgSpec("K", "i32", True)]
    emu = Emulator(device_desc_persistent_matmul, args, {"BM": 16, "BN": 32, "BK": 16, "PROGRAMS": 2},
                   num_warps=1, tensor_cores=True, tma=True)
    assert emu.scratch_bytes == 3 * 128
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    emu.launch((2,), a, b, c, m, n, k)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - expected).max() / np.abs(expected).max() < 1e-5


def test_stand_in_faults_on_an_illegal_tensormap_field():
    """`tensormap.replace` with a value the hardware refuses is recorded as a fault and raised after
    the launch (an assert inside the ctypes callback would vanish)."""
    import ctypes

    from tma_standin import _FIELDS, _MAP, tensormap_replace

    field = {name: i for i, name in enumerate(_FIELDS)}

    faults: list[str] = []
    buffer = (ctypes.c_uint8 * _MAP.itemsize)()
    address = ctypes.addressof(buffer)
    tensormap_replace(faults.append, address, field["box_dim"], 0, 64)
    assert faults == []
    tensormap_replace(faults.append, address, field["box_dim"], 0, 300)
    tensormap_replace(faults.append, address, field["global_stride"], 0, 24)
    assert len(faults) == 2 and "256" in faults[0] and "16 bytes" in faults[1]
