"""A block-scaled matmul in the shape of Triton's tutorial 10 (our own code): A (M x K) and B (N x K)
in fp8 e4m3 or packed fp4 e2m1 through host tensor descriptors, their scales in the 5-D layout of
NVIDIA's block-scaled tensor cores (chunks of 128 rows x 4 scale columns, stored as 32 x 4 x 4 and
read through a [1, rep_m, rep_k, 2, 256] descriptor block), `tl.dot_scaled(a, sa, .., b.T, sb, ..)`
in a K loop, C stored as fp16. `make_inputs` builds the tiles with NumPy and a float64 reference."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.tools.tensor_descriptor import TensorDescriptor

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
# format -> (A format, B format, elements per byte of A, of B, scale group)
FORMATS = {"mxfp8": ("e4m3", "e4m3", 1, 1, 32), "mxfp4": ("e2m1", "e2m1", 2, 2, 32),
           "nvfp4": ("e2m1", "e2m1", 2, 2, 16), "mixed": ("e4m3", "e2m1", 1, 2, 32)}


@tw.jit
def block_scaled_matmul(a_desc, a_scale_desc, b_desc, b_scale_desc, c_desc, K: tl.constexpr,
                        FORMAT_A: tl.constexpr, FORMAT_B: tl.constexpr, PACK_A: tl.constexpr,
                        PACK_B: tl.constexpr, VEC: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rep_m: tl.constexpr = BLOCK_M // 128
    rep_n: tl.constexpr = BLOCK_N // 128
    rep_k: tl.constexpr = BLOCK_K // VEC // 4
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K // BLOCK_K, num_stages=2):
        a = a_desc.load([pid_m * BLOCK_M, k * (BLOCK_K // PACK_A)])
        b = b_desc.load([pid_n * BLOCK_N, k * (BLOCK_K // PACK_B)])
        scale_a = a_scale_desc.load([0, pid_m * rep_m, k * rep_k, 0, 0])
        scale_b = b_scale_desc.load([0, pid_n * rep_n, k * rep_k, 0, 0])
        scale_a = scale_a.reshape(rep_m, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(
            BLOCK_M, BLOCK_K // VEC)
        scale_b = scale_b.reshape(rep_n, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(
            BLOCK_N, BLOCK_K // VEC)
        acc = tl.dot_scaled(a, scale_a, FORMAT_A, b.T, scale_b, FORMAT_B, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


def _operand(rng, rows: int, k: int, fmt: str):
    """(data, float64 numbers): fp8 e4m3 values, or e2m1 codes packed two per byte."""
    if fmt == "e4m3":  # exponents 0 (subnormal) to 9: |x| <= 7.5, so fp16 C cannot overflow
        sign = rng.integers(0, 2, (rows, k)) << 7
        bits = (sign | rng.integers(0, 10, (rows, k)) << 3 | rng.integers(0, 8, (rows, k)))
        data = bits.astype(np.uint8).view(ml_dtypes.float8_e4m3fn)
        return data, data.astype(np.float64)
    codes = rng.integers(0, 16, (rows, k)).astype(np.uint8)
    return codes[:, 0::2] | (codes[:, 1::2] << 4), E2M1[codes]


def _scales(rng, rows: int, k: int, vec: int):
    """(5-D tiles, float64 factors rows x k/vec): e8m0 bytes for MX, positive float8e4nv for nvfp4."""
    columns = k // vec
    if vec == 16:
        values = rng.uniform(0.05, 2.0, (rows, columns)).astype(ml_dtypes.float8_e4m3fn)
        factors = values.astype(np.float64)
    else:
        values = rng.integers(122, 129, (rows, columns)).astype(np.uint8)  # 2**-5 .. 2
        factors = 2.0 ** (values.astype(np.float64) - 127)
    # natural[c * 128 + r4 * 32 + r32, kc * 4 + k4] = packed[c, kc, r32, r4, k4]
    packed = values.reshape(rows // 128, 4, 32, columns // 4, 4).transpose(0, 3, 2, 1, 4)
    return np.ascontiguousarray(packed).reshape(1, rows // 128, columns // 4, 2, 256), factors


def make_inputs(scale_type: str, m: int, n: int, k: int, blocks: tuple[int, int, int], seed: int):
    """The five host descriptors (C poisoned with NaN), C itself and the float64 reference."""
    fmt_a, fmt_b, pack_a, pack_b, vec = FORMATS[scale_type]
    rng = np.random.default_rng(seed)
    a, a_num = _operand(rng, m, k, fmt_a)
    b, b_num = _operand(rng, n, k, fmt_b)
    sa, sa_num = _scales(rng, m, k, vec)
    sb, sb_num = _scales(rng, n, k, vec)
    reference = (a_num * np.repeat(sa_num, vec, axis=1)) @ (b_num * np.repeat(sb_num, vec, axis=1)).T
    bm, bn, bk = blocks
    c = np.full((m, n), np.nan, np.float16)
    descriptors = [TensorDescriptor.from_tensor(a, [bm, bk // pack_a]),
                   TensorDescriptor.from_tensor(sa, [1, bm // 128, bk // vec // 4, 2, 256]),
                   TensorDescriptor.from_tensor(b, [bn, bk // pack_b]),
                   TensorDescriptor.from_tensor(sb, [1, bn // 128, bk // vec // 4, 2, 256]),
                   TensorDescriptor.from_tensor(c, [bm, bn])]
    constexprs = dict(K=k, FORMAT_A=fmt_a, FORMAT_B=fmt_b, PACK_A=pack_a, PACK_B=pack_b, VEC=vec,
                      BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    return descriptors, constexprs, c, reference


@tw.jit
def tutorial_block_scaled_matmul(a_desc, a_scale_desc, b_desc, b_scale_desc, c_desc,
                                 M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                                 FORMAT_A: tl.constexpr, FORMAT_B: tl.constexpr,
                                 PACK_A: tl.constexpr, PACK_B: tl.constexpr, VEC: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                 BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    """`block_scaled_matmul` written as tutorial 10 writes its kernel: a 1-D grid of C tiles, the K
    offsets carried through the loop (the operand loads' innermost offsets are then not provably
    on 16-byte chunks, so they stay pointer loads, as the tutorial's do), NUM_STAGES on the loop."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    rep_m: tl.constexpr = BLOCK_M // 128
    rep_n: tl.constexpr = BLOCK_N // 128
    rep_k: tl.constexpr = BLOCK_K // VEC // 4
    offs_k_a = 0
    offs_k_b = 0
    offs_scale_k = 0
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = a_desc.load([pid_m * BLOCK_M, offs_k_a])
        b = b_desc.load([pid_n * BLOCK_N, offs_k_b])
        scale_a = a_scale_desc.load([0, pid_m * rep_m, offs_scale_k, 0, 0])
        scale_b = b_scale_desc.load([0, pid_n * rep_n, offs_scale_k, 0, 0])
        scale_a = scale_a.reshape(rep_m, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(
            BLOCK_M, BLOCK_K // VEC)
        scale_b = scale_b.reshape(rep_n, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(
            BLOCK_N, BLOCK_K // VEC)
        acc = tl.dot_scaled(a, scale_a, FORMAT_A, b.T, scale_b, FORMAT_B, acc)
        offs_k_a += BLOCK_K // PACK_A
        offs_k_b += BLOCK_K // PACK_B
        offs_scale_k += rep_k
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


def tutorial_blocks(scale_type: str) -> tuple[int, int, int]:
    """Tutorial 10's tiles (`initialize_block_scaled`): 128 x 256, BLOCK_K 256 for fp4, else 128."""
    return 128, 256, 256 if "fp4" in scale_type else 128


TUTORIAL_STAGES = 4  # the tutorial's configs["num_stages"]
