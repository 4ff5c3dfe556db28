"""Kernels the NVPTX tests compile: one per feature family, with the signature and constexprs to
compile them with (`CASES`: name -> (kernel, signature, constexprs, num_warps))."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl
from canonical_kernels import add_kernel  # the tests' one vector add (tests/kernels)


@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@tw.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@tw.jit
def row_argmax_kernel(x_ptr, out_ptr, idx_ptr, N: tl.constexpr, M: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + rows, tl.max(x, axis=1))
    tl.store(idx_ptr + rows, tl.argmax(x, axis=1))


@tw.jit
def cumsum_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.cumsum(x, axis=0))


@tw.jit
def sort_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


@tw.jit
def atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))
    tl.atomic_max(out_ptr + 1 + offs % 4, x, mask=offs < n)


@tw.jit
def casts_kernel(x_ptr, h_ptr, b_ptr, i_ptr, f8_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(b_ptr + offs, x.to(tl.bfloat16))
    tl.store(i_ptr + offs, x.to(tl.int32))
    tl.store(f8_ptr + offs, x.to(tl.float8e5).to(tl.float32))


@tw.jit
def math_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.exp(x) + tl.log(tl.abs(x) + 1) + tl.sqrt(tl.abs(x)) + tl.rsqrt(tl.abs(x) + 1)
    y += tl.sin(x) + tl.cos(x) + tl.exp2(x) + tl.log2(tl.abs(x) + 1) + tl.erf(x)
    y += tl.floor(x) + tl.ceil(x) + tl.fma(x, x, x) + tl.sqrt_rn(tl.abs(x)) + tl.div_rn(x, 3.0)
    tl.store(y_ptr + offs, y)


@tw.jit
def f64_math_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x) + tl.sin(x) + x / 3.0)


@tw.jit
def control_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    i = 0
    while i < n:
        acc += tl.load(x_ptr + i * BLOCK + offs)
        i += 1
    if n > 2:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    tl.store(y_ptr + offs, acc)


@tw.jit
def shapes_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    j = tl.join(x, y)
    a, b = tl.split(j)
    t = tl.trans(tl.reshape(x, (BLOCK // 8, 8)))
    s = tl.sum(t, axis=0)
    tl.store(z_ptr + offs, a * b)
    tl.store(z_ptr + BLOCK + tl.arange(0, BLOCK // 8), s)


@tw.jit(debug=True)  # device asserts are compiled in debug mode only (bounds checks come with it)
def debug_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x=", x)
    tl.device_assert(x < 1e30, "too large")


@tw.jit
def columns_kernel(x_ptr, sum_ptr, scan_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(sum_ptr + cols, tl.sum(x, axis=0))
    tl.store(scan_ptr + rows[:, None] * N + cols[None, :], tl.cumsum(x, axis=0, reverse=True))


@tw.jit
def gather_hist_kernel(x_ptr, y_ptr, h_ptr, t_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.gather(x, (offs * 7) % BLOCK, 0))
    tl.store(h_ptr + tl.arange(0, 16), tl.histogram(offs % 13, 16))
    tl.store(t_ptr + tl.arange(0, 8), tl.topk(x, 8))


F32 = "*fp32:16"
@tw.jit
def masked_widths_kernel(b_ptr, i8_ptr, i16_ptr, d_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Masked loads and stores of 1-, 2- and 8-byte elements with `other`, and cache hints."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    flag = tl.load(b_ptr + offs, mask=m, other=1)
    small = tl.load(i8_ptr + offs, mask=m, other=-3, cache_modifier=".cg")
    mid = tl.load(i16_ptr + offs, mask=m, other=7, eviction_policy="evict_last")
    wide = tl.load(d_ptr + offs, mask=m, other=0.5, cache_modifier=".cv")
    total = tl.where(flag, wide, -wide) + small.to(tl.float64) + mid.to(tl.float64)
    tl.store(out_ptr + offs, total, cache_modifier=".cs", eviction_policy="evict_first")  # .cs wins
    tl.store(i8_ptr + offs, (small + 1).to(tl.int8), mask=m, eviction_policy="evict_first")


CASES = {
    "add": (add_kernel, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n_elements": "i32:16"},
            {"BLOCK_SIZE": 1024}, 4),
    "softmax": (softmax_kernel, {"out_ptr": F32, "in_ptr": F32, "in_stride": "i32:16",
                                 "out_stride": "i32:16", "n_cols": "i32:16"}, {"BLOCK": 1024}, 4),
    "layer_norm": (layer_norm_kernel, {"x_ptr": "*fp16:16", "y_ptr": "*fp16:16", "w_ptr": "*fp16:16",
                                       "b_ptr": "*fp16:16", "stride": "i32:16", "n_cols": "i32",
                                       "eps": "fp32"}, {"BLOCK": 2048}, 8),
    "matmul": (matmul_kernel, {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": F32, "M": "i32",
                               "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32:16",
                               "stride_cm": "i32:16"}, {"BM": 32, "BN": 32, "BK": 16}, 4),
    "argmax": (row_argmax_kernel, {"x_ptr": F32, "out_ptr": F32, "idx_ptr": "*i32:16"},
               {"N": 64, "M": 8}, 4),
    "cumsum": (cumsum_kernel, {"x_ptr": F32, "y_ptr": F32}, {"BLOCK": 256}, 4),
    "sort": (sort_kernel, {"x_ptr": F32, "y_ptr": F32}, {"BLOCK": 64}, 2),
    "atomic": (atomic_kernel, {"x_ptr": F32, "out_ptr": F32, "n": "i32"}, {"BLOCK": 256}, 4),
    "casts": (casts_kernel, {"x_ptr": F32, "h_ptr": "*fp16:16", "b_ptr": "*bf16:16", "i_ptr": "*i32:16",
                             "f8_ptr": F32}, {"BLOCK": 512}, 4),
    "math": (math_kernel, {"x_ptr": F32, "y_ptr": F32}, {"BLOCK": 256}, 4),
    "f64_math": (f64_math_kernel, {"x_ptr": "*fp64:16", "y_ptr": "*fp64:16"}, {"BLOCK": 128}, 4),
    "control": (control_kernel, {"x_ptr": F32, "y_ptr": F32, "n": "i32"}, {"BLOCK": 256}, 4),
    "shapes": (shapes_kernel, {"x_ptr": F32, "y_ptr": F32, "z_ptr": F32}, {"BLOCK": 256}, 4),
    "columns": (columns_kernel, {"x_ptr": F32, "sum_ptr": F32, "scan_ptr": F32}, {"M": 64, "N": 32}, 4),
    "gather_hist": (gather_hist_kernel, {"x_ptr": F32, "y_ptr": F32, "h_ptr": "*i32:16", "t_ptr": F32},
                    {"BLOCK": 128}, 4),
    "debug": (debug_kernel, {"x_ptr": F32}, {"BLOCK": 128}, 4),
    "masked_widths": (masked_widths_kernel, {"b_ptr": "*i1", "i8_ptr": "*i8", "i16_ptr": "*i16",
                                             "d_ptr": "*fp64:16", "out_ptr": "*fp64:16", "n": "i32"},
                      {"BLOCK": 128}, 4),
}


def compile_case(name: str, arch: str = "sm_90"):
    fn, signature, constexprs, num_warps = CASES[name]
    return tw.compile(fn, signature=signature, constexprs=constexprs, target=arch,
                      num_warps=num_warps, use_cache=False)
