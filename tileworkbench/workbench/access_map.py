"""The memory access picture of one program: which elements each load and store touched, masked-off
lanes shown apart, out-of-bounds lanes in red (the tile picture teachers draw by hand).

It reruns one program of a recorded launch in the interpreter on copies of the arguments (the
registry's `record_program`, the interpreter's), so it works for GPU launches too and never touches
the user's data.
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

import numpy as np

from ..backends import backend_for

# the interpreter's recording (backends/interpreter/recording.py), asked for through the registry
Access = ProgramAccesses = Any

MAX_CELLS = 96  # a picture is at most this many cells on a side; larger arrays are binned
WRAP = 64  # 1-D arrays are drawn in rows of this many elements
MAX_PANELS = 8
COLORS = {
    "untouched": (0.93, 0.93, 0.93),
    "load": (0.29, 0.56, 0.85),
    "store": (0.95, 0.55, 0.15),
    "atomic": (0.55, 0.35, 0.75),
    "masked": (0.55, 0.55, 0.55),
    "out of bounds": (0.85, 0.1, 0.1),
}


def host_copy(value: Any) -> Any:
    """A NumPy copy of an array argument (CuPy, torch or NumPy); scalars as they are."""
    if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):
        return value.get()
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return value.detach().cpu().numpy().copy()
    if hasattr(value, "__array_interface__"):
        return np.array(value, copy=True)
    return value


def record_launch_program(record: Any, pid: tuple[int, ...] = (0, 0, 0)) -> ProgramAccesses:
    """What program `pid` of a recorded launch touched (run alone, on copies of its arguments)."""
    func = record.compiled.ir
    names = [p.name_hint for p in func.args]
    args = [host_copy(record.args[name]) for name in names]
    pid3 = tuple(pid) + (0,) * (3 - len(pid))
    return backend_for("interpreter").record_program(func, args, tuple(record.grid), pid3, names)


def launch_bytes(record: Any) -> int:
    return sum(int(getattr(v, "nbytes", 0) or 0) for v in record.args.values())


def grid_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """The rows and columns an array is drawn as (2-D as itself, 1-D wrapped, N-D as rows x last)."""
    size = int(np.prod(shape)) if shape else 1
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    if len(shape) > 2:
        return size // int(shape[-1]), int(shape[-1])
    columns = min(WRAP, max(size, 1))
    return math.ceil(size / columns), columns


def zoom_rows(access: Access, rows: int, cols: int, total_rows: int) -> tuple[int, int]:
    """The rows to draw: all of them when they fit MAX_CELLS unbinned; else the rows of this
    program's lanes and as many again on each side (its neighbours), so a large array does not
    shrink the program to a thin line."""
    offsets = access.offsets.reshape(-1)
    if total_rows <= MAX_CELLS or offsets.size == 0:
        return 0, total_rows
    lo, hi = int(offsets.min()), int(offsets.max())
    span = hi - lo + 1
    first = max(0, (lo - span) // cols)
    last = min(total_rows, (hi + span) // cols + 1)
    return (first, last) if last > first else (0, total_rows)


def access_image(access: Access) -> tuple[np.ndarray, tuple[int, int], tuple[int, int]]:
    """An RGB image of the argument with this access's lanes coloured, the bin sizes used and the
    rows shown (first, end): a large array is cut to the program and its neighbours."""
    rows, cols = grid_shape(access.array_shape)
    offsets, active = access.offsets.reshape(-1), access.active.reshape(-1)
    beyond = offsets[active & (offsets >= access.size)]
    extra = 0 if beyond.size == 0 else min(8, math.ceil((beyond.max() + 1) / cols) - rows)
    total_rows = rows + max(extra, 0)
    first, end = zoom_rows(access, rows, cols, total_rows)
    shown = end - first
    bin_r, bin_c = math.ceil(shown / MAX_CELLS), math.ceil(cols / MAX_CELLS)
    image = np.empty((math.ceil(shown / bin_r), math.ceil(cols / bin_c), 3))
    image[:] = COLORS["untouched"]
    image[max(0, math.ceil((rows - first) / bin_r)) :] = (1.0, 1.0, 1.0)  # past the array's end

    def paint(selected: np.ndarray, color) -> None:
        inside = selected[(selected >= first * cols) & (selected < end * cols)] - first * cols
        image[(inside // cols) // bin_r, (inside % cols) // bin_c] = color

    paint(offsets[~active], COLORS["masked"])
    in_bounds = offsets[active & (offsets >= 0) & (offsets < access.size)]
    paint(in_bounds, COLORS.get(access.kind, COLORS["load"]))
    paint(offsets[active & ((offsets < 0) | (offsets >= access.size))], COLORS["out of bounds"])
    return image, (bin_r, bin_c), (first, end)


def describe(access: Access) -> str:
    """One line: what the access touched, how many lanes were masked off, what went out of bounds."""
    offsets, active = access.offsets.reshape(-1), access.active.reshape(-1)
    touched = offsets[active]
    text = f"{access.kind} {access.argument}{list(access.array_shape)}"
    text += f" (line {access.line})" if access.line else ""
    text += f": {offsets.size} lanes, {np.unique(touched).size} elements"
    if touched.size:
        text += f" in {int(touched.min())}..{int(touched.max())}"
    if (~active).any():
        text += f", {int((~active).sum())} lanes masked off"
    bad = access.out_of_bounds()
    if bad.size:
        shown = ", ".join(str(int(x)) for x in bad[:8]) + (" ..." if bad.size > 8 else "")
        text += f", OUT OF BOUNDS at element offsets {shown} (the array has {access.size})"
    return text


def draw(accesses: ProgramAccesses) -> str | None:
    """The picture of every access (up to MAX_PANELS), as base64 PNG."""
    shown = accesses.accesses[:MAX_PANELS]
    if not shown:
        return None
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    columns = min(2, len(shown))
    rows = math.ceil(len(shown) / columns)
    fig = Figure(figsize=(5.2 * columns, 2.6 * rows + 0.6))
    axes = np.atleast_1d(fig.subplots(rows, columns)).reshape(-1)
    for ax, access in zip(axes, shown):
        image, (bin_r, bin_c), (first, end) = access_image(access)
        # in elements (rows), not cells; a zoomed picture keeps the array's own row numbers
        extent = (0, image.shape[1] * bin_c, first + image.shape[0] * bin_r, first)
        ax.imshow(image, interpolation="nearest", aspect="auto", extent=extent)
        binned = f", {bin_r}x{bin_c} elements per cell" if bin_r * bin_c > 1 else ""
        title = f"{access.kind} {access.argument}" + (
            f" (line {access.line})" if access.line else ""
        )
        rows, cols = grid_shape(access.array_shape)
        if (first, end) != (0, rows) and end - first < rows:
            unit = f" (rows of {cols})" if len(access.array_shape) == 1 else ""
            binned += f"\nrows {first}-{end - 1} of {rows}{unit}: this program and its neighbours"
        ax.set_title(title + binned, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes[len(shown) :]:
        ax.axis("off")
    kinds = {a.kind for a in shown} | {"masked", "out of bounds", "untouched"}
    handles = [Patch(color=COLORS[k], label=k) for k in COLORS if k in kinds]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8)
    fig.suptitle(f"memory touched by program {accesses.pid}", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return base64.b64encode(buffer.getvalue()).decode()


class AccessSection:
    """The access picture of one program, as a report section."""

    def __init__(self, accesses: ProgramAccesses, title: str | None = None):
        self.accesses = accesses
        self.title = title or f"memory accesses of program {accesses.pid}"

    def text(self) -> list[str]:
        lines = [describe(a) for a in self.accesses.accesses]
        if self.accesses.error:
            lines.append("stopped: " + self.accesses.error.splitlines()[0])
        return lines or ["no loads or stores"]

    def html(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.text())
        if not hasattr(self, "_png"):
            self._png = draw(self.accesses)  # drawn once: every view of the report shows it
        png = self._png
        image = f'<img alt="access map" src="data:image/png;base64,{png}">' if png else ""
        return f"<ul>{items}</ul>{image}"

    def _repr_html_(self) -> str:
        return f"<div><b>{html.escape(self.title)}</b>{self.html()}</div>"

    def __repr__(self) -> str:
        return "\n".join([self.title] + self.text())


def access_map(record: Any, pid: tuple[int, ...] = (0, 0, 0)) -> AccessSection:
    """The access picture of program `pid` of a recorded launch (`report.access_map(pid)` calls this)."""
    return AccessSection(record_launch_program(record, pid))
