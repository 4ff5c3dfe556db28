"""The roofline: arithmetic intensity (FLOP/byte) against FLOP/s, log-log, with a device's ceilings.

Hierarchical: one bandwidth slope per memory level (L2, DRAM) and one roof per compute kind (fp64,
fp32 CUDA cores; tf32, bf16, fp16 tensor cores). Measured ceilings are solid, datasheet ones dashed;
each kernel is a point labelled with its % of the ceiling that bounds it at its intensity, and a point
above a ceiling gets a warning (its bytes came from a faster level, or the counts or the time are off).
An untimed kernel (no GPU) is a vertical line at its intensity with a hollow circle where it meets the
roof, and the title says whose ceilings these are (a datasheet's when none was measured here).
matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from .peaks import MEMORY_LEVELS, Peak, Peaks, get_peaks

COMPUTE_ORDER = ("fp64", "fp32", "tf32", "bf16", "fp16")
OVER = 1.05  # a point this far above a ceiling is flagged (timing noise stays below it)
COLORS = {
    "l2": "#17becf",
    "fp64": "#7f7f7f",
    "dram": "#1f77b4",
    "fp32": "#2ca02c",
    "tf32": "#9467bd",
    "fp16": "#d62728",
    "bf16": "#ff7f0e",
}


@dataclass
class RooflinePoint:
    """One kernel (or config) on the roofline. `seconds` None places it by intensity only."""

    label: str
    flops: float
    bytes: float
    seconds: float | None
    compute: str = "fp32"  # which compute ceiling bounds it: fp32, tf32, fp16 or bf16
    flops_source: str = "counted from the IR"
    bytes_source: str = "launch arrays"

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved(self) -> float | None:
        """FLOP/s achieved, or None without a time."""
        return self.flops / self.seconds if self.seconds else None

    @property
    def bandwidth(self) -> float | None:
        return self.bytes / self.seconds if self.seconds else None


@dataclass
class Bound:
    """The ceiling that limits a point at its intensity, and how close the point comes."""

    name: str  # "dram" or a compute ceiling name
    attainable: float  # FLOP/s
    fraction: float | None  # achieved / attainable

    def label(self) -> str:
        what = "DRAM bandwidth" if self.name == "dram" else f"{self.name} compute"
        if self.fraction is None:
            return f"{what} bound"
        return f"{100 * self.fraction:.0f}% of {what} bound"


def bound_of(point: RooflinePoint, peaks: Peaks) -> Bound | None:
    """min(peak compute, bandwidth x intensity) for the point's compute kind, and its fraction."""
    dram = peaks.best("dram")
    compute = peaks.best(point.compute) or peaks.best("fp32")
    if dram is None or compute is None or not point.bytes:
        return None
    memory_roof = dram.value * point.intensity
    name, attainable = (
        ("dram", memory_roof) if memory_roof < compute.value else (compute.name, compute.value)
    )
    achieved = point.achieved
    return Bound(name, attainable, achieved / attainable if achieved is not None else None)


def ceiling_warnings(point: RooflinePoint, peaks: Peaks) -> list[str]:
    """What a point above a ceiling means: above the DRAM slope but under L2's, its bytes were served by
    L2 (the counted bytes are the algorithmic minimum); above every slope or the compute roof, the
    counts or the time are off."""
    achieved = point.achieved
    if achieved is None or not point.bytes:
        return []
    out = []
    compute = peaks.best(point.compute) or peaks.best("fp32")
    if compute is not None and achieved > OVER * compute.value:
        out.append(
            f"{point.label} is above the {compute.name} ceiling ({achieved / compute.value:.2f}x): "
            "the FLOP count is too high, the time too short, or the kernel uses faster units"
        )
    dram, l2 = peaks.best("dram"), peaks.best("l2")
    if dram is not None and achieved > OVER * dram.value * point.intensity:
        ratio = achieved / (dram.value * point.intensity)
        if l2 is not None and achieved <= OVER * l2.value * point.intensity:
            out.append(
                f"{point.label} is above the DRAM ceiling ({ratio:.2f}x) but under L2's: "
                "its data came from the L2 cache (a working set that fits, or a rerun)"
            )
        else:
            out.append(
                f"{point.label} is above the DRAM ceiling ({ratio:.2f}x)"
                + (" and L2's" if l2 is not None else "")
                + ": the bytes are undercounted (pass --bytes) or the time is off"
            )
    return out


def compute_kind(dot_dtype: str | None) -> str:
    """The compute ceiling for a kernel whose tt.dot takes `dot_dtype` (None: no dot, plain FP32)."""
    return {"f16": "fp16", "bf16": "bf16", "tf32": "tf32"}.get(dot_dtype or "", "fp32")


class Roofline:
    """A roofline plot of `points` against `peaks`; shows itself as PNG in notebooks."""

    def __init__(self, points: list[RooflinePoint], peaks: Peaks | None = None):
        self.points = list(points)
        self.peaks = peaks or get_peaks()

    def bounds(self) -> list[Bound | None]:
        return [bound_of(p, self.peaks) for p in self.points]

    def figure(self, size: tuple[float, float] = (11.0, 5.0)):
        """A matplotlib Figure (not attached to pyplot, so nothing leaks into a notebook)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=size, dpi=100)
        ax = fig.add_subplot(1, 1, 1)
        _draw(ax, self.points, self.peaks)
        fig.tight_layout()
        return fig

    def to_bytes(self, fmt: str = "png") -> bytes:
        buf = io.BytesIO()
        self.figure().savefig(buf, format=fmt)
        return buf.getvalue()

    def save(self, path: str) -> str:
        """Save as PNG or SVG (chosen by the file's suffix)."""
        fmt = "svg" if str(path).lower().endswith(".svg") else "png"
        with open(path, "wb") as f:
            f.write(self.to_bytes(fmt))
        return str(path)

    def _repr_png_(self) -> bytes:
        return self.to_bytes("png")

    def warnings(self) -> list[str]:
        """Every point that lands above a ceiling, and what that means."""
        return [w for p in self.points for w in ceiling_warnings(p, self.peaks)]

    def __repr__(self) -> str:
        lines = [f"Roofline on {ceilings_source(self.peaks)}"]
        for point, bound in zip(self.points, self.bounds()):
            achieved = f"{point.achieved / 1e12:.3g} TFLOP/s" if point.achieved else "not timed"
            where = bound.label() if bound else "no ceilings"
            if bound is not None and not point.achieved:
                where = f"at most {_rate(bound.attainable)} there ({where})"
            lines.append(f"  {point.label}: {point.intensity:.3g} FLOP/B, {achieved}, {where}")
        lines += [f"  warning: {w}" for w in self.warnings()]
        return "\n".join(lines)


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
                ax.plot([point.intensity], [bound.attainable], "o", mfc="white", ms=8,
                        color=f"C{i % 10}", zorder=5)
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


def ceilings_source(peaks: Peaks) -> str:
    """Whose ceilings these are, in words: measured on this machine, or a datasheet's."""
    if peaks.measured:
        return f"{peaks.device}, measured"
    return f"{peaks.device} datasheet ceilings (none measured here)"


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
    return head + f"; at most {_rate(bound.attainable)} ({bound.label()})"


def _rate(flops: float) -> str:
    return f"{flops / 1e12:.3g} TFLOP/s" if flops >= 1e12 else f"{flops / 1e9:.3g} GFLOP/s"


def _sources_note(points: list[RooflinePoint]) -> str:
    kinds = sorted({f"FLOPs {p.flops_source}; bytes {p.bytes_source}" for p in points})
    return "\n".join(kinds[:3]) + ("\nsolid: measured, dashed: datasheet")


def roofline(items: list, peaks: Peaks | None = None, labels: list[str] | None = None) -> Roofline:
    """Several kernels (reports, RooflinePoints) on one roofline plot.

    Args:
        items: `KernelReport`s (from the magic or `tw.inspect`) or `RooflinePoint`s.
        peaks: the ceilings; default: the current GPU's (measured if cached) or the H200 datasheet.
        labels: optional labels replacing each item's own.
    """
    if not isinstance(items, (list, tuple)):
        items = [items]
    points = []
    for i, item in enumerate(items):
        point = item if isinstance(item, RooflinePoint) else getattr(item, "point", None)
        if point is None:
            raise ValueError(
                f"item {i} ({type(item).__name__}) has no roofline point: it needs "
                "FLOPs and bytes (launch it, or pass --flops/--bytes)"
            )
        if labels:
            point = RooflinePoint(**{**point.__dict__, "label": labels[i]})
        points.append(point)
    return Roofline(points, peaks)
