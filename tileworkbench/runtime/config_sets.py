"""Default `tw.autotune` config sets for matmul and attention kernels: on a GPU target the
`wgmma`-sized tiles that Hopper wants (128x256x64 with 8 warps and 3 stages, 256x128x64, 128x128x64
with 4 warps and 4 stages, ...; the fastest on an H200, tools/probe_matmul_hopper.py) and the
`mma.sync` tiles that suit Ampere; on the interpreter and the cpu target small tiles, so tuning there
takes seconds. A config a GPU cannot hold (too much shared memory) fails at compile time with
OutOfResources and shows as a failed row of the autotuner's table; the others are timed.

    @tw.autotune(configs=tw.matmul_configs(), key=["M", "N", "K"])
"""

from __future__ import annotations

from typing import Any

from .autotuner import Config

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
MATMUL_WGMMA = [
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (128, 128, 64, 8, 3),
    (128, 256, 32, 8, 4),
    (64, 256, 64, 4, 4),
]
MATMUL_MMA = [(128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4)]
MATMUL_SMALL = [(32, 32, 32, 4, 3), (64, 64, 32, 4, 3)]  # the stages matter on GPUs only
# (BLOCK_M, BLOCK_N, num_warps, num_stages): tutorial 06's Hopper choices first
ATTENTION_GPU = [(128, 128, 8, 3), (128, 64, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (64, 32, 4, 4)]
ATTENTION_SMALL = [(32, 32, 4, 3), (64, 32, 4, 3)]


def _on_gpu(target: str | None) -> bool:
    from ..backends import is_gpu

    return is_gpu(target)


def matmul_configs(
    target: str | None = None,
    names: tuple[str, str, str] = ("BLOCK_M", "BLOCK_N", "BLOCK_K"),
    **fixed: Any,
) -> list[Config]:
    """The default matmul configs for `target` (None: where launches go).

    Args:
        target: a target name ("cuda", "sm_90a", "interpreter", ...); None: the default target.
        names: the kernel's constexpr names for the block sizes along M, N and K.
        **fixed: more constexprs every config sets (e.g. GROUP_SIZE_M=8).

    Returns:
        `tw.Config`s, the likely fastest first.
    """
    rows = MATMUL_WGMMA + MATMUL_MMA if _on_gpu(target) else MATMUL_SMALL
    return [
        Config({**dict(zip(names, (bm, bn, bk))), **fixed}, num_warps=warps, num_stages=stages)
        for bm, bn, bk, warps, stages in rows
    ]


def attention_configs(
    target: str | None = None, names: tuple[str, str] = ("BLOCK_M", "BLOCK_N"), **fixed: Any
) -> list[Config]:
    """The default attention-forward configs for `target` (as `matmul_configs`): BLOCK_M query rows
    against BLOCK_N keys per step."""
    rows = ATTENTION_GPU if _on_gpu(target) else ATTENTION_SMALL
    return [
        Config({**dict(zip(names, (bm, bn))), **fixed}, num_warps=warps, num_stages=stages)
        for bm, bn, warps, stages in rows
    ]
