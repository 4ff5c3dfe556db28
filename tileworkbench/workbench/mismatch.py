"""Where a check fails: a heatmap of the mismatching elements and which rows, columns and blocks
(programs) hold them. Uses the check's own tolerances, so the map and the verdict agree.
"""

from __future__ import annotations

import base64
import html
import io
import math

import numpy as np

from .check import to_host

MAX_CELLS = 96
WRAP = 64


def mismatch_mask(out, ref, rtol: float, atol: float) -> np.ndarray:
    """True where `out` and `ref` differ beyond the tolerance (NaN matches only NaN)."""
    o = to_host(out).astype(np.float64)
    r = np.asarray(to_host(ref), np.float64).reshape(o.shape)
    return ~np.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True)


def _ranges(indices: np.ndarray, limit: int = 6) -> str:
    """`[3, 4, 5, 9]` -> "3-5, 9" (the first `limit` runs)."""
    if indices.size == 0:
        return "none"
    runs, start, prev = [], int(indices[0]), int(indices[0])
    for i in indices[1:]:
        if int(i) != prev + 1:
            runs.append((start, prev))
            start = int(i)
        prev = int(i)
    runs.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return text + (" ..." if len(runs) > limit else "")


class MismatchSection:
    """The bad elements of a failed check: counts by row, column and block, and a heatmap."""

    title = "where the check fails"

    def __init__(self, bad: np.ndarray, block: int | None = None):
        self.bad = np.asarray(bad, bool)
        self.block = block  # elements per program along a 1-D output, when a BLOCK constexpr says

    def grid(self) -> np.ndarray:
        """The mask as 2-D: itself, rows of `block` (one per program) for 1-D, or rows x last dim."""
        bad = self.bad
        if bad.ndim == 2:
            return bad
        if bad.ndim > 2:
            return bad.reshape(-1, bad.shape[-1])
        width = self.block if self.block and self.block <= 4096 else WRAP
        padded = np.zeros(math.ceil(bad.size / width) * width, bool)
        padded[: bad.size] = bad
        return padded.reshape(-1, width)

    def text(self) -> list[str]:
        bad = self.bad
        lines = [f"{int(bad.sum())} of {bad.size} elements differ"]
        if bad.ndim == 1:
            lines.append(f"elements: {_ranges(np.nonzero(bad)[0])}")
            if self.block:
                blocks = np.unique(np.nonzero(bad)[0] // self.block)
                lines.append(f"blocks of {self.block} (program ids): {_ranges(blocks)}")
        else:
            grid = bad.reshape(-1, bad.shape[-1])
            lines.append(f"rows: {_ranges(np.nonzero(grid.any(axis=1))[0])}")
            lines.append(f"columns: {_ranges(np.nonzero(grid.any(axis=0))[0])}")
        return lines

    def png(self) -> str:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        grid = self.grid().astype(np.float64)
        bin_r = math.ceil(grid.shape[0] / MAX_CELLS)
        bin_c = math.ceil(grid.shape[1] / MAX_CELLS)
        rows, cols = math.ceil(grid.shape[0] / bin_r), math.ceil(grid.shape[1] / bin_c)
        padded = np.zeros((rows * bin_r, cols * bin_c))
        padded[: grid.shape[0], : grid.shape[1]] = grid
        share = padded.reshape(rows, bin_r, cols, bin_c).mean(axis=(1, 3))
        fig = Figure(figsize=(6.0, 2.2 + 2.4 * min(1.0, rows / cols)))
        ax = fig.subplots()
        extent = (0, cols * bin_c, rows * bin_r, 0)  # axes count elements, not cells
        shown = ax.imshow(
            share,
            cmap="Reds",
            vmin=0,
            vmax=1,
            interpolation="nearest",
            aspect="auto",
            extent=extent,
        )
        what = (
            "row = one block (program)" if self.bad.ndim == 1 and self.block else "rows x columns"
        )
        binned = f", {bin_r}x{bin_c} elements per cell" if bin_r * bin_c > 1 else ""
        ax.set_title(f"mismatching elements ({what}{binned})", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("block" if self.bad.ndim == 1 and self.block else "row", fontsize=8)
        ax.set_xlabel("element in block" if self.bad.ndim == 1 else "column", fontsize=8)
        fig.colorbar(shown, ax=ax, label="share wrong")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80)
        return base64.b64encode(buffer.getvalue()).decode()

    def html(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.text())
        if not hasattr(self, "_png"):
            self._png = self.png()  # drawn once: every view of the report shows it
        return f'<ul>{items}</ul><img alt="mismatch map" src="data:image/png;base64,{self._png}">'


def block_size(report) -> int | None:
    """The elements per program of a 1-D kernel: its one constexpr named BLOCK..., if it has one."""
    constexprs = report.metadata.get("constexprs") or {}
    values = [v for k, v in constexprs.items() if k.upper().startswith("BLOCK")]
    try:
        return int(values[0]) if len(values) == 1 else None
    except (TypeError, ValueError):
        return None
