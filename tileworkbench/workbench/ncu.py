"""Nsight Compute (`ncu`) for `--profile`: find it, run it on a child Python process that launches the
kernel (ncu profiles processes, not a function in this one), and parse what it writes: the source
page (one row per SASS instruction with its counters) and the raw page (the kernel's totals).

ncu always runs with `--clock-control none` (the GPU keeps its own clocks, as every timing in the
workbench does) and both pages are read with `--print-units base` (bytes, seconds, no K/M/G).
Where ncu is missing, refuses (no permission for the counters) or profiles nothing, the caller gets
an `NcuUnavailable` whose message is the one line the report shows.
"""

from __future__ import annotations

import csv
import glob
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 600  # one kernel under `--set full` replays ~40 passes; a big launch takes minutes


class NcuUnavailable(RuntimeError):
    """ncu could not measure: the message says why, in one line."""


def find_ncu() -> str | None:
    """The `ncu` executable: $TILEWORKBENCH_NCU, the PATH, then the usual CUDA install folders."""
    env = os.environ.get("TILEWORKBENCH_NCU")
    if env:
        return env if os.path.isfile(env) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in (
        "/usr/local/cuda/bin/ncu",
        "/usr/local/cuda*/bin/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
    ):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def profile_command(
    ncu: str, script: str, kernel: str, report: str, python: str = sys.executable
) -> list[str]:
    """ncu on `python script`, the first launch of `kernel` only, every section (`--set full`:
    SourceCounters with PC sampling, memory tables, occupancy, speed of light)."""
    return [
        ncu,
        "--clock-control",
        "none",
        "--set",
        "full",
        "--import-source",
        "no",
        "-k",
        f"regex:^{kernel}$",
        "-c",
        "1",
        "-f",
        "-o",
        report,
        python,
        script,
    ]


def export_commands(ncu: str, report: str) -> dict[str, list[str]]:
    """The two pages the parser reads back from a saved report."""
    base = [ncu, "-i", report, "--csv", "--print-units", "base"]
    return {
        "source": base + ["--page", "source", "--print-source", "sass"],
        "raw": base + ["--page", "raw"],
    }


def _why_failed(output: str) -> str | None:
    """The one-line reason in ncu's output, where it names a known one."""
    if "ERR_NVGPUCTRPERM" in output:
        return (
            "ncu is not permitted to read the GPU's performance counters (ERR_NVGPUCTRPERM): "
            "run as root or allow it (NVreg_RestrictProfilingToAdminUsers=0)"
        )
    if "LibraryNotLoaded" in output or "Failed to initialize the profiler" in output:
        return "ncu could not start its profiler on this machine (no hardware counters here)"
    if "No kernels were profiled" in output:
        return "ncu profiled no kernel: the child process launched none of that name"
    return None


def run_ncu(
    script: str, kernel: str, workdir: str, env: dict | None = None, timeout: int = TIMEOUT_S
) -> dict[str, str]:
    """Profile the first launch of `kernel` by `python script`; the source and raw pages as CSV text.
    Raises NcuUnavailable with the reason when ncu is missing, refuses or measures nothing."""
    ncu = find_ncu()
    if ncu is None:
        raise NcuUnavailable("ncu (Nsight Compute) is not installed here")
    report = str(Path(workdir) / "profile")
    run_env = dict(os.environ, **(env or {}))
    try:
        proc = subprocess.run(
            profile_command(ncu, script, kernel, report),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=workdir,
            env=run_env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NcuUnavailable(f"ncu did not finish within {timeout} s") from None
    output = proc.stdout + proc.stderr
    why = _why_failed(output)
    if why is not None or not Path(report + ".ncu-rep").exists():
        tail = output.strip().splitlines()[-1:] or ["(no output)"]
        raise NcuUnavailable(why or f"ncu wrote no report (exit {proc.returncode}): {tail[0]}")
    pages = {}
    for page, cmd in export_commands(ncu, report + ".ncu-rep").items():
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if out.returncode != 0:
            raise NcuUnavailable(
                f"ncu could not export its {page} page: {out.stderr.strip()[:200]}"
            )
        pages[page] = out.stdout
    pages["log"] = output
    return pages


def number(text: str) -> float | None:
    """A CSV cell as a number (ncu may group thousands with commas), or None."""
    text = text.strip().replace(",", "")
    if not text or text in ("n/a", "N/A", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row]


# ncu's units (the raw page keeps ns and byte/s prefixes even with --print-units base) -> factor to SI
_UNIT_SCALE = {
    "ns": 1e-9,
    "nsecond": 1e-9,
    "us": 1e-6,
    "usecond": 1e-6,
    "ms": 1e-3,
    "msecond": 1e-3,
    "s": 1.0,
    "second": 1.0,
}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def unit_scale(unit: str) -> float:
    """The factor that turns a value in `unit` into seconds, bytes or bytes/second (1 otherwise)."""
    if unit in _UNIT_SCALE:
        return _UNIT_SCALE[unit]
    base = unit.split("/")[0]
    if base[:1] in _PREFIX and base[1:] in ("byte", "B"):
        return _PREFIX[base[0]]
    return 1.0


def parse_raw(text: str) -> list[dict[str, float | str]]:
    """The raw page: one dict per profiled kernel, metric name -> value (numbers as floats, in
    seconds and bytes whatever unit the page printed)."""
    rows = [r for r in _rows(text) if not r[0].startswith("==")]
    if not rows:
        return []
    header = rows[0]
    body = rows[1:]
    units = [""] * len(header)
    if body and body[0][0] == "":  # the units row
        units, body = body[0], body[1:]
    kernels = []
    for row in body:
        entry: dict[str, float | str] = {}
        for name, unit, cell in zip(header, units, row):
            value = number(cell)
            entry[name] = value * unit_scale(unit) if value is not None else cell
        kernels.append(entry)
    return kernels


@dataclass
class SourcePage:
    """The source page of one kernel: the column names and one row per SASS instruction."""

    kernel: str
    columns: list[str]
    rows: list[dict[str, float | str]] = field(default_factory=list)

    def address(self, row: dict) -> int:
        """The instruction's offset in the kernel: ncu prints virtual addresses, so the kernel's
        first instruction is subtracted (offset 0 is the entry, as in nvdisasm's listing)."""
        return self._absolute(row) - self.base

    @property
    def base(self) -> int:
        return min(self._absolute(r) for r in self.rows) if self.rows else 0

    @staticmethod
    def _absolute(row: dict) -> int:
        return int(str(row.get("Address") or row.get("# Address")), 16)

    def total(self, column: str) -> float:
        return sum(
            float(r.get(column) or 0.0) for r in self.rows if isinstance(r.get(column), float)
        )

    def numeric_columns(self) -> list[str]:
        return [
            c
            for c in self.columns
            if any(isinstance(r.get(c), float) for r in self.rows)
            and c not in ("Address", "# Address")
        ]


def _is_header(row: list[str]) -> bool:
    return bool(row) and row[0].strip() in ("Address", "# Address")


def parse_source(text: str) -> list[SourcePage]:
    """The source page (`--page source --csv --print-source sass`): one SourcePage per kernel. A
    kernel's block starts at a header row whose first cell is `# Address`/`Address`; rows before
    it that name a kernel (`Kernel Name`, `"kernel_name"`) label it."""
    pages: list[SourcePage] = []
    label = ""
    current: SourcePage | None = None
    for row in _rows(text):
        first = row[0].strip()
        if _is_header(row):
            current = SourcePage(label, [c.strip() for c in row])
            pages.append(current)
            continue
        if current is not None and first.startswith("0x") or (current is not None and _hex(first)):
            entry: dict[str, float | str] = {}
            for name, cell in zip(current.columns, row):
                value = number(cell) if name not in ("Address", "# Address", "Source") else None
                entry[name] = value if value is not None else cell.strip()
            current.rows.append(entry)
            continue
        if first.startswith("=="):
            continue
        # anything else between blocks: the kernel's name line
        label = next((c.strip() for c in reversed(row) if c.strip()), first)
        current = None
    return pages


def _hex(text: str) -> bool:
    try:
        int(text, 16)
        return True
    except ValueError:
        return False
