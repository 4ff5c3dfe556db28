"""Every TILEWORKBENCH_* setting in one typed place, read once from the environment and settable by code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _flag_on(name: str) -> bool:
    """A setting that is on unless the variable says off (0, false, no, off)."""
    return os.environ.get(name, "").strip().lower() not in ("0", "false", "no", "off")


def _switch(name: str) -> bool | None:
    """On (1, true, yes, on), off (0, false, no, off), or unset: None, the setting's own choice."""
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return None
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be 1 or 0 (on or off), got {text!r}")


def _count(name: str, default: int | None) -> int | None:
    """A non-negative integer setting; unset or empty gives `default`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise ValueError(f"{name} must be a non-negative integer, got {text!r}")
    return int(text)


@dataclass
class Config:
    """`TILEWORKBENCH_INTERPRET=1` forces the interpreter; `TILEWORKBENCH_TARGET` picks the target launches
    use ("cpu", "interpreter", "cuda"; default: the GPU where there is one, else the interpreter);
    `TILEWORKBENCH_CACHE_DIR` moves the cache;
    `TILEWORKBENCH_DEBUG_FRONTEND=1` re-raises frontend exceptions unchanged (for compiler developers);
    `TILEWORKBENCH_LIBDEVICE` points at CUDA's libdevice.10.bc when it is not found by itself;
    `TILEWORKBENCH_DEBUG=1` compiles every kernel in debug mode (`@jit(debug=True)`: device asserts on,
    GPU loads, stores and atomics bounds-checked; Triton's `TRITON_DEBUG`);
    `TILEWORKBENCH_PRINT_AUTOTUNING=1` prints each autotuning's table and choice (Triton's
    `TRITON_PRINT_AUTOTUNING`);
    `TILEWORKBENCH_TMA=0` keeps host-descriptor tiles off the TMA engine on sm_90+ (on by default:
    descriptors and accesses TMA can take are copied with `cp.async.bulk.tensor`, the rest with
    pointers; tma_rules.py, passes/descriptors.py);
    `TILEWORKBENCH_SPARE_SLOT=1` gives every wgmma k loop's cp.async rings num_stages + 1 slots
    instead of Triton's num_stages plus a barrier before each refill (to time the two;
    passes/software_pipeline.py);
    `TILEWORKBENCH_CHAINED_WGMMA_IN_FLIGHT=0` waits for the second wgmma of a two-dot loop (attention's
    p @ v) in its own iteration; by default it stays in flight across the back edge, as Triton does
    (passes/wgmma.py; on the H200 attention at head dim 128 went from 0.93-0.96x Triton to 1.00x);
    `TILEWORKBENCH_WARP_SPECIALIZE=0` compiles loops marked `tl.range(..., warp_specialize=True)`
    without a producer warp group (a note in the IR says so), to time the two without editing the
    kernel (passes/warp_specialize.py);
    `TILEWORKBENCH_TMA_TILE_PREFETCH=1` lets a persistent kernel's tile loop around a TMA k loop
    issue the next tile's first copies before this tile's epilogue, whose TMA store then waits for
    the engine only before its next write (passes/prefetch_tiles.py); off by default until it has
    run on a GPU (emulated and assembled only);
    `TILEWORKBENCH_OVERRIDE_ARCH` (or Triton's `TRITON_OVERRIDE_ARCH`; Triton's
    `knobs.runtime.override_arch`) compiles launches for that architecture ("sm80", "sm90") where
    the launch gives no `arch=`; launches then take the full path (the warm one keys no arch);
    `TILEWORKBENCH_DEFAULT_FP_FUSION=0` makes `enable_fp_fusion` default to False (Triton's
    `knobs.language.default_fp_fusion`);
    `TILEWORKBENCH_COMPILE_WORKERS` is how many processes compile an autotuner's or a sweep's
    configs (unset: one per config up to the CPU count; 0 or 1: one after another in this
    process; runtime/parallel_compile.py);
    `TILEWORKBENCH_COMPILE_START` is how compile processes start: "fork" (the default on Linux:
    forks of this process as a tune begins, no preload to wait for, kernels defined in a notebook
    included), "forkserver" (the default elsewhere: forked by a server that preloaded the
    compiler) or "spawn" (runtime/compile_pool.py);
    `TILEWORKBENCH_COMPILE_PRESTART`, where workers come from the forkserver, starts it (its
    preload: the compiler, torch, a warm-up compile, ~4 s on the H100 host) when `tw.autotune`
    decorates a kernel, so it is ready by the first tune: unset, on hosts of 8 cores or more, for
    kernels that workers can import; 1 always, 0 never (the first tune then starts it);
    `TILEWORKBENCH_AUTOTUNE_SCREEN=0` times every config in full; by default a tune whose configs
    compile in workers screens each config with a short timing as it is built and times only the
    finalists in full (runtime/screening.py);
    `TILEWORKBENCH_AUTOTUNE_FINALISTS` is how many configs screening keeps (default 3, and any
    within 5% of the best screen time);
    `TILEWORKBENCH_AUTOTUNE_GPUS` is how many GPUs of this host time an autotuner's configs at once,
    one config per GPU at a time (default 1; 0: every visible GPU);
    `TILEWORKBENCH_DISASSEMBLE=0` leaves a GPU kernel's SASS (nvdisasm) until `.asm` or `.line_map`
    is first read, instead of disassembling each cubin in the background as it is assembled
    (an autotuner's compile workers run so: nvdisasm took longer than the rest of an attention
    config's compile, and a tune reads no SASS)."""

    interpret: bool = field(default_factory=lambda: _flag("TILEWORKBENCH_INTERPRET"))
    target: str | None = field(
        default_factory=lambda: os.environ.get("TILEWORKBENCH_TARGET") or None
    )
    cache_dir: Path = field(
        default_factory=lambda: Path(
            os.environ.get("TILEWORKBENCH_CACHE_DIR") or Path.home() / ".cache" / "tileworkbench"
        )
    )
    debug_frontend: bool = field(default_factory=lambda: _flag("TILEWORKBENCH_DEBUG_FRONTEND"))
    libdevice: str | None = field(default_factory=lambda: os.environ.get("TILEWORKBENCH_LIBDEVICE"))
    debug: bool = field(default_factory=lambda: _flag("TILEWORKBENCH_DEBUG"))
    print_autotuning: bool = field(default_factory=lambda: _flag("TILEWORKBENCH_PRINT_AUTOTUNING"))
    tma: bool = field(default_factory=lambda: _flag_on("TILEWORKBENCH_TMA"))
    spare_slot: bool = field(default_factory=lambda: _flag("TILEWORKBENCH_SPARE_SLOT"))
    chained_wgmma_in_flight: bool = field(
        default_factory=lambda: _flag_on("TILEWORKBENCH_CHAINED_WGMMA_IN_FLIGHT")
    )
    warp_specialize: bool = field(default_factory=lambda: _flag_on("TILEWORKBENCH_WARP_SPECIALIZE"))
    tma_tile_prefetch: bool = field(
        default_factory=lambda: _flag("TILEWORKBENCH_TMA_TILE_PREFETCH")
    )
    override_arch: str | None = field(
        default_factory=lambda: (
            os.environ.get("TILEWORKBENCH_OVERRIDE_ARCH")
            or os.environ.get("TRITON_OVERRIDE_ARCH")
            or None
        )
    )
    default_fp_fusion: bool = field(
        default_factory=lambda: _flag_on("TILEWORKBENCH_DEFAULT_FP_FUSION")
    )
    compile_workers: int | None = field(
        default_factory=lambda: _count("TILEWORKBENCH_COMPILE_WORKERS", None)
    )
    autotune_gpus: int = field(default_factory=lambda: _count("TILEWORKBENCH_AUTOTUNE_GPUS", 1))
    compile_start: str | None = field(
        default_factory=lambda: os.environ.get("TILEWORKBENCH_COMPILE_START") or None
    )
    compile_prestart: bool | None = field(
        default_factory=lambda: _switch("TILEWORKBENCH_COMPILE_PRESTART")
    )
    autotune_screen: bool = field(default_factory=lambda: _flag_on("TILEWORKBENCH_AUTOTUNE_SCREEN"))
    autotune_finalists: int = field(
        default_factory=lambda: _count("TILEWORKBENCH_AUTOTUNE_FINALISTS", 3)
    )
    disassemble: bool = field(default_factory=lambda: _flag_on("TILEWORKBENCH_DISASSEMBLE"))


config = Config()
