"""Assembling a report from a compiled kernel or a recorded launch: counts, timing, check, roofline.

`inspect(obj, ...)` is the public entry (`tw.inspect`); the magic calls `report_for_launch` for each
kernel launched in its cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..backends import is_gpu
from .check import compare
from .counts import count_launch
from .peaks import Peak, Peaks, get_peaks
from .report import AutotuneRow, KernelReport, base_report
from .roofline import RooflinePoint, compute_kind
from .target_ceilings import target_ceilings
from .timing import bench


@dataclass
class ReportOptions:
    """What to measure and show; mirrors the magic's options."""

    stages: tuple[str, ...] | None = None
    bench: int | None = None  # do_bench repetition time in ms; None: do not time
    ref: Any = None  # the reference array (already evaluated)
    out: Any = None  # the array the kernel wrote; None: the launch's last pointer argument
    flops: float | None = None
    bytes: float | None = None
    roofline: bool = True
    compare: str | None = None  # "triton"


def inspect(
    obj: Any,
    signature: dict | str | None = None,
    constexprs: dict | str | None = None,
    target: str | None = None,
    stages: list[str] | None = None,
    **options: Any,
):
    """A report of a compiled kernel, a `@jit` kernel (compiled with `signature`) or a launch record.

    Args:
        obj: a `CompiledKernel`, a `@tw.jit` function, or a `LaunchRecord`.
        signature: for a `@jit` function: parameter -> type, e.g. {"x_ptr": "*fp32", "n": "i32"}
            or the string "x_ptr=*fp32,n=i32". Without it, a kernel that has been launched shows
            its last compiled variant.
        constexprs: for a `@jit` function: constexpr values, e.g. {"BLOCK": 1024}.
        target: "sm_90", "interpreter", ...; default: the current device.
        stages: the tabs to show (default: every stage).
        **options: `ReportOptions` fields (bench, ref, out, flops, bytes, roofline, compare).

    Returns:
        A `KernelReport`, which displays itself in Jupyter, in HTML and as text.
    """
    opts = ReportOptions(stages=tuple(stages) if stages else None, **options)
    if hasattr(obj, "relaunch") and hasattr(obj, "compiled"):
        return report_for_launch(obj, opts)
    if hasattr(obj, "asm") and hasattr(obj, "passes"):
        return report_for_compiled(obj, opts)
    if hasattr(obj, "fn") or callable(obj):
        if signature is None and last_compiled(obj) is not None:
            return report_for_compiled(last_compiled(obj), opts)
        if signature is None:
            raise TypeError(
                f"inspect({getattr(obj, '__name__', obj)!r}): a @jit kernel needs "
                "signature= (e.g. 'x_ptr=*fp32,n=i32') to be compiled"
            )
        from .compile_only import compile_kernel

        compiled = compile_kernel(obj, signature, constexprs, target)
        return report_for_compiled(compiled, opts)
    raise TypeError(
        f"inspect() takes a compiled kernel, a @jit kernel or a launch record, "
        f"not {type(obj).__name__}"
    )


def last_compiled(kernel: Any) -> Any:
    """The most recently compiled variant of a launched @jit kernel (through autotuner wrappers)."""
    for _ in range(8):
        cache = getattr(kernel, "cache", None)
        if isinstance(cache, dict) and cache:
            entry = list(cache.values())[-1]
            return getattr(entry, "compiled", None)
        kernel = getattr(kernel, "fn", None)
        if kernel is None:
            return None
    return None


def report_for_compiled(compiled: Any, opts: ReportOptions) -> KernelReport:
    """Report of a compile-only kernel: stages and resources, FLOPs per program, no timing."""
    report = base_report(compiled, opts.stages)
    ir = getattr(compiled, "ir", None)
    if ir is not None:
        report.counts = count_launch(ir, None, None, flops=opts.flops, bytes=opts.bytes)
        _add_point(report, opts, seconds=None)
    return report


def report_for_launch(record: Any, opts: ReportOptions, launches: int = 1) -> KernelReport:
    """Report of a launched kernel: everything, with timing, check and roofline where asked."""
    report = base_report(record.compiled, opts.stages)
    report.grid = tuple(record.grid)
    report.launches = launches
    # the compiled kernel's arch (sm_90) says more than the record's "cuda"
    report.target = str(report.target or getattr(record, "target", None) or "")
    ir = getattr(record.compiled, "ir", None)
    if ir is not None:
        report.counts = count_launch(
            ir, record.args, report.grid, flops=opts.flops, bytes=opts.bytes
        )
    if opts.bench:
        report.timing = bench(record.relaunch, opts.bench, on_gpu=is_gpu(report.target or None))
    if opts.ref is not None:
        out = opts.out if opts.out is not None else default_output(record)
        report.check = compare(out, opts.ref, **hint_context(report)) if out is not None else None
        if out is None:
            report.notes.append("--ref given but the launch has no array argument to compare")
    report.autotune = autotune_rows(getattr(record, "autotuner_results", None))
    _add_point(report, opts, seconds=report.timing.seconds if report.timing else None)
    if opts.compare == "triton":
        from .triton_compare import compare_with_triton

        report.triton = compare_with_triton(record, opts.bench or 100)
    return report


def hint_context(report: KernelReport) -> dict[str, Any]:
    """What the check's hints may assume: the kernel's tt.dot input type and IR element types."""
    text = report.asm.get("tile-opt", "")
    return {
        "dot_dtype": report.counts.dot_dtype if report.counts else None,
        "kernel_types": frozenset(re.findall(r"\b(bf16|f16)\b", text)),
    }


def _add_point(report: KernelReport, opts: ReportOptions, seconds: float | None) -> None:
    counts = report.counts
    report.show_roofline = opts.roofline
    if counts is None or not counts.flops or not counts.bytes:
        return
    host = None if is_gpu(report.target or None) else target_ceilings(report.target)
    if host is not None:  # a host target (cpu): its time against the host's measured ceilings
        report.peaks = host_peaks(host)
    else:
        if not is_gpu(report.target or None) and seconds is not None:
            seconds = None  # a CPU time against GPU ceilings would mislead; place it by intensity
            report.notes.append("ran in the interpreter: the roofline places it by intensity only")
        report.peaks = get_peaks()
    report.point = RooflinePoint(
        report.name,
        counts.flops,
        counts.bytes,
        seconds,
        compute=compute_kind(counts.dot_dtype),
        flops_source=counts.flops_source,
        bytes_source=counts.bytes_source,
    )


def host_peaks(ceilings: dict) -> Peaks:
    """A host target's measured ceilings (target_ceilings.py) as the workbench's Peaks."""
    measured = {
        name: Peak(name, c["value"], c["unit"], "measured", c.get("detail", ""))
        for name, c in ceilings.items()
        if name != "device"
    }
    return Peaks(ceilings["device"], measured=measured)


def is_array(value: Any) -> bool:
    return any(
        hasattr(value, a)
        for a in ("__cuda_array_interface__", "__array_interface__", "__dlpack__", "data_ptr")
    )


def default_output(record: Any) -> Any:
    """The array a launch wrote: the last pointer argument stored to, else the last array argument."""
    ir = getattr(record.compiled, "ir", None)
    if ir is not None:
        from .counts import memory_params

        _, stores = memory_params(ir)
        if stores and stores[-1] in record.args:
            return record.args[stores[-1]]
    arrays = [v for v in record.args.values() if is_array(v)]
    return arrays[-1] if arrays else None


def autotune_rows(results: dict | None) -> list[AutotuneRow] | None:
    """The autotuner's `last_results` as table rows, fastest first, failures and prunes last."""
    if not results:
        return None
    rows = []
    for config, result in results.items():
        if "ms" in result:
            row = AutotuneRow(
                str(config),
                float(result["ms"]),
                regs=result.get("regs"),
                spills=result.get("spills"),
                shared=result.get("shared"),
            )
        elif "screen_ms" in result and "error" not in result:  # screened out: not a finalist
            row = AutotuneRow(
                str(config),
                None,
                "screened",
                f"screen {result['screen_ms']:.4g} ms, not a finalist",
                regs=result.get("regs"),
                spills=result.get("spills"),
                shared=result.get("shared"),
            )
        elif "pruned" in result:
            row = AutotuneRow(str(config), None, "pruned", str(result["pruned"]))
        else:
            row = AutotuneRow(str(config), None, "failed", str(result.get("error", "?")))
        # what the config cost and where it ran (runtime/parallel_compile.py, screening.py)
        for name in ("compile_s", "bench_s", "load_s", "screen_s", "screen_ms"):
            setattr(row, name, result.get(name))
        where = result.get("where") or {}
        places = [f"{what} {where[what]}" for what in ("compiled", "timed") if where.get(what)]
        row.where = ", ".join(places + list(result.get("notes") or []))
        rows.append(row)
    # the finalists (or every config timed in full) by time, then the screened-out by screen time
    rows.sort(key=lambda r: (r.ms is None, r.screen_ms is None, r.ms or r.screen_ms or 0.0))
    if rows and rows[0].ms is not None:
        rows[0].status = "best"
    return rows
