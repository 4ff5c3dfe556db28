"""Tutorial 06's forward (`_attn_fwd`) as the attention tests compile it at fixed block sizes: the
kernel under its @autotune, its signature on host descriptors and its constexprs."""

from __future__ import annotations

from tutorial_loader import jit_function, load_tutorial, tutorial_or_skip

from tileworkbench.frontend import ArgSpec

TUTORIAL = "06-fused-attention.py"


def forward_kernel():
    """The JITFunction under the tutorial's @autotune (skips without the tutorial files)."""
    return jit_function(load_tutorial(tutorial_or_skip(TUTORIAL))._attn_fwd)


def forward_signature(head_dim: int, block_m: int, block_n: int, fp8: bool = False) -> list:
    """Q, K, V and O as host descriptors; fp8 (e5m2) stores V transposed ([head_dim, N]), as the
    tutorial does on Hopper."""
    element = "fp8e5" if fp8 else "fp16"

    def desc(name, rows, cols):
        return ArgSpec(name, f"tensordesc<{element},{rows}x{cols},zero>", True)

    v = desc("desc_v", head_dim, block_n) if fp8 else desc("desc_v", block_n, head_dim)
    return [ArgSpec("sm_scale", "fp32"), ArgSpec("M", "*fp32", True), ArgSpec("Z", "i32"),
            ArgSpec("H", "i32"), desc("desc_q", block_m, head_dim),
            desc("desc_k", block_n, head_dim), v, desc("desc_o", block_m, head_dim),
            ArgSpec("N_CTX", "i32", True)]


def forward_constexprs(head_dim: int, block_m: int, block_n: int, causal: bool,
                       fp8: bool = False) -> dict:
    return {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "FP8_OUTPUT": fp8,
            "STAGE": 3 if causal else 1, "warp_specialize": False, "IS_HOPPER": True}
