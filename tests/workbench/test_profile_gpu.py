"""`--profile` on a real GPU with Nsight Compute: vector add, softmax and a tensor-core matmul run in a
cell, profiled in a child process; the per-line sums equal ncu's kernel totals, the top stall reasons
are named with their lines, the measured DRAM bytes agree with ncu's DRAM throughput x duration within
10%, the hottest line of the matmul holds its tensor-core instructions, and the attention's two dots
(QK^T and PV) and its softmax each get their own lines' counters."""

from __future__ import annotations

import pytest

from attention_source import ATTENTION_KERNEL

from tileworkbench.workbench.ncu import find_ncu

pytest.importorskip("IPython")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(find_ncu() is None, reason="needs ncu (Nsight Compute)")]

HEAD = """
import cupy as cp
import tileworkbench as tw
import tileworkbench.language as tl
"""
ADD = HEAD + """
@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)

n = 1 << 24
x = cp.random.standard_normal(n, dtype=cp.float32)
y = cp.random.standard_normal(n, dtype=cp.float32)
out = cp.full(n, cp.nan, cp.float32)
add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""
SOFTMAX = HEAD + """
@tw.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

x = cp.random.standard_normal((4096, 1024), dtype=cp.float32)
out = cp.full_like(x, cp.nan)
softmax_kernel[(4096,)](out, x, 1024, BLOCK=1024)
"""
MATMUL = HEAD + """
@tw.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16))

m = 2048
a = cp.random.standard_normal((m, m), dtype=cp.float32).astype(cp.float16)
b = cp.random.standard_normal((m, m), dtype=cp.float32).astype(cp.float16)
c = cp.full((m, m), cp.nan, cp.float16)
mm_kernel[(m // 128, m // 128)](a, b, c, m, m, m, m, BM=128, BN=128, BK=64)
"""
ATTENTION = HEAD + "\n" + ATTENTION_KERNEL + """H, N, D = 16, 2048, 64
q, k, v = (cp.random.standard_normal((H, N, D), dtype=cp.float32).astype(cp.float16) for _ in range(3))
o = cp.full((H, N, D), cp.nan, cp.float16)
attn_kernel[(N // 128, H)](q, k, v, o, N, D ** -0.5, D=D, BM=128, BN=64, num_warps=8, num_stages=2)
"""
ATTENTION_REF = ("(lambda s: (cp.exp(s - s.max(-1, keepdims=True)) / cp.exp(s - s.max(-1, keepdims=True))"
                 ".sum(-1, keepdims=True)) @ v.astype(cp.float32))(q.astype(cp.float32) @ "
                 "k.astype(cp.float32).transpose(0, 2, 1) * D ** -0.5)")


def _profile(tilekernel, cell, ref):
    from tileworkbench.workbench.profile import check_totals
    from tileworkbench.workbench.profile_view import ProfileSection

    reports = tilekernel(f"--profile --ref '{ref}'", cell)
    report = reports[0]
    assert report.check.passed, report.check
    section = report.sections[0]
    assert isinstance(section, ProfileSection), section.text()
    prof = section.profile
    assert check_totals(prof) == []
    assert prof.column_total("Instructions Executed") > 0 and prof.unmatched == 0
    assert prof.stalls and all(note.line in report.source_lines for note in prof.stalls)
    dram = prof.metric("dram__bytes.sum.per_second")
    if dram is not None and prof.seconds:
        assert abs(prof.dram_bytes - dram * prof.seconds) <= 0.10 * prof.dram_bytes
    return report, section


def test_vector_add_profile(tilekernel):
    prof = _profile(tilekernel, ADD, "x + y")[1].profile
    assert prof.dram_bytes >= 0.9 * 3 * 4 * (1 << 24)  # two reads and a write, each once
    assert prof.stalls[0].reason in ("long_scoreboard", "lg_throttle", "drain")


def test_softmax_profile(tilekernel):
    _profile(tilekernel, SOFTMAX, "cp.exp(x - x.max(1, keepdims=True)) / "
                                  "cp.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)")


def test_matmul_profile_puts_tensor_cores_on_the_dot_line(tilekernel):
    report, section = _profile(tilekernel, MATMUL, "(a.astype(cp.float32) @ b.astype(cp.float32))")
    prof = section.profile
    dot_line = next(n for n, t in report.source_lines.items() if "tl.dot" in t)
    assert prof.tensor_flops >= 0.99 * 2 * 2048 ** 3  # measured from HMMA/HGMMA counts
    on_dot = {section.sass[i].mnemonic for i in prof.lines[dot_line].sass}
    assert on_dot & {"HMMA", "HGMMA"}


def test_attention_profile_attributes_both_dots_and_the_softmax(tilekernel):
    report, section = _profile(tilekernel, ATTENTION, ATTENTION_REF)
    prof = section.profile
    lines = report.source_lines
    dots = [n for n, t in lines.items() if "tl.dot(" in t]
    assert len(dots) == 2
    for line in dots:  # each dot line runs tensor-core instructions
        on_line = {section.sass[i].mnemonic for i in prof.lines[line].sass}
        assert on_line & {"HMMA", "HGMMA"}, (line, sorted(on_line))
    exp_line = next(n for n, t in lines.items() if "p = tl.exp(" in t)
    assert prof.lines[exp_line].sass, "the softmax's exp has no SASS of its own"
    assert prof.tensor_flops >= 0.99 * 4 * 16 * 2048 * 2048 * 64  # two dots of 2*N*N*D per head
