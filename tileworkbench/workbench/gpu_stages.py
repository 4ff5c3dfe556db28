"""Every stage for every launch: a launch that ran in the interpreter (or on another GPU than the
one asked for with `--target`) is compiled again, with the launch's own specialization (argument
types, 16-divisibility, constexprs, warps), for a GPU arch, so the report has the `tile-gpu`,
`llvm`, `ptx` and (with ptxas and nvdisasm) `sass` tabs on any machine. Nothing is launched: PTX
needs no GPU.
"""

from __future__ import annotations

import re
from typing import Any

from ..frontend import ArgSpec
from .report import line_map_of, metadata_of
from .resources import resources_of

DEFAULT_ARCH = "sm_90"  # where there is no GPU: the H100/H200 generation


def runs_on_gpu(target: str | None) -> bool:
    """Whether `target` is a GPU arch (sm_90, ...): the one place the workbench asks this (the
    backend registry answers it)."""
    from ..backends import is_gpu

    return target is not None and is_gpu(target)


def local_gpu_arch() -> str | None:
    """The arch launches on the GPU this process sees compile for (sm_90a on an H200: the backend
    registry answers), or None without one."""
    try:
        from ..backends import backend_for
        from ..cuda.device import gpu_available

        return backend_for("cuda").resolve("cuda") if gpu_available() else None
    except Exception:  # noqa: BLE001 - no CuPy, no driver: there is no local GPU
        return None


def gpu_target(requested: str | None) -> str:
    """The arch whose stages to show: `--target` if it names one, else the local GPU, else sm_90."""
    if runs_on_gpu(requested):
        return requested
    return local_gpu_arch() or DEFAULT_ARCH


def launch_specialization(record: Any) -> tuple[list[ArgSpec], dict[str, Any]]:
    """The runtime parameters (type, `:16`, `:1`, as the launch specialized them) and the constexpr
    values of a recorded launch, for compiling the same kernel for another target."""
    meta = record.compiled.metadata
    constexpr_names = set(meta.constexprs)
    runtime = [n for n, v in record.args.items() if n not in constexpr_names and v is not None]
    keys = list(meta.signature)
    if len(keys) != len(runtime):
        raise ValueError(
            f"the launch has {len(runtime)} runtime arguments, its signature {len(keys)}"
        )
    from ..frontend import parse_arg

    specs = [parse_arg(name, key) for name, key in zip(runtime, keys)]
    constexprs = {n: v for n, v in record.args.items() if n not in runtime}
    return specs, constexprs


def describe(specs: list[ArgSpec], constexprs: dict[str, Any]) -> str:
    """`x_ptr=*fp32:16, n=i32:16, BLOCK=1024` (as `--signature`/`--constexprs` would spell it)."""
    parts = [f"{s.name}={s.key}" for s in specs]
    parts += [f"{k}={v!r}" for k, v in constexprs.items() if v is not None]
    return ", ".join(parts)


def add_gpu_stages(report: Any, record: Any, requested: str | None = None) -> None:
    """Give `report` (of `record`'s launch) the GPU stages for `gpu_target(requested)`, compiled
    from the launch's specialization, unless it already shows that target's; say why `sass` is
    missing. Failures become notes: the launch's own report stands without GPU stages."""
    target = gpu_target(requested)
    if "ptx" not in report.asm or report.target != target:
        try:
            specs, constexprs = launch_specialization(record)
            gpu = _compile(record, specs, constexprs, target)
            asm = dict(gpu.asm)
        except Exception as exc:  # noqa: BLE001 - reported as a note, never hides the launch's report
            report.notes.append(f"GPU stages for {target} unavailable: {type(exc).__name__}: {exc}")
            return
        report.asm = asm
        report.line_map = line_map_of(gpu)
        report.passes = list(gpu.passes)
        report.resources = resources_of(metadata_of(gpu), target, asm)
        ran = "in the interpreter" if not runs_on_gpu(report.target) else f"on {report.target}"
        report.notes.append(
            f"ran {ran}; the tile-gpu, llvm, ptx and sass tabs are this launch's specialization "
            f"({describe(specs, constexprs)}) compiled for {target}, not run"
        )
    note_missing_sass(report)
    note_compiler_choices(report)


# the compiler's notes in the `tile-gpu` IR: an op with a reason, and its source line
_CHOICE = re.compile(
    r'(ttng\.warp_specialize_note|ttng\.tma_fallback) \{reason = "([^"]*)"\}.*?'
    r'loc\("[^"]*":(\d+)\)'
)
_CHOICE_WORDS = {
    "ttng.warp_specialize_note": "warp_specialize not applied",
    "ttng.tma_fallback": "descriptor on pointers, not TMA",
}


def note_compiler_choices(report: Any) -> None:
    """Where the compiler did not do what the source asked or allowed (a loop's warp
    specialization, a descriptor's TMA copy), a note with the source line and the reason, so the
    report says it beside the `tile-gpu` tab that shows it."""
    seen = set()
    for op, reason, line in _CHOICE.findall(report.asm.get("tile-gpu", "")):
        note = f"line {line}: {_CHOICE_WORDS[op]}: {reason}"
        if note not in seen:
            seen.add(note)
            report.notes.append(note)


def note_missing_sass(report: Any) -> None:
    """A report with PTX but no `sass` says which tool is missing and how to get it."""
    if "sass" in report.asm or "ptx" not in report.asm:
        return
    from ..backends import backend_for

    missing = backend_for(gpu_target(report.target)).missing_tools("sass")
    report.notes.append(missing or "no sass: ptxas or nvdisasm failed on this kernel")


def _compile(record: Any, specs: list[ArgSpec], constexprs: dict[str, Any], target: str) -> Any:
    from ..runtime.compiler import compile as compile_kernel

    meta = record.compiled.metadata
    return compile_kernel(
        record.kernel,
        specs,
        constexprs,
        target=target,
        num_warps=meta.num_warps,
        num_stages=meta.num_stages,
        enable_fp_fusion=meta.enable_fp_fusion,
        maxnreg=meta.maxnreg,
        enable_reflect_ftz=meta.enable_reflect_ftz,
    )
