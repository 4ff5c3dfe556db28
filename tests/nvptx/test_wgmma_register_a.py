"""The register-A form of Hopper's `wgmma` (sm_90a) for attention's second dot: the first dot's
version-3 accumulator is, element for element, the `#dot_op<opIdx=0>` A operand of the second (so the
conversion after `.to(fp16)` moves nothing), both dots of the chain choose `wgmma` with every warp
group on M, and the PTX (assembled by ptxas) holds `wgmma ... {d}, {a0, a1, a2, a3}, descB` right
after a fence that nothing is written between. Emulated runs: test_attention_emulated.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from attention_kernel import attention_forward, attention_forward_masked, masked_signature, signature

import tileworkbench as tw
from tileworkbench.ir.ops.ttg import DotOperandEncoding, MmaEncoding

import kernels  # noqa: E402

REGISTER_A = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(b?f16)\.b?f16 "
                        r"\{[^}]*\}, \{%r\d+, ?%r\d+, ?%r\d+, ?%r\d+\}, %rd\d+, %p\d+, 1, 1, (\d);")
BENCH_SIGNATURE = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16",
                   "o_ptr": "*fp16:16", "sm_scale": "fp32", "stride_h": "i32:16",
                   "stride_m": "i32:16", "N_CTX": "i32:16"}


@pytest.mark.parametrize("warps_m, m, n", [(4, 64, 64), (4, 128, 64), (8, 128, 128), (8, 256, 32)])
def test_accumulator_is_the_next_dots_a_fragment(warps_m, m, n):
    """wgmma's D fragment per warp (rows g, g + 8, column pairs 2t, 2t + 1, then the next 8 columns)
    is mma.sync's A fragment over K = N: the same element in the same register of the same thread."""
    parent = MmaEncoding(3, (warps_m, 1), (16, n, 16))
    assert parent.linear((m, n)) == DotOperandEncoding(0, parent, 2).linear((m, n))


def _attention_bench(head_dim=64, causal=False, block=(128, 64), warps=8, stages=3, arch="sm_90a"):
    bm, bn = block
    return tw.compile(kernels.load("tileworkbench").attn_fwd_kernel, signature=BENCH_SIGNATURE,
                      constexprs={"HEAD_DIM": head_dim, "BLOCK_M": bm, "BLOCK_N": bn,
                                  "CAUSAL": causal},
                      target=arch, num_warps=warps, num_stages=stages, use_cache=False)


@pytest.mark.parametrize("head_dim, causal, block, warps", [
    (64, False, (128, 64), 8), (128, True, (128, 128), 8), (64, True, (64, 64), 4),
    (128, False, (64, 64), 4)])
def test_both_dots_of_attention_on_wgmma(head_dim, causal, block, warps):
    compiled = _attention_bench(head_dim, causal, block, warps)
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    bm, bn = block
    assert f"versionMajor=3, versionMinor=0, warpsPerCTA=[{warps}, 1]" in gpu
    dots = re.findall(r"= ttng\.warp_group_dot (%\w+), (%\w+), .*", gpu)
    assert len(dots) == 2
    # P @ V: P (the truncf of the softmax) is read from registers, not staged in shared memory
    p_name = dots[1][0]
    assert re.search(rf"{p_name} = arith\.truncf %\w+ : tensor<{bm}x{bn}xf16, #dot_op>", gpu)
    assert "ttg.convert_layout" not in gpu.split("scf.for")[1].split("scf.yield")[0]
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    register_a = REGISTER_A.findall(ptx)
    # one instruction per 16 of K (BLOCK_N) and 64 rows of the warp group's share of M
    assert len(register_a) == (bn // 16) * (bm // (16 * warps))
    assert {n for n, _, _ in register_a} == {str(head_dim)}
    assert {trans for _, _, trans in register_a} == {"1"}  # V is N-major (row-major [keys, dims])
    assert compiled.metadata.n_spills in (0, None)


def test_nothing_is_written_between_the_fence_and_the_register_a_wgmma(tmp_path):
    """Where A's registers (or accumulators) are written between `wgmma.fence` and the wgmma, ptxas
    serializes the warp group; the fence takes A's registers, so LLVM computes them before it. ptxas
    says when it serializes wgmmas (info C7515 / C7519 and the like): it must not."""
    ptx = _attention_bench().asm["ptx"]
    fence = ptx.rindex("wgmma.fence.sync.aligned;")
    between = ptx[fence:ptx.index("wgmma.mma_async", fence)].splitlines()[1:]
    # only B's descriptor (`add.s64`, wgmma.py `_at`) may be computed there: it is not A or C
    assert all(not line.strip() or line.strip().startswith(("//", ".loc", "add.s64 %rd"))
               for line in between), between
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        report = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o",
                                 str(tmp_path / "k.cubin")], capture_output=True, text=True)
        assert report.returncode == 0 and "serialized" not in report.stderr + report.stdout, \
            report.stderr


def test_mma_sync_where_the_chain_cannot_take_wgmma():
    """sm_90 (no wgmma), and 4 warps on a 32-row block (a warp group computes 64 rows)."""
    for kwargs in (dict(arch="sm_90"), dict(block=(32, 64), warps=4)):
        compiled = _attention_bench(**kwargs)
        assert "wgmma" not in compiled.asm["ptx"] and "mma.sync.aligned" in compiled.asm["ptx"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tutorial_kernels_assemble_with_register_a(dtype):
    """Tutorial 06's forward (in-kernel tensor descriptors) and the masked pointer variant, in fp16
    and bf16: the register-A wgmma of the dtype, assembled by ptxas."""
    compiled = tw.compile(attention_forward, signature=signature(dtype), target="sm_90a",
                          constexprs={"N_CTX": 1024, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                      "CAUSAL": True}, num_warps=8, num_stages=3, use_cache=False)
    masked = tw.compile(attention_forward_masked, signature=masked_signature(dtype),
                        target="sm_90a", num_warps=4, num_stages=3, use_cache=False,
                        constexprs={"HEAD_DIM": 128, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": False})
    for kernel in (compiled, masked):
        found = REGISTER_A.findall(kernel.asm["ptx"])
        assert found and {t for _, t, _ in found} == {dtype.replace("fp", "f")}
        assert kernel.metadata.n_spills in (0, None)


def test_attention_rings_have_no_spare_slot():
    """The spare ring slot serves one wgmma group kept in flight; attention's loop waits for both of
    its dots, so its K and V rings keep `num_stages` slots (two blocks per SM at head dim 128 and
    64 x 64 tiles: 112 KB of shared memory, not 144)."""
    compiled = _attention_bench(128, False, (64, 64), 4)
    gpu = compiled.asm["tile-gpu"]
    assert "!ttg.memdesc<3x64x128xf16" in gpu and "!ttg.memdesc<4x64x128xf16" not in gpu
    assert compiled.metadata.shared == 112 * 1024


def test_attention_whose_tma_tiles_do_not_fit_compiles_on_pointers():
    """Head dim 128 at 128x128 blocks: the in-kernel descriptors' TMA rings and staged tiles need
    more than the H200's 227 KB of shared memory (the GPU tests failed with OutOfResources); the
    kernel compiles on the pointer path instead, within the limit, still on register-A wgmma."""
    from attention_kernel import attention_forward

    compiled = tw.compile(
        attention_forward,
        signature={"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16",
                   "o_ptr": "*fp16:16", "lse_ptr": "*fp32:16", "sm_scale": "fp32"},
        constexprs=dict(N_CTX=256, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128, CAUSAL=True),
        target="sm_90a", num_warps=8, num_stages=3, use_cache=False)
    assert "cp.async.bulk.tensor" not in compiled.asm["ptx"]
    assert compiled.metadata.shared <= 232448
    assert "wgmma.mma_async" in compiled.asm["ptx"]
