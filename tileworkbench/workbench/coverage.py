"""The whole-grid coverage view: which output elements no program wrote, which two or more programs
wrote, and which program wrote each (program ids), as a text summary and a picture.

It reruns the whole launch in the interpreter on copies of the arguments
(`backends.interpreter.coverage`), so it works for GPU launches too and never touches the user's
data.
The puzzles' checker shows it on a failure; `report.coverage()` or `coverage(record)` draws it.
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends import backend_for
from .access_map import MAX_CELLS, grid_shape, host_copy

if TYPE_CHECKING:  # the interpreter's records, reached through the registry
    from ..backends.interpreter.coverage import GridCoverage, WriteCoverage

NEVER = (0.12, 0.12, 0.12)
TWICE = (0.85, 0.1, 0.1)
# light colours for "written once", cycled by program number: neighbouring programs differ
PALETTE = [
    (0.65, 0.81, 0.89),
    (0.70, 0.87, 0.54),
    (0.99, 0.75, 0.44),
    (0.79, 0.70, 0.84),
    (1.00, 1.00, 0.60),
    (0.55, 0.83, 0.78),
    (0.99, 0.80, 0.90),
    (0.85, 0.85, 0.85),
]
LISTED = 6  # ranges and overlaps named in the text


def record_launch_coverage(record: Any) -> GridCoverage:
    """Which programs of a recorded launch wrote each element (the whole grid, on copies)."""
    func = record.compiled.ir
    names = [p.name_hint for p in func.args]
    args = [host_copy(record.args[name]) for name in names]
    return backend_for("interpreter").record_coverage(func, args, tuple(record.grid), names)


def _index(cover: WriteCoverage, flat: int) -> str:
    """Element `flat` of the argument as `z[3, 7]` (or `z[12]`)."""
    where = np.unravel_index(flat, cover.shape) if cover.shape else ()
    return f"{cover.argument}[{', '.join(str(int(i)) for i in where)}]"


def _runs(flat: np.ndarray, limit: int = LISTED) -> list[tuple[int, int]]:
    """Sorted flat indices as (first, last) runs of consecutive ones (the first `limit`)."""
    if flat.size == 0:
        return []
    breaks = np.nonzero(np.diff(flat) != 1)[0]
    starts = np.concatenate(([flat[0]], flat[breaks + 1]))
    ends = np.concatenate((flat[breaks], [flat[-1]]))
    return [(int(a), int(b)) for a, b in zip(starts[:limit], ends[:limit])]


def describe(cover: WriteCoverage) -> list[str]:
    """What the summary says of one argument: counts, the unwritten ranges and who overlaps."""
    count = cover.count.reshape(-1)
    never, twice = np.nonzero(count == 0)[0], np.nonzero(count >= 2)[0]
    once = int((count == 1).sum())
    head = f"{cover.argument}{list(cover.shape)}: {count.size} elements: {once} written by one "
    lines = [head + f"program, {never.size} by none, {twice.size} by two or more"]
    if never.size:
        runs = _runs(never)
        shown = ", ".join(
            _index(cover, a) if a == b else f"{_index(cover, a)}..{_index(cover, b)}"
            for a, b in runs
        )
        more = " ..." if len(_runs(never, LISTED + 1)) > LISTED else ""
        lines.append(f"  never written: {shown}{more}")
    for flat in twice[:LISTED]:
        first, second = cover.first.reshape(-1)[flat], cover.second.reshape(-1)[flat]
        extra = f" and {int(count[flat]) - 2} more" if count[flat] > 2 else ""
        lines.append(
            f"  {_index(cover, int(flat))} written by programs {cover.pid_of(int(first))} and "
            f"{cover.pid_of(int(second))}{extra}"
        )
    if twice.size > LISTED:
        lines.append(f"  ... and {twice.size - LISTED} more elements written more than once")
    return lines


def coverage_image(cover: WriteCoverage) -> tuple[np.ndarray, tuple[int, int]]:
    """An RGB image: each element in its writer's colour, unwritten ones dark, overlaps red; binned
    (the worst element of a bin wins) when the array is larger than MAX_CELLS a side."""
    rows, cols = grid_shape(cover.shape)
    count = np.zeros(rows * cols, np.int64)
    count[: cover.count.size] = cover.count.reshape(-1)
    first = np.zeros(rows * cols, np.int64)
    first[: cover.first.size] = cover.first.reshape(-1)
    padding = np.zeros(rows * cols, bool)
    padding[cover.count.size :] = True  # a 1-D array's last row can be short
    bin_r, bin_c = math.ceil(rows / MAX_CELLS), math.ceil(cols / MAX_CELLS)
    out_r, out_c = math.ceil(rows / bin_r), math.ceil(cols / bin_c)

    def binned(values: np.ndarray, fill) -> np.ndarray:
        grid = np.full((out_r * bin_r, out_c * bin_c), fill, values.dtype)
        grid[:rows, :cols] = values.reshape(rows, cols)
        return grid.reshape(out_r, bin_r, out_c, bin_c).swapaxes(1, 2).reshape(out_r, out_c, -1)

    # status per element: 0 written once, 1 never, 2 by two or more; padding counts as once
    status = np.where(count >= 2, 2, np.where((count == 0) & ~padding, 1, 0))
    worst = binned(status, 0).max(axis=2)
    writer = binned(first, 0)[:, :, 0]
    image = np.array(PALETTE)[writer % len(PALETTE)]
    image[binned(padding, True).all(axis=2)] = (1.0, 1.0, 1.0)
    image[worst == 1] = NEVER
    image[worst == 2] = TWICE
    return image, (bin_r, bin_c)


def _label_programs(ax, cover: WriteCoverage, most: int = 48) -> None:
    """Each program's id at the middle of the elements it alone wrote (up to `most` programs)."""
    _, cols = grid_shape(cover.shape)
    first = cover.first.reshape(-1)
    alone = np.nonzero(cover.count.reshape(-1) == 1)[0]
    writers = np.unique(first[alone])
    if writers.size > most:
        return
    for number in writers:
        mine = alone[first[alone] == number]
        pid = cover.pid_of(int(number))
        text = ",".join(str(i) for i in pid[: 1 + (cover.grid[1] > 1) + (cover.grid[2] > 1)])
        ax.text(
            (mine % cols).mean() + 0.5,
            (mine // cols).mean() + 0.5,
            f"({text})",
            ha="center",
            va="center",
            fontsize=7,
        )


def draw(coverage: GridCoverage) -> str | None:
    """The picture of every written argument, as base64 PNG."""
    shown = list(coverage.written.values())[:4]
    if not shown:
        return None
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fig = Figure(figsize=(max(6.4, 5.0 * len(shown)), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(shown))).reshape(-1)
    for ax, cover in zip(axes, shown):
        image, (bin_r, bin_c) = coverage_image(cover)
        extent = (0, image.shape[1] * bin_c, image.shape[0] * bin_r, 0)  # in elements
        ax.imshow(image, interpolation="nearest", aspect="auto", extent=extent)
        binned = f", {bin_r}x{bin_c} elements per cell" if bin_r * bin_c > 1 else ""
        ax.set_title(f"{cover.argument}{list(cover.shape)}{binned}", fontsize=9)
        ax.tick_params(labelsize=7)
        _label_programs(ax, cover)
    handles = [
        Patch(color=PALETTE[0], label="one program (label: its id)"),
        Patch(color=NEVER, label="no program"),
        Patch(color=TWICE, label="two or more programs"),
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=3,
        fontsize=8,
        title="written by",
        title_fontsize=8,
    )
    fig.suptitle(f"which program wrote each element (grid {coverage.grid})", fontsize=10)
    fig.tight_layout(rect=(0, 0.14, 1, 0.93))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return base64.b64encode(buffer.getvalue()).decode()


class CoverageSection:
    """The coverage of a whole launch, as a report section (text and picture)."""

    title = "which programs wrote each output element"

    def __init__(self, coverage: GridCoverage):
        self.coverage = coverage

    @property
    def complete(self) -> bool:
        """Every element of every written argument was written by exactly one program."""
        return all((c.count == 1).all() for c in self.coverage.written.values())

    def text(self) -> list[str]:
        lines = [line for c in self.coverage.written.values() for line in describe(c)]
        if self.coverage.error:
            lines.append("stopped: " + self.coverage.error.splitlines()[0])
        return lines or ["no program stored anything"]

    def html(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.text())
        if not hasattr(self, "_png"):
            self._png = draw(self.coverage)  # drawn once: every view of the report shows it
        image = (
            f'<img alt="coverage map" src="data:image/png;base64,{self._png}">' if self._png else ""
        )
        return f"<ul>{items}</ul>{image}"

    def _repr_html_(self) -> str:
        return f"<div><b>{html.escape(self.title)}</b>{self.html()}</div>"

    def __repr__(self) -> str:
        return "\n".join([self.title] + self.text())


def coverage(record: Any) -> CoverageSection:
    """The coverage view of a recorded launch (`report.coverage()` calls this)."""
    return CoverageSection(record_launch_coverage(record))
