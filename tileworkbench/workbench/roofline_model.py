"""The roofline model: a kernel as a point (FLOPs, bytes, time), the ceiling that bounds it at its
intensity (`bound_of`), what a point above a ceiling means (`ceiling_warnings`), and the ceiling
kinds in drawing order. Plain arithmetic on a device's ceilings (ceilings.py); roofline_chart.py
draws it and roofline.py is the public plot object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..dtypes import BY_IR

if TYPE_CHECKING:
    from .ceilings import Peaks

MEMORY_LEVELS = ("l2", "dram")  # fastest first: the hierarchical roofline draws one slope per level
COMPUTE_ORDER = ("fp64", "fp32", "tf32", "bf16", "fp16")
OVER = 1.05  # a point this far above a ceiling is flagged (timing noise stays below it)


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
    row = BY_IR.get(dot_dtype or "")
    name = row.kind if row is not None else dot_dtype  # "f16" -> "fp16"; "tf32" is no table row
    return name if name in ("fp16", "bf16", "tf32") else "fp32"


def ceilings_source(peaks: Peaks) -> str:
    """Whose ceilings these are, in words: measured on this machine, or a datasheet's."""
    if peaks.measured:
        return f"{peaks.device}, measured"
    return f"{peaks.device} datasheet ceilings (none measured here)"
