"""Kernels on host tensor descriptors, shared by the TMA tests (compile, emulated, GPU): a tile copy
with a scale (loads and stores), and a tiled matmul whose operands come through descriptors."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec


@tw.jit
def tma_scale_copy(src, dst, factor, BM: tl.constexpr, BN: tl.constexpr):
    """dst[tile] = src[tile] * factor for the tile of this program (edge tiles run past the tensor)."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    tile = src.load([row, col])
    dst.store([row, col], tile * factor)


@tw.jit
def tma_shifted_copy(src, dst, shift, BM: tl.constexpr, BN: tl.constexpr):
    """dst's tile = src's tile at offsets moved by -shift (negative offsets read the padding)."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    dst.store([row, col], src.load([row - shift, col - shift]))


@tw.jit
def tma_strided_sum(src, dst, n, step, BM: tl.constexpr, BN: tl.constexpr):
    """dst's first block of each row band = the sum of n blocks of src, each `step` columns past
    the last: the column offset is a value the loop carries (`col += step`)."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(n):
        acc += src.load([row, col])
        col += step
    dst.store([row, tl.program_id(1) * BN], acc)


@tw.jit
def tma_load_to_pointers(src, out_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor load stored through plain pointers (row-major out, masked at the edges): the
    shared tile's swizzle must match the engine's, as no TMA store undoes it."""
    r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    tile = src.load([tl.program_id(0) * BM, tl.program_id(1) * BN])
    tl.store(out_ptr + r * cols + c, tile, mask=(r < rows) & (c < cols))


@tw.jit
def tma_store_from_pointers(x_ptr, dst, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    """A tile loaded through plain pointers (zeros outside) stored through a descriptor."""
    r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    tile = tl.load(x_ptr + r * cols + c, mask=(r < rows) & (c < cols), other=0.0)
    dst.store([tl.program_id(0) * BM, tl.program_id(1) * BN], tile)


@tw.jit
def tma_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b over K (a loop of descriptor loads feeding tl.dot), stored through a descriptor."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([row, k])
        b = b_desc.load([k, col])
        acc = tl.dot(a, b, acc)
    c_desc.store([row, col], acc.to(c_desc.dtype))


@tw.jit
def tma_matmul_k_sum(a_desc, b_desc, c_desc, k_sum_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    """tma_matmul whose K offsets are also summed: another use of the loads' offsets keeps the loop
    unpipelined (passes/tma_pipeline.py), so A's and B's loads take the one scratch tile in turn."""
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    total = 0
    for k in range(0, tl.cdiv(K, BK)):
        offs_k = k * BK
        a = a_desc.load([row, offs_k])
        b = b_desc.load([offs_k, col])
        acc = tl.dot(a, b, acc)
        total += offs_k
    c_desc.store([row, col], acc.to(c_desc.dtype))
    tl.store(k_sum_ptr + tl.program_id(0) * tl.num_programs(1) + tl.program_id(1), total)


def descriptor_args(names, element: str, blocks, padding: str = "zero", fits: bool = True):
    """ArgSpecs of descriptor parameters `names` with the given blocks (`fits`: the launch saw a base
    and strides TMA takes)."""
    return [ArgSpec(name, f"tensordesc<{element},{'x'.join(map(str, block))},{padding}>", fits)
            for name, block in zip(names, blocks)]


@tw.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    """Tutorial 09's grouped order: the (row, column) of tile `tile_id`."""
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@tw.jit
def tma_matmul_bt(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                  BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  WARP_SPECIALIZE: tl.constexpr = False):
    """Tutorial 09's `matmul_kernel_tma`: grouped program order, B given as N x K (loaded then
    transposed), the fp32 accumulator stored as fp16 through a descriptor; `WARP_SPECIALIZE`: the k
    loop's copies by a producer warp group."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    pid_m, pid_n = _compute_pid(pid, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    offs_am = pid_m * BLOCK_SIZE_M
    offs_bn = pid_n * BLOCK_SIZE_N
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(k_tiles, warp_specialize=WARP_SPECIALIZE):
        offs_k = k * BLOCK_SIZE_K
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_bn, offs_k])
        accumulator = tl.dot(a, b.T, accumulator)
    c_desc.store([offs_am, offs_bn], accumulator.to(tl.float16))


@tw.jit
def tma_persistent_matmul_ws(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr,
                             WARP_SPECIALIZE: tl.constexpr):
    """Tutorial 09's `matmul_kernel_tma_persistent` (without the epilogue subtiling): a tile loop
    over this program's tiles marked `warp_specialize`, a k loop of descriptor loads inside."""
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True,
                            warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        c_desc.store([pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N], accumulator.to(tl.float16))


@tw.jit
def tma_persistent_matmul_to_pointers(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr,
                                      BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr):
    """A persistent matmul on host descriptors whose result goes out through plain pointers (masked
    at the edges): the epilogue's staging tile of the pointer path lies over the TMA rings, which
    the next tile's copies refill (passes/shared_reuse.py)."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        row = (tile // tiles_n) * BM
        col = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, col]), acc)
        r = row + tl.arange(0, BM)[:, None]
        c = col + tl.arange(0, BN)[None, :]
        tl.store(c_ptr + r * N + c, acc, mask=(r < M) & (c < N))


@tw.jit
def tma_attention(q_desc, k_desc, v_desc, o_desc, n_ctx, qk_scale, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """Tutorial 06's forward loop on host descriptors (one head of n_ctx rows): K read through `.T`,
    the key offset carried by the loop (`offset_k += BLOCK_N`, as the tutorial's `offsetk_y`), and
    keys past n_ctx masked out of the scores (their K and V rows read the descriptor's zeros)."""
    row = tl.program_id(0) * BLOCK_M
    q = q_desc.load([row, 0])
    cols = tl.arange(0, BLOCK_N)
    row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, q_desc.block_shape[1]], dtype=tl.float32)
    offset_k = 0
    for start in range(0, n_ctx, BLOCK_N):
        scores = tl.dot(q, k_desc.load([offset_k, 0]).T) * qk_scale
        scores = tl.where((start + cols)[None, :] < n_ctx, scores, -1.0e6)
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        acc = tl.dot(p.to(tl.float16), v_desc.load([offset_k, 0]), acc * rescale[:, None])
        row_sum = row_sum * rescale + tl.sum(p, 1)
        row_max = new_max
        offset_k += BLOCK_N
    o_desc.store([row, 0], (acc / row_sum[:, None]).to(tl.float16))
