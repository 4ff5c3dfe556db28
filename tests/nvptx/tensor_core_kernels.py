"""Kernels of the tensor-core tests: a masked matmul with any strides (so A and B can be transposed
views), a persistent matmul (a tile loop around the k loop), a batched 3-D dot, and the signature of
a matmul for a dtype."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  PRECISION: tl.constexpr, OUT_F16: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    if OUT_F16:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=c_ptr.dtype.element_ty)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BK) & (offs_n[None, :] < N), other=0)
        if OUT_F16:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc += tl.dot(a, b, input_precision=PRECISION)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tw.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr, PROGRAMS: tl.constexpr):
    """A persistent matmul: `PROGRAMS` programs walk the output tiles in steps of `PROGRAMS`, each
    tile a pipelined k loop and then its epilogue (the loop nest of Triton's tutorial 09)."""
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
        offs_m = (tile // tiles_n) * BM + tl.arange(0, BM)
        offs_n = (tile % tiles_n) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            offs_k = k * BK + tl.arange(0, BK)
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                        mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                        mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tw.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    b_idx = tl.arange(0, B)[:, None, None]
    m_idx = tl.arange(0, M)[None, :, None]
    n_idx = tl.arange(0, N)[None, None, :]
    k_row = tl.arange(0, K)[None, None, :]
    k_col = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + b_idx * M * K + m_idx * K + k_row)
    b = tl.load(b_ptr + b_idx * K * N + k_col * N + n_idx)
    tl.store(c_ptr + b_idx * M * N + m_idx * N + n_idx, tl.dot(a, b))


# name -> (signature pointer type, NumPy dtype of the inputs, accumulator / output pointer type)
DTYPES = {
    "fp16": ("*fp16", np.float16, "*fp32"),
    "bf16": ("*bf16", ml_dtypes.bfloat16, "*fp32"),
    "fp32": ("*fp32", np.float32, "*fp32"),
    "int8": ("*i8", np.int8, "*i32"),
    "fp8e4nv": ("*fp8e4nv", ml_dtypes.float8_e4m3fn, "*fp32"),
    "fp8e5": ("*fp8e5", ml_dtypes.float8_e5m2, "*fp32"),
}


def matmul_signature(dtype: str, out: str | None = None, trans_a: bool = False,
                     trans_b: bool = False, sizes: tuple[int, int, int] = (64, 64, 64)) -> dict:
    """The signature a launch would specialize: the contiguous stride of each operand is 1, and
    M, N, K are `:16` where `sizes` are multiples of 16."""
    ptr, _, acc = DTYPES[dtype]
    out = out or acc
    sig = {"a_ptr": f"{ptr}:16", "b_ptr": f"{ptr}:16", "c_ptr": f"{out}:16"}
    unit = {"stride_am" if trans_a else "stride_ak", "stride_bk" if trans_b else "stride_bn",
            "stride_cn"}
    for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
                 "stride_cn"):
        sig[name] = "i32:1" if name in unit else "i32"
    m, n, k = sizes
    strides = {"stride_am": m if trans_a else k, "stride_ak": m, "stride_bk": n,
               "stride_bn": k if trans_b else n, "stride_cm": n}
    for name, size in [*zip("MNK", sizes), *strides.items()]:
        if name not in unit:
            sig[name] = "i32:16" if size % 16 == 0 else "i32"
    return sig


def random_operands(dtype: str, m: int, n: int, k: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Fresh random A (m x k) and B (k x n): integers in [-100, 100) for int8, normals (scaled into
    fp8's range) otherwise."""
    np_dtype = DTYPES[dtype][1]
    if dtype == "int8":
        return (rng.integers(-100, 100, (m, k)).astype(np.int8),
                rng.integers(-100, 100, (k, n)).astype(np.int8))
    return (rng.standard_normal((m, k)).astype(np_dtype), rng.standard_normal((k, n)).astype(np_dtype))


# relative error allowed against the float64 product of the (already rounded) inputs
TOLERANCE = {"fp16": 1e-5, "bf16": 1e-5, "fp32": 3e-3, "tf32": 3e-3, "tf32x3": 1e-5, "ieee": 1e-5,
             "int8": 0.0, "fp8e4nv": 1e-5, "fp8e5": 1e-5, "fp16_acc": 5e-3}
