"""Reference solutions of the twelve tile puzzles (puzzle_set.py states them; the notebook only
loads these, so a learner sees a solution when they ask for it). tests/workbench/test_puzzle_set.py
runs each in the interpreter, and on a GPU, against its float64 NumPy spec with the output poisoned.

Every kernel takes its inputs, then its output, then the sizes, then the block sizes as constexprs,
in the order the puzzle's statement gives.
"""

from __future__ import annotations

from .. import jit
from .. import language as tl


@jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x + 10.0)


@jit
def add_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < N0
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x + 10.0, mask=mask)


@jit
def outer_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None])


@jit
def outer_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=mask)


@jit
def outer_relu_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = tl.maximum(x[None, :] * y[:, None], 0.0)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=mask)


@jit
def outer_relu_backward_kernel(
    x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    offs = j[:, None] * N0 + i[None, :]
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + i, mask=i < N0)
    dz = tl.load(dz_ptr + offs, mask=mask)
    # d relu(x * y) / dx = y where x * y > 0, and 0 elsewhere
    dx = tl.where(x * y[None, :] > 0, dz * y[None, :], 0.0)
    tl.store(dx_ptr + offs, dx, mask=mask)


@jit
def long_sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), 1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@jit
def long_softmax_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    row_max = tl.full((B0,), float("-inf"), tl.float32)
    total = tl.zeros((B0,), dtype=tl.float32)
    # one pass for the max and the sum together: when the max grows, rescale the sum so far
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
        new_max = tl.maximum(row_max, tl.max(x, 1))
        total = total * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max[:, None]), 1)
        row_max = new_max
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        offs = rows[:, None] * T + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
        tl.store(z_ptr + offs, tl.exp(x - row_max[:, None]) / total[:, None], mask=mask)


@jit
def flash_attention_kernel(
    q_ptr, k_ptr, v_ptr, z_ptr, N0, T, scale, B0: tl.constexpr, B1: tl.constexpr, D: tl.constexpr
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + d[None, :], mask=rows[:, None] < N0, other=0.0)
    row_max = tl.full((B0,), float("-inf"), tl.float32)
    total = tl.zeros((B0,), dtype=tl.float32)
    acc = tl.zeros((B0, D), dtype=tl.float32)
    for start in range(0, T, B1):
        keys = start + tl.arange(0, B1)
        kv_offs = keys[:, None] * D + d[None, :]
        k = tl.load(k_ptr + kv_offs, mask=keys[:, None] < T, other=0.0)
        v = tl.load(v_ptr + kv_offs, mask=keys[:, None] < T, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(keys[None, :] < T, s, float("-inf"))  # keys past T get no weight
        new_max = tl.maximum(row_max, tl.max(s, 1))
        p = tl.exp(s - new_max[:, None])
        rescale = tl.exp(row_max - new_max)
        total = total * rescale + tl.sum(p, 1)
        acc = acc * rescale[:, None] + tl.dot(p, v)
        row_max = new_max
    out = acc / total[:, None]
    tl.store(z_ptr + rows[:, None] * D + d[None, :], out, mask=rows[:, None] < N0)


@jit
def conv2d_kernel(
    x_ptr,
    k_ptr,
    z_ptr,
    N0,
    H,
    W,
    KH: tl.constexpr,
    KW: tl.constexpr,
    BH: tl.constexpr,
    BW: tl.constexpr,
):
    image = tl.program_id(0)
    i = tl.arange(0, BH)
    j = tl.arange(0, BW)
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for a in tl.static_range(KH):
        for c in tl.static_range(KW):
            w = tl.load(k_ptr + a * KW + c)
            rows = i[:, None] + a
            cols = j[None, :] + c
            mask = (rows < H) & (cols < W)  # past the edge the image is zero
            x = tl.load(x_ptr + image * H * W + rows * W + cols, mask=mask, other=0.0)
            acc += x * w
    out_mask = (i[:, None] < H) & (j[None, :] < W)
    tl.store(z_ptr + image * H * W + i[:, None] * W + j[None, :], acc, mask=out_mask)


@jit
def matmul_kernel(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, K, BK):
        ks = start + tl.arange(0, BK)
        a = tl.load(
            a_ptr + rows[:, None] * K + ks[None, :],
            mask=(rows[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * N + cols[None, :],
            mask=(ks[:, None] < K) & (cols[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(z_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


@jit
def quant_matmul_kernel(
    a_ptr,
    w_ptr,
    scale_ptr,
    zero_ptr,
    z_ptr,
    M,
    N,
    K,
    G: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, K, BK):
        ks = start + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
        col_mask = cols[None, :] < N
        # eight 4-bit weights per int32: weight k of column n is nibble k % 8 of word (k // 8, n)
        packed = tl.load(w_ptr + (ks // 8)[:, None] * N + cols[None, :], mask=col_mask, other=0)
        q = (packed >> ((ks % 8) * 4)[:, None]) & 0xF
        group = (ks // G)[:, None] * N + cols[None, :]
        scale = tl.load(scale_ptr + group, mask=col_mask, other=0.0)
        zero = tl.load(zero_ptr + group, mask=col_mask, other=0)
        w = scale * (q - zero).to(tl.float32)
        acc += tl.dot(a, w)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(z_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)
