"""The Triton-compatibility pieces Triton's tutorials need, tested on their own in the interpreter:
`driver.active`, tensor descriptors, launch options that are also parameters, Triton backend options,
`CompiledKernel[grid](...)` with `_init_handles`, and bf16/fp8 torch tensors as arguments."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError, LaunchError
from tileworkbench.runtime import driver


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)


def test_driver_in_the_interpreter():
    target = driver.active.get_current_target()
    assert (target.backend, target.arch, target.warp_size) == ("interpreter", "cpu", 32)
    props = driver.active.utils.get_device_properties(None)
    assert props["multiprocessor_count"] >= 1
    assert props["warpSize"] == 32 and props["max_num_regs"] > 0 and props["max_shared_mem"] > 0
    assert tw.runtime.driver.active is driver.active


def test_driver_torch_device_is_the_cpu():
    torch = pytest.importorskip("torch")
    assert driver.active.get_active_torch_device() == torch.device("cpu")


@tw.jit
def copy_block(src_ptr, dst_ptr, rows, cols, row0, col0, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(
        src_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BM, BN]
    )
    dst = tl.make_tensor_descriptor(dst_ptr, [rows, cols], [cols, 1], [BM, BN])
    block = src.load([row0, col0])
    dst.store([row0 + 1, col0 - 2], block * 2.0)
    tl.store(
        dst_ptr + rows * cols + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block
    )


@pytest.mark.parametrize("row0, col0", [(0, 0), (5, 9), (-3, 2), (9, -1)])
def test_descriptor_load_pads_and_store_clips(row0, col0):
    rows, cols, bm, bn = 11, 13, 8, 8
    rng = np.random.default_rng(abs(row0 * 100 + col0))
    src = rng.standard_normal((rows, cols)).astype(np.float32)
    dst = np.full(rows * cols + bm * bn, np.nan, np.float32)
    copy_block[(1,)](src, dst, rows, cols, row0, col0, BM=bm, BN=bn)
    padded = np.zeros((rows + 40, cols + 40), np.float64)  # the block read, zero outside the tensor
    padded[20 : 20 + rows, 20 : 20 + cols] = src
    block = padded[20 + row0 : 20 + row0 + bm, 20 + col0 : 20 + col0 + bn]
    np.testing.assert_array_equal(dst[rows * cols :].reshape(bm, bn), block)
    expected = np.full((rows, cols), np.nan)  # only in-bounds positions of the stored block change
    r, c = np.meshgrid(np.arange(bm) + row0 + 1, np.arange(bn) + col0 - 2, indexing="ij")
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    expected[r[inside], c[inside]] = 2.0 * block[inside]
    np.testing.assert_array_equal(dst[: rows * cols].reshape(rows, cols), expected)


@tw.jit
def transpose_3d(src_ptr, dst_ptr, A, B, C: tl.constexpr):
    desc = tl.make_tensor_descriptor(src_ptr, [A, B, C], [B * C, C, 1], [2, 4, C])
    tile = desc.load([tl.program_id(0) * 2, 0, 0])
    out = tl.make_tensor_descriptor(dst_ptr, [A, C, B], [B * C, B, 1], [2, C, 4])
    out.store([tl.program_id(0) * 2, 0, 0], tl.permute(tile, (0, 2, 1)))


def test_three_dimensional_descriptor():
    src = np.random.default_rng(1).standard_normal((6, 4, 8)).astype(np.float32)
    dst = np.full((6, 8, 4), np.nan, np.float32)
    transpose_3d[(3,)](src, dst, 6, 4, C=8)
    np.testing.assert_array_equal(dst, src.transpose(0, 2, 1))


@tw.jit
def bad_stride(src_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(src_ptr, [n, n], [1, n], [BLOCK, BLOCK])
    desc.load([0, 0])


def test_descriptor_needs_a_contiguous_last_dimension():
    with pytest.raises(
        CompilationError, match="last dimension of a tensor descriptor must be contiguous"
    ):
        bad_stride[(1,)](np.zeros(64, np.float32), 8, BLOCK=8)


@tw.jit
def fill_stages(out_ptr, num_stages: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), num_stages, tl.int32))


def test_launch_option_named_like_a_parameter_reaches_both():
    out = np.full(16, -7, np.int32)
    compiled = fill_stages.warmup(out, num_stages=2, BLOCK=16, grid=(1,))
    assert compiled.metadata.num_stages == 2
    fill_stages[(1,)](out, num_stages=5, BLOCK=16)
    assert (out == 5).all()


def test_triton_backend_options_are_accepted_and_unknown_names_are_not():
    out = np.full(16, -7, np.int32)
    fill_stages[(1,)](out, 3, 16, num_ctas=1, maxnreg=128, matrix_instr_nonkdim=16, waves_per_eu=2)
    assert (out == 3).all()
    with pytest.raises(LaunchError, match="no parameter 'BLOK'"):
        fill_stages[(1,)](out, 3, BLOK=16)


@tw.jit
def row_max(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


def test_compiled_kernel_launches_and_reports_modelled_resources():
    x = np.random.default_rng(2).standard_normal((7, 100)).astype(np.float32)
    out = np.full(7, np.nan, np.float32)
    compiled = row_max.warmup(x, out, 100, BLOCK=128, num_warps=4, grid=(1,))
    compiled._init_handles()
    assert compiled.metadata.shared > 0  # the cross-warp reduction's scratch on the modelled sm_90
    compiled[(7, 1, 1)](x, out, 100, 128)
    np.testing.assert_array_equal(out, x.max(axis=1))
    with pytest.raises(LaunchError, match="not by a @jit launch"):
        tw.compile(
            row_max,
            signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32"},
            constexprs={"BLOCK": 128},
            target="interpreter",
        )[(1,)](x, out, 100, 128)


@tw.jit
def widen(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(tl.float32), mask=offs < n)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float8_e4m3fn"])
def test_torch_bf16_and_fp8_tensors(name):
    torch = pytest.importorskip("torch")
    source = torch.randn(2, 50)[:, ::2].to(getattr(torch, name))  # strided, 25 per row
    out = torch.full((25,), float("nan"))
    widen[(1,)](source[1], out, 25, BLOCK=32)
    assert torch.equal(out, source[1].float())


@tw.jit
def block_ptr_matmul(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    """C = A @ B with block pointers advanced in the K loop (Triton's block-pointer matmul shape)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), order=(1, 0))
    b = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BN), (BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)))
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, [BK, 0])
    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


def test_block_pointer_matmul_with_ragged_edges():
    rng = np.random.default_rng(3)
    M, N, K = 37, 45, 70
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    block_ptr_matmul[(3, 3)](a, b, c, M, N, K, BM=16, BN=16, BK=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@tw.jit
def block_ptr_branch(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    """A block pointer moved in one branch of a runtime `if`; padding_option="nan" past the end."""
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    if shift > 0:
        p = tl.advance(p, (shift,))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p, boundary_check=(0,), padding_option="nan"))


@pytest.mark.parametrize("shift", [0, 3, 10])
def test_block_pointer_through_a_runtime_if(shift):
    x = np.arange(12, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    block_ptr_branch[(1,)](x, out, 12, shift, BLOCK=8)
    expected = np.full(8, np.nan)
    valid = np.arange(8) + shift < 12
    expected[valid] = x[np.arange(8)[valid] + shift]
    np.testing.assert_array_equal(out, expected)


@tw.jit
def scale_tiles(in_desc, out_desc, factor, BM: tl.constexpr, BN: tl.constexpr):
    """Host TensorDescriptors as arguments: each program scales one block."""
    row, col = tl.program_id(0) * BM, tl.program_id(1) * BN
    tl.static_assert(in_desc.block_shape == (BM, BN))
    out_desc.store([row, col], in_desc.load([row, col]) * factor)


def test_host_tensor_descriptor_arguments():
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    x = np.random.default_rng(4).standard_normal((30, 50)).astype(np.float32)
    out = np.full((30, 50), np.nan, np.float32)
    grid = (2, 4)  # 32 x 64 covers 30 x 50: the edges are clipped
    scale_tiles[grid](
        TensorDescriptor.from_tensor(x, [16, 16]),
        TensorDescriptor.from_tensor(out, [16, 16]),
        3.0,
        BM=16,
        BN=16,
    )
    np.testing.assert_array_equal(out, x * np.float32(3.0))
    view = out[::2, 10:]  # a strided view: shape (15, 40), strides (100, 1) in elements
    view_desc = TensorDescriptor.from_tensor(view, [8, 32])
    assert view_desc.strides == [100, 1]
    scale_tiles[(2, 2)](
        TensorDescriptor.from_tensor(x[:15, :40].copy(), [8, 32]), view_desc, -1.0, BM=8, BN=32
    )
    np.testing.assert_array_equal(out[::2, 10:], -x[:15, :40])
    np.testing.assert_array_equal(out[1::2], x[1::2] * np.float32(3.0))  # rows between untouched


def test_host_tensor_descriptor_needs_a_contiguous_last_dimension():
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor.from_tensor(np.zeros((8, 8), np.float32).T, [8, 8])


@tw.jit
def strided_sums(x_ptr, out_ptr, n, WS: tl.constexpr, BLOCK: tl.constexpr):
    """Column sums of x viewed as rows of BLOCK, in a tl.range with every knob of Triton 3.8's."""
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=2, loop_unroll_factor=1, warp_specialize=WS,
                          flatten=True, disallow_acc_multi_buffer=True, disable_licm=True):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("warp_specialize", [False, True])
def test_range_knobs_are_accepted(warp_specialize):
    """warp_specialize, flatten, disallow_acc_multi_buffer and disable_licm are taken, in the
    interpreter and compiled for sm_90a; a loop of pointer loads runs as ordinary code under
    warp_specialize, and the `tile-gpu` IR says why (passes/warp_specialize.py)."""
    x = np.random.default_rng(5).standard_normal(100).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    strided_sums[(1,)](x, out, 100, WS=warp_specialize, BLOCK=16)
    np.testing.assert_allclose(out, np.pad(x, (0, 12)).reshape(-1, 16).sum(0, dtype=np.float64),
                               rtol=1e-5, atol=1e-5)
    compiled = tw.compile(strided_sums, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                          constexprs={"WS": warp_specialize, "BLOCK": 16}, target="sm_90a")
    assert ".entry strided_sums" in compiled.asm["ptx"]
    noted = "ttng.warp_specialize_note" in compiled.asm["tile-gpu"]
    assert noted == warp_specialize and compiled.metadata.producer_warps == 0
