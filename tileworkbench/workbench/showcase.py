"""The showcase kernels of `tileworkbench demo` and the notebooks: vector add, fused softmax, matmul and
layer norm, each with a runner that makes fresh inputs, launches it and checks it against NumPy.

The kernels are written exactly as for Triton (only the imports differ).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
def softmax_kernel(
    out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


@tw.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] + k < K)
        b_mask = (offs_k[:, None] + k < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@tw.jit
def layer_norm_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(y_ptr + row * row_stride + cols, y, mask=mask)


# -- runners: fresh inputs, poisoned outputs, a NumPy float64 reference -------------------------------
@dataclass
class ShowcaseRun:
    """One showcase launch: the kernel name, its output, the float64 reference and the check tolerance."""

    name: str
    out: Any
    ref: np.ndarray
    rtol: float


def _xp(on_gpu: bool):
    if on_gpu:
        import cupy

        return cupy
    return np


def _to_device(xp, array: np.ndarray):
    return xp.asarray(array)


def run_add(on_gpu: bool, n: int = 98_432, seed: int = 0) -> ShowcaseRun:
    rng = np.random.default_rng(seed)
    xp = _xp(on_gpu)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = _to_device(xp, np.full(n, np.nan, np.float32))
    block = 1024
    add_kernel[(tw.cdiv(n, block),)](_to_device(xp, x), _to_device(xp, y), out, n, BLOCK_SIZE=block)
    return ShowcaseRun("add_kernel", out, x.astype(np.float64) + y, 1e-6)


def run_softmax(on_gpu: bool, rows: int = 64, cols: int = 781, seed: int = 1) -> ShowcaseRun:
    rng = np.random.default_rng(seed)
    xp = _xp(on_gpu)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = _to_device(xp, np.full_like(x, np.nan))
    softmax_kernel[(rows,)](
        out, _to_device(xp, x), cols, cols, cols, BLOCK_SIZE=tw.next_power_of_2(cols)
    )
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return ShowcaseRun("softmax_kernel", out, e / e.sum(axis=1, keepdims=True), 1e-5)


def run_matmul(on_gpu: bool, m: int = 128, n: int = 96, k: int = 80, seed: int = 2) -> ShowcaseRun:
    rng = np.random.default_rng(seed)
    xp = _xp(on_gpu)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = _to_device(xp, np.full((m, n), np.nan, np.float16))
    bm, bn, bk = (64, 64, 32)
    grid = (tw.cdiv(m, bm), tw.cdiv(n, bn))
    matmul_kernel[grid](
        _to_device(xp, a),
        _to_device(xp, b),
        c,
        m,
        n,
        k,
        k,
        1,
        n,
        1,
        n,
        1,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
    )
    return ShowcaseRun("matmul_kernel", c, a.astype(np.float64) @ b.astype(np.float64), 1e-2)


def run_layer_norm(on_gpu: bool, rows: int = 48, cols: int = 500, seed: int = 3) -> ShowcaseRun:
    rng = np.random.default_rng(seed)
    xp = _xp(on_gpu)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    y = _to_device(xp, np.full_like(x, np.nan))
    eps = 1e-5
    layer_norm_kernel[(rows,)](
        _to_device(xp, x),
        y,
        _to_device(xp, w),
        _to_device(xp, b),
        cols,
        cols,
        eps,
        BLOCK_SIZE=tw.next_power_of_2(cols),
    )
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    ref = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * w + b
    return ShowcaseRun("layer_norm_kernel", y, ref, 1e-4)


RUNNERS: dict[str, Callable[[bool], ShowcaseRun]] = {
    "vector add": run_add,
    "fused softmax": run_softmax,
    "matmul": run_matmul,
    "layer norm": run_layer_norm,
}
