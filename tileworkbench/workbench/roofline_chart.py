"""The roofline drawn with matplotlib (imported only when a plot is drawn): one bandwidth slope per
memory level and one roof per compute kind, measured ceilings solid and datasheet ones dashed; a
timed kernel is a point labelled with its % of the ceiling that bounds it, an untimed one a vertical
line at its intensity with a hollow circle where it meets the roof. Knows nothing of where the
ceilings come from (ceilings.py draws its own with it; roofline.py is the public plot object).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from .roofline_model import (
    COMPUTE_ORDER,
    MEMORY_LEVELS,
    Bound,
    RooflinePoint,
    bound_of,
    ceiling_warnings,
    ceilings_source,
)

if TYPE_CHECKING:
    from .ceilings import Peak, Peaks

COLORS = {
    "l2": "#17becf",
    "fp64": "#7f7f7f",
    "dram": "#1f77b4",
    "fp32": "#2ca02c",
    "tf32": "#9467bd",
    "fp16": "#d62728",
    "bf16": "#ff7f0e",
}


def figure(points: list[RooflinePoint], peaks: Peaks, size: tuple[float, float] = (11.0, 5.0)):
    """A matplotlib Figure (not attached to pyplot, so nothing leaks into a notebook)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    _draw(ax, points, peaks)
    fig.tight_layout()
    return fig


def chart_bytes(points: list[RooflinePoint], peaks: Peaks, fmt: str = "png") -> bytes:
    """The chart as PNG or SVG bytes."""
    buf = io.BytesIO()
    figure(points, peaks).savefig(buf, format=fmt)
    return buf.getvalue()


def _span(points: list[RooflinePoint], peaks: Peaks) -> tuple[float, float]:
    lo, hi = 1 / 16, 1024.0
    for p in points:
        lo, hi = min(lo, p.intensity / 4), max(hi, p.intensity * 4)
    return lo, hi


def _ceiling_lines(ax, peaks: Peaks, lo: float, hi: float) -> None:
    """One bandwidth slope per memory level up to the highest roof, and each compute roof flat from
    the DRAM ridge point (the hierarchical roofline)."""
    for table, style in ((peaks.measured, "-"), (peaks.datasheet, "--")):
        computes = [table[n] for n in COMPUTE_ORDER if n in table]
        width = 1.6 if style == "-" else 1.0
        top = max((c.value for c in computes), default=None)
        for level in MEMORY_LEVELS:
            memory = table.get(level)
            if memory is None:
                continue
            roof = top if top is not None else memory.value * hi
            ax.plot(
                [lo, min(hi, roof / memory.value)],
                [memory.value * lo, min(roof, memory.value * hi)],
                style,
                color=COLORS[level],
                lw=width,
                label=f"{level.upper()} {memory.value / 1e9:.0f} GB/s "
                f"({memory.detail or memory.source})",
            )
        dram = table.get("dram")
        for peak in computes:
            start = max(lo, peak.value / dram.value) if dram is not None else lo
            ax.plot(
                [start, hi],
                [peak.value, peak.value],
                style,
                color=COLORS[peak.name],
                lw=width,
                label=_peak_label(peak),
            )


def _peak_label(peak: Peak) -> str:
    tera = peak.value >= 1e12
    value = f"{peak.value / (1e12 if tera else 1e9):.3g} {'T' if tera else 'G'}FLOP/s"
    return f"{peak.name} {value} ({peak.detail or peak.source})"


def _draw(ax, points: list[RooflinePoint], peaks: Peaks) -> None:
    lo, hi = _span(points, peaks)
    _ceiling_lines(ax, peaks, lo, hi)
    for i, point in enumerate(points):
        bound = bound_of(point, peaks)
        marker = "o*sD^v"[i % 6]
        if point.achieved is None:
            # kernels of equal intensity (softmax, layer norm) share an x: a dash pattern and a name
            # at its own height along the line tell them apart
            ax.axvline(
                point.intensity,
                color=f"C{i % 10}",
                ls=(i * 2, (2, 2 + i)),
                lw=1.6,
                label=_untimed_label(point, bound),
            )
            if bound is not None:  # where the line meets the roof: the most it could reach
                ax.plot(
                    [point.intensity],
                    [bound.attainable],
                    "o",
                    mfc="white",
                    ms=8,
                    color=f"C{i % 10}",
                    zorder=5,
                )
            ax.text(
                point.intensity,
                0.04 + 0.22 * (i % 4),
                f" {point.label}",
                transform=ax.get_xaxis_transform(),
                rotation=90,
                va="bottom",
                fontsize=9,
                color=f"C{i % 10}",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
            continue
        label = f"{point.label}: {bound.label() if bound else ''}"
        if ceiling_warnings(point, peaks):
            label += " (ABOVE A CEILING: see warnings)"
        ax.plot(
            [point.intensity],
            [point.achieved],
            marker,
            ms=9,
            color=f"C{i % 10}",
            label=label,
            zorder=5,
        )
        if len(points) <= 2:  # with more, labels collide; the legend carries them
            ax.annotate(
                bound.label() if bound else point.label,
                (point.intensity, point.achieved),
                textcoords="offset points",
                xytext=(6, -12),
                fontsize=8,
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title(points, peaks), fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    sources = _sources_note(points)
    if any(p.achieved is None for p in points):
        sources += "\n" + UNTIMED_NOTE
    # outside the axes, so it never hides a kernel's point
    ax.legend(
        fontsize=9,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        title=sources,
        title_fontsize=8,
        borderaxespad=0.0,
    )


def title(points: list[RooflinePoint], peaks: Peaks) -> str:
    """The plot's title: whose ceilings these are."""
    return f"Roofline: {ceilings_source(peaks)}"


UNTIMED_NOTE = (
    "not timed here (no GPU): a vertical line is a kernel's arithmetic intensity,\n"
    "its hollow circle where it meets the roof (the most it could reach there)"
)


def _untimed_label(point: RooflinePoint, bound: Bound | None) -> str:
    head = f"{point.label}: {point.intensity:.3g} FLOP/B, not timed"
    if bound is None:
        return head + " (placed by intensity)"
    return head + f"; at most {rate_text(bound.attainable)} ({bound.label()})"


def rate_text(flops: float) -> str:
    return f"{flops / 1e12:.3g} TFLOP/s" if flops >= 1e12 else f"{flops / 1e9:.3g} GFLOP/s"


def _sources_note(points: list[RooflinePoint]) -> str:
    kinds = sorted({f"FLOPs {p.flops_source}; bytes {p.bytes_source}" for p in points})
    return "\n".join(kinds[:3]) + ("\nsolid: measured, dashed: datasheet")
