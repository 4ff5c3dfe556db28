"""The five canonical kernels, written as in Triton's tutorials: vector add, fused softmax, blocked matmul,
layer-norm forward and low-memory dropout. Each entry of CASES gives what `tw.compile` needs."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in tl.range(row_start, n_rows, row_step, num_stages=2):
        row_ptr = in_ptr + row * in_row_stride
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        row_values = tl.load(row_ptr + cols, mask=mask, other=-float("inf"))
        shifted = row_values - tl.max(row_values, axis=0)
        numerator = tl.exp(shifted)
        denominator = tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                  stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.swizzle2d(pid // num_pid_n, pid % num_pid_n, num_pid_m, num_pid_n, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tw.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@tw.jit
def seeded_dropout_kernel(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


_P32 = "*fp32:16"
CASES = {  # name -> (kernel, signature, constexprs) for compiling to PTX
    "vector_add": (add_kernel, {"x_ptr": _P32, "y_ptr": _P32, "out_ptr": _P32, "n_elements": "i32"},
                   {"BLOCK_SIZE": 1024}),
    "softmax": (softmax_kernel, {"out_ptr": _P32, "in_ptr": _P32, "in_row_stride": "i32",
                                 "out_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                {"BLOCK_SIZE": 1024}),
    "matmul": (matmul_kernel, {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32",
                               "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_ak": "i32:1",
                               "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_cm": "i32:16",
                               "stride_cn": "i32:1"},
               {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}),
    "layer_norm": (layer_norm_fwd_kernel, {"X": _P32, "Y": _P32, "W": _P32, "B": _P32, "Mean": _P32,
                                           "Rstd": _P32, "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 512}),
    "dropout": (seeded_dropout_kernel, {"x_ptr": _P32, "output_ptr": _P32, "n_elements": "i32", "p": "fp32",
                                        "seed": "i32"}, {"BLOCK_SIZE": 1024}),
}
