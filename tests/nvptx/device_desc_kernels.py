"""Kernels that make their tensor descriptors in the kernel (`tl.make_tensor_descriptor`), shared by the
in-kernel descriptor tests (compile, emulated, interpreter, GPU) and tools/ptx_snapshot.py:
a tile copy with a scale (loads and stores, edge tiles past the shape), and a tiled matmul."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def device_desc_copy(src_ptr, dst_ptr, M, N, stride_src, stride_dst, factor, BM: tl.constexpr,
                     BN: tl.constexpr, PADDING: tl.constexpr = "zero"):
    """dst[tile] = src[tile] * factor through descriptors made here (edge tiles run past M x N).
    The tile at negative offsets of program (0, 0)'s load checks the padding too when SHIFT."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[stride_src, 1],
                                    block_shape=[BM, BN], padding_option=PADDING)
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[stride_dst, 1],
                                    block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row, col]) * factor)


@tw.jit
def device_desc_shifted(src_ptr, out_ptr, M, N, stride_src, shift, BM: tl.constexpr,
                        BN: tl.constexpr, PADDING: tl.constexpr = "zero"):
    """out (a dense grid of tiles) = the tiles of src at offsets moved by -shift: tiles partly or
    wholly outside src read the padding. Written through plain pointers (no TMA store)."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[stride_src, 1],
                                    block_shape=[BM, BN], padding_option=PADDING)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tile = src.load([pid_m * BM - shift, pid_n * BN - shift])
    rows = pid_m * BM + tl.arange(0, BM)[:, None]
    cols = pid_n * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * (tl.num_programs(1) * BN) + cols, tile)


@tw.jit
def device_desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b with a, b and c seen through descriptors made here (Triton's in-kernel descriptor
    matmul): loads in the K loop feeding tl.dot, the result stored through c's descriptor."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, col]), acc)
    c_desc.store([row, col], acc.to(c_desc.dtype))


@tw.jit
def device_desc_persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                  BK: tl.constexpr, PROGRAMS: tl.constexpr):
    """A persistent matmul: PROGRAMS programs loop over the tiles of c, each with its descriptors
    made once before the loop (row-major a, b and c, strides K, N and N)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        row = (tile // tiles_n) * BM
        col = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, col]), acc)
        c_desc.store([row, col], acc.to(c_desc.dtype))
