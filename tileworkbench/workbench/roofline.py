"""The roofline plot of one or more kernels against a device's ceilings: `Roofline` (shows itself as
a PNG in notebooks, a summary as text) and `roofline(items)` for several reports on one plot.

The model (points, bounds, warnings) is roofline_model.py, the drawing roofline_chart.py, the
ceilings ceilings.py; their names are importable from here too.
"""

from __future__ import annotations

from .ceilings import Peaks
from .peaks import get_peaks
from .roofline_chart import chart_bytes, figure, rate_text
from .roofline_model import (  # noqa: F401  (this module's public names since the roofline began)
    COMPUTE_ORDER,
    MEMORY_LEVELS,
    OVER,
    Bound,
    RooflinePoint,
    bound_of,
    ceiling_warnings,
    ceilings_source,
    compute_kind,
)


class Roofline:
    """A roofline plot of `points` against `peaks`; shows itself as PNG in notebooks."""

    def __init__(self, points: list[RooflinePoint], peaks: Peaks | None = None):
        self.points = list(points)
        self.peaks = peaks or get_peaks()

    def bounds(self) -> list[Bound | None]:
        return [bound_of(p, self.peaks) for p in self.points]

    def figure(self, size: tuple[float, float] = (11.0, 5.0)):
        """A matplotlib Figure (not attached to pyplot, so nothing leaks into a notebook)."""
        return figure(self.points, self.peaks, size)

    def to_bytes(self, fmt: str = "png") -> bytes:
        return chart_bytes(self.points, self.peaks, fmt)

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
                where = f"at most {rate_text(bound.attainable)} there ({where})"
            lines.append(f"  {point.label}: {point.intensity:.3g} FLOP/B, {achieved}, {where}")
        lines += [f"  warning: {w}" for w in self.warnings()]
        return "\n".join(lines)


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
