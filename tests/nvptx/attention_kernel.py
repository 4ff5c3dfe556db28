"""Flash-attention kernels shaped like Triton's tutorial 06: the forward (online softmax over key
blocks, descriptors made in the kernel, K read through `.T`, a constexpr-bounded loop if not causal,
an off-band then on-band pass when causal), a masked variant on pointers for any sequence length,
the backward's dK/dV loop (`attention_dkdv`), and NumPy float64 references. fp16 or bf16, as the
pointers are. Used by the emulated and GPU attention tests."""

from __future__ import annotations

import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def _key_blocks(acc, row_sum, row_max, q, k_desc, v_desc, first_row, qk_scale, lo, hi, rows, cols,
                BLOCK_N: tl.constexpr, ON_BAND: tl.constexpr):
    """Folds the key/value blocks lo..hi into the running (acc, row_sum, row_max)."""
    for start in tl.range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        scores = tl.dot(q, k_desc.load([first_row + start, 0]).T)
        if ON_BAND:
            visible = rows[:, None] >= start + cols[None, :]
            scores = scores * qk_scale + tl.where(visible, 0.0, -1.0e6)
            new_max = tl.maximum(row_max, tl.max(scores, 1))
            scores -= new_max[:, None]
        else:
            new_max = tl.maximum(row_max, tl.max(scores, 1) * qk_scale)
            scores = scores * qk_scale - new_max[:, None]
        p = tl.math.exp2(scores)
        rescale = tl.math.exp2(row_max - new_max)
        acc = acc * rescale[:, None]
        acc = tl.dot(p.to(q.dtype), v_desc.load([first_row + start, 0]), acc)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        row_max = new_max
    return acc, row_sum, row_max


@tw.jit
def attention_forward(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale,
                      N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """o = softmax(q k^T * sm_scale) v per (batch, head); q, k, v, o of shape
    [batch*heads*N_CTX, HEAD_DIM] in fp16 or bf16; lse gets each row's base-2 log-sum-exp. Grid:
    (N_CTX // BLOCK_M, batch*heads). Causal needs BLOCK_M a multiple of BLOCK_N (the on-band pass
    covers BLOCK_M keys), as in the tutorial."""
    block_m_index = tl.program_id(0)
    head = tl.program_id(1)
    total_rows = tl.num_programs(1) * N_CTX
    shape, strides = [total_rows, HEAD_DIM], [HEAD_DIM, 1]
    q_desc = tl.make_tensor_descriptor(q_ptr, shape, strides, [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr, shape, strides, [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr, shape, strides, [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(o_ptr, shape, strides, [BLOCK_M, HEAD_DIM])
    first_row = head * N_CTX
    rows = block_m_index * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = q_desc.load([first_row + block_m_index * BLOCK_M, 0])
    if CAUSAL:
        acc, row_sum, row_max = _key_blocks(acc, row_sum, row_max, q, k_desc, v_desc, first_row,
                                            qk_scale, 0, block_m_index * BLOCK_M,
                                            rows, cols, BLOCK_N, False)
        acc, row_sum, row_max = _key_blocks(acc, row_sum, row_max, q, k_desc, v_desc, first_row,
                                            qk_scale, block_m_index * BLOCK_M,
                                            (block_m_index + 1) * BLOCK_M, rows, cols, BLOCK_N,
                                            True)
    else:
        acc, row_sum, row_max = _key_blocks(acc, row_sum, row_max, q, k_desc, v_desc, first_row,
                                            qk_scale, 0, N_CTX, rows, cols, BLOCK_N, False)
    tl.store(lse_ptr + head * N_CTX + rows, row_max + tl.math.log2(row_sum))
    o_desc.store([first_row + block_m_index * BLOCK_M, 0],
                 (acc / row_sum[:, None]).to(o_ptr.dtype.element_ty))


@tw.jit
def attention_forward_masked(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, n_ctx,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr):
    """As `attention_forward` on plain pointers, for any `n_ctx`: rows past it are masked on load
    and store, keys past it get no weight. Grid: (cdiv(n_ctx, BLOCK_M), batch*heads)."""
    block_m_index = tl.program_id(0)
    head = tl.program_id(1) * n_ctx * HEAD_DIM
    rows = block_m_index * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < n_ctx,
                other=0.0)
    row_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = tl.minimum((block_m_index + 1) * BLOCK_M, n_ctx) if CAUSAL else n_ctx
    for start in range(0, hi, BLOCK_N):
        keys = start + cols
        k = tl.load(k_ptr + head + keys[None, :] * HEAD_DIM + dims[:, None],
                    mask=keys[None, :] < n_ctx, other=0.0)
        scores = tl.dot(q, k) * qk_scale
        visible = keys[None, :] < n_ctx
        if CAUSAL:
            visible = visible & (rows[:, None] >= keys[None, :])
        scores = tl.where(visible, scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        acc = acc * rescale[:, None]
        v = tl.load(v_ptr + head + keys[:, None] * HEAD_DIM + dims[None, :],
                    mask=keys[:, None] < n_ctx, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        row_max = new_max
    out = (acc / row_sum[:, None]).to(o_ptr.dtype.element_ty)
    tl.store(o_ptr + head + rows[:, None] * HEAD_DIM + dims[None, :], out,
             mask=rows[:, None] < n_ctx)


@tw.jit
def attention_dkdv(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, delta_ptr, dk_ptr, dv_ptr, n_ctx,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr):
    """The key block's dK and dV as tutorial 06's `_attn_bwd_dkdv` computes them: each step loads
    Q^T and dO once and reads each in two dots, once through `tl.trans`; the query rows are a
    carried counter, which the causal mask reads too. K is pre-scaled to base 2 and M is the
    base-2 log-sum-exp, as the tutorial's; dK is left unscaled. Grid: (n_ctx // BLOCK_N, heads)."""
    head = tl.program_id(1)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    rows = head * n_ctx * HEAD_DIM + offs_n[:, None] * HEAD_DIM + dims[None, :]
    k = tl.load(k_ptr + rows)
    v = tl.load(v_ptr + rows)
    offs_m = tl.arange(0, BLOCK_M)
    qT_ptrs = q_ptr + head * n_ctx * HEAD_DIM + offs_m[None, :] * HEAD_DIM + dims[:, None]
    do_ptrs = do_ptr + head * n_ctx * HEAD_DIM + offs_m[:, None] * HEAD_DIM + dims[None, :]
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    curr_m = 0
    for _ in range(n_ctx // BLOCK_M):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BLOCK_M)
        m = tl.load(m_ptr + head * n_ctx + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) - m[None, :])
        if CAUSAL:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(tl.float16), do)
        delta = tl.load(delta_ptr + head * n_ctx + offs_m)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        dk += tl.dot(dsT.to(tl.float16), tl.trans(qT))
        curr_m += BLOCK_M
        qT_ptrs += BLOCK_M * HEAD_DIM
        do_ptrs += BLOCK_M * HEAD_DIM
    tl.store(dk_ptr + rows, dk.to(tl.float16))
    tl.store(dv_ptr + rows, dv.to(tl.float16))


DKDV_SIGNATURE = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16",
                  "do_ptr": "*fp16:16", "m_ptr": "*fp32:16", "delta_ptr": "*fp32:16",
                  "dk_ptr": "*fp16:16", "dv_ptr": "*fp16:16", "n_ctx": "i32:16"}


def dkdv_reference(q, k, v, do, causal: bool):
    """(dK, dV, M, delta) of one head in float64 for `attention_dkdv`: k is the pre-scaled (base-2)
    K, M the base-2 log-sum-exp of q @ k.T, delta the rows of O * dO."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    scores = q @ k.T
    if causal:
        n = scores.shape[0]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    top = scores.max(1, keepdims=True)
    m = top[:, 0] + np.log2(np.exp2(scores - top).sum(1))
    p = np.exp2(scores - m[:, None])
    delta = (p @ v * do).sum(1)
    ds = p * (do @ v.T - delta[:, None])
    return ds.T @ q, p.T @ do, m, delta


def signature(dtype: str = "fp16", aligned: bool = False) -> dict:
    """`attention_forward`'s signature for fp16 or bf16 operands; `aligned`: the pointers specialized
    as 16-byte aligned, as a launch on torch or CuPy arrays specializes them, which sm_90a needs to
    build the descriptors' tensor maps (TMA) in the kernel; without it they stay on pointers."""
    tag = ":16" if aligned else ""
    return {"q_ptr": f"*{dtype}{tag}", "k_ptr": f"*{dtype}{tag}", "v_ptr": f"*{dtype}{tag}",
            "o_ptr": f"*{dtype}{tag}", "lse_ptr": f"*fp32{tag}", "sm_scale": "fp32"}


def masked_signature(dtype: str = "fp16") -> dict:
    return {"q_ptr": f"*{dtype}", "k_ptr": f"*{dtype}", "v_ptr": f"*{dtype}", "o_ptr": f"*{dtype}",
            "sm_scale": "fp32", "n_ctx": "i32"}


SIGNATURE = signature("fp16")


def reference(q, k, v, sm_scale: float, causal: bool):
    """(o, base-2 log-sum-exp) of one head in float64; q, k, v of shape [N_CTX, HEAD_DIM]."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    scores = q @ k.T * sm_scale
    if causal:
        n = scores.shape[0]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    top = scores.max(1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(1, keepdims=True)
    lse = (top + np.log(total))[:, 0] / np.log(2.0)
    return weights @ v / total, lse
