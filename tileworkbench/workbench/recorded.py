"""Recorded GPU results for the notebooks: JSON files in notebooks/data/, written on a real GPU by
bench/record_notebook_data.py and shown in place of GPU-only cells on machines without one.

A file holds: {"device", "date", "versions", "peaks": {name: value}, "rows": [{"label", "ms", "flops",
"bytes", "compute", "triton_ms"?, "ptx": {kernel, config, sha256}, ...}], "notes"}. A missing file
is reported, never invented; a row whose PTX today's compiler no longer emits says "re-record"
(record_ptx.py).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from .peaks import UNITS, Peak, Peaks, datasheet_peaks
from .record_ptx import PtxCheck, check_row
from .roofline import Roofline, RooflinePoint

SCRIPT = "bench/record_notebook_data.py"


def data_dirs() -> list[Path]:
    """Where to look: ./data (a notebook's folder), ./notebooks/data, the installed package's and
    the source checkout's."""
    package = Path(__file__).resolve().parents[1]
    return [
        Path("data"),
        Path("notebooks") / "data",
        package / "notebooks" / "data",
        package.parent / "notebooks" / "data",
    ]


@dataclass
class Recorded:
    """One notebook's recorded results, or the fact that there are none yet."""

    name: str
    data: dict | None = None
    path: Path | None = None
    rows: list[dict] = field(default_factory=list)
    _checks: list[PtxCheck] | None = field(default=None, repr=False)

    @property
    def available(self) -> bool:
        return self.data is not None

    def peaks(self) -> Peaks:
        device = self.data.get("device", "GPU")
        measured = {
            k: Peak(k, float(v), UNITS.get(k, "FLOP/s"), "measured", "recorded")
            for k, v in (self.data.get("peaks") or {}).items()
            if k in UNITS
        }
        return Peaks(device, measured=measured, datasheet=datasheet_peaks(device))

    def points(self) -> list[RooflinePoint]:
        stale = {r["label"] for r, c in zip(self.rows, self.ptx_checks()) if not c.current}
        return [
            RooflinePoint(
                r["label"] + (" (older code: re-record)" if r["label"] in stale else ""),
                float(r["flops"]),
                float(r["bytes"]),
                r["ms"] * 1e-3,
                compute=r.get("compute", "fp32"),
                flops_source="counted from the IR",
                bytes_source="launch arrays",
            )
            for r in self.rows
            if r.get("ms") and r.get("flops") and r.get("bytes")
        ]

    def ptx_checks(self) -> list[PtxCheck]:
        """For each row, whether today's compiler still emits the PTX it was timed with (compiled
        once, for sm_90a or whatever the row names: no GPU needed)."""
        if self._checks is None:
            self._checks = [check_row(row) for row in self.rows]
        return self._checks

    def rerecord_notes(self) -> list[str]:
        """ "re-record ..." for each row whose figures are not the current compiler's."""
        return [c.note(r["label"]) for r, c in zip(self.rows, self.ptx_checks()) if not c.current]

    def roofline(self) -> Roofline | None:
        points = self.points()
        return Roofline(points, self.peaks()) if points else None

    def _missing(self) -> str:
        return (
            f"no recorded data yet for {self.name}: run `python {SCRIPT}` on a GPU machine "
            f"to record notebooks/data/{self.name}.json"
        )

    def __repr__(self) -> str:
        if not self.available:
            return self._missing()
        lines = [f"recorded on {self.data.get('device')} ({self.data.get('date', '?')})"]
        for row, check in zip(self.rows, self.ptx_checks()):
            shown = ", ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k != "ptx")
            lines.append(("  " if check.current else "  RE-RECORD (older code): ") + shown)
        return "\n".join(lines + self.rerecord_notes())

    def _repr_html_(self) -> str:
        if not self.available:
            return f"<p><i>{html.escape(self._missing())}</i></p>"
        keys = list(dict.fromkeys(k for row in self.rows for k in row if k != "ptx"))
        head = "<th>code</th>" + "".join(f"<th>{html.escape(k)}</th>" for k in keys)
        body = "".join(
            f"<tr><td>{'current' if check.current else '<b>older: re-record</b>'}</td>"
            + "".join(f"<td>{html.escape(_fmt(row.get(k, '')))}</td>" for k in keys)
            + "</tr>"
            for row, check in zip(self.rows, self.ptx_checks())
        )
        meta = html.escape(
            f"{self.data.get('device')}, {self.data.get('date', '')}, "
            f"{self.data.get('versions', '')}"
        )
        # a wide table scrolls inside its own box instead of being cut off at the output's edge
        table = (
            '<div style="overflow-x:auto;max-width:100%"><table style="font-size:0.85em;'
            f'white-space:nowrap"><tr>{head}</tr>{body}</table></div>'
        )
        notes = [*self.rerecord_notes(), *self.data.get("notes", [])]
        return f"<p><b>Recorded on {meta}</b></p>{table}" + "".join(
            f"<p>{html.escape(n)}</p>" for n in notes
        )


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def load_recorded(name: str, data_dir: str | Path | None = None) -> Recorded:
    """The recorded results of notebook `name` (e.g. "02_fused_softmax"), or an empty `Recorded`."""
    dirs = [Path(data_dir)] if data_dir else data_dirs()
    for folder in dirs:
        path = folder / f"{name}.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except ValueError:
                continue
            return Recorded(name, data, path, list(data.get("rows", [])))
    return Recorded(name)


def show_recorded(name: str, data_dir: str | Path | None = None) -> None:
    """Display a notebook's recorded GPU results (table and roofline) or say there are none yet."""
    recorded = load_recorded(name, data_dir)
    try:
        from IPython.display import display
    except ImportError:
        print(recorded)
        return
    display(recorded)
    plot = recorded.roofline() if recorded.available else None
    if plot is not None:
        display(plot)
