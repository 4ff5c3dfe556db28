"""The plain-text summary of a report, for terminal IPython and `repr()`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import KernelReport


def _size(n: float | None, unit: str) -> str:
    if n is None:
        return "?"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.3g} {unit}"


def resources_line(report: KernelReport) -> str | None:
    res = report.resources
    if res is None:
        return None
    parts = [f"{res.num_warps} warps"]
    if res.n_regs is not None:
        parts.append(f"{res.n_regs} registers/thread")
    if res.n_spills is not None:
        parts.append(f"{res.n_spills} spills")
    if res.shared is not None:
        parts.append(f"{res.shared} B shared")
    if res.local:
        parts.append(f"{res.local} B local (stack) per thread")
    if res.occupancy is not None:
        parts.append(
            f"occupancy {100 * res.occupancy:.0f}% ({res.blocks_per_sm} blocks/SM, "
            f"limited by {res.limiter})"
        )
    return ", ".join(parts)


def resource_detail_lines(report: KernelReport) -> list[str]:
    """The shared-memory plan (each region, the total against the block limit) and the tensor-core
    instruction counts of each stage, as indented lines under `resources:`."""
    from ..runtime.resource_summary import counts_text, plan_lines

    res = report.resources
    if res is None:
        return []
    lines = []
    if res.shared_plan:
        lines.append("shared memory:")
        lines.extend("  " + line for line in plan_lines(res.shared_plan, res.shared_limit))
    for stage, counts in res.instructions.items():
        if counts:
            lines.append(f"{stage} instructions (static): {counts_text(counts)}")
    return lines


def performance_lines(report: KernelReport) -> list[str]:
    lines = []
    counts = report.counts
    if counts is not None:
        lines.append(
            f"work: {_size(counts.flops, 'FLOP')} ({counts.flops_source}), "
            f"{_size(counts.bytes, 'B')} ({counts.bytes_source})"
            + (f", {counts.intensity:.3g} FLOP/B" if counts.intensity else "")
        )
    if report.timing is not None:
        lines.append(f"time: {report.timing.summary()}")
        if counts is not None and counts.bytes:
            lines.append(
                f"achieved: {_size(counts.bytes / report.timing.seconds, 'B/s')}, "
                f"{_size((counts.flops or 0) / report.timing.seconds, 'FLOP/s')}"
            )
    bound = report.bound
    if bound is not None and bound.fraction is not None:
        lines.append(f"roofline: {bound.label()} on {report.peaks.device}")
    if report.point is not None and report.peaks is not None:
        from .roofline import ceiling_warnings

        lines += [f"warning: {w}" for w in ceiling_warnings(report.point, report.peaks)]
    return lines


def summary_lines(report: KernelReport) -> list[str]:
    """A few lines: kernel, target, stages, resources, work, time, check, autotuning."""
    head = f"{report.name} [{report.target or '?'}]"
    if report.grid:
        head += f" grid={report.grid}"
    if report.launches > 1:
        head += f" ({report.launches} launches, the last shown)"
    lines = [
        head,
        "stages: "
        + ", ".join(f"{s} ({len(report.asm[s].splitlines())} lines)" for s in report.shown_stages),
    ]
    if report.passes:
        lines.append("passes: " + " -> ".join(name for name, _ in report.passes))
    res = resources_line(report)
    if res:
        lines.append("resources: " + res)
    lines.extend(resource_detail_lines(report))
    lines.extend(performance_lines(report))
    if report.check is not None:
        lines.append("check: " + report.check.summary())
        if report.check.hint:
            lines.append("hint: " + report.check.hint)
    for row in report.autotune or []:
        time = f"{row.ms:.4g} ms" if row.ms is not None else row.status
        used = f" ({row.resources()})" if row.resources() else ""
        cost = "; ".join(part for part in (row.cost(), row.where) if part)
        lines.append(
            f"autotune: {row.config}: {time}{used}{' ' + row.reason if row.reason else ''}"
            f"{'; ' + cost if cost else ''}{'  <- best' if row.status == 'best' else ''}"
        )
    if report.triton is not None:
        lines.append(
            "triton: "
            + (
                report.triton.error
                or (report.triton.timing.summary() if report.triton.timing else "compiled")
            )
        )
    lines.extend(
        f"note: {n}" for n in report.notes + (report.counts.notes if report.counts else [])
    )
    for section in report.sections:
        lines.append(f"{section.title}:")
        lines.extend("  " + line for line in section.text())
    return lines
