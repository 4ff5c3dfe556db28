"""Executes the notebooks and stores them with their outputs.

    python notebooks/execute_notebooks.py [NAME ...]

Each notebook (notebooks/*.ipynb and the puzzles) runs with nbclient as a learner without a GPU
meets it: kernels in the interpreter, GPU stages compiled for sm_90, the GPU results recorded in
notebooks/data/ shown in place of GPU-only cells. Then it is tidied (widget views and widget state
go; the static HTML view stays, without colours or the IR after each pass; no execution timestamps)
and stamped with a fingerprint of what its outputs came from (its cells, the recorded data it shows)
and whether the SASS tools were there. tests/workbench/test_notebooks.py checks the stamp without
running anything, and re-executes every notebook to compare what it prints with the stored outputs.

Run it after editing a builder (build_notebooks.py, build_puzzles.py: they write notebooks without
outputs) or re-recording notebooks/data/ on a GPU (bench/record_notebook_data.py). It needs
`nvdisasm` (`pip install "tileworkbench[sass]"`), so the stored notebooks show SASS.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STAMP = "tileworkbench"
# what `show_recorded("02_fused_softmax")`, `load_recorded("03_matmul")` or
# `recorded_profiles("07_profiling")` reads (notebooks/data/)
_RECORD_USE = re.compile(
    r"""(?:show_recorded|load_recorded|recorded_profiles)\(\s*["'](\w+)["']""")


def notebook_paths() -> list[Path]:
    return sorted(HERE.glob("*.ipynb")) + sorted((HERE / "puzzles").glob("*.ipynb"))


def recorded_data(nb) -> list[Path]:
    """The files of notebooks/data/ that the notebook's cells show."""
    names = {m for cell in nb.cells for m in _RECORD_USE.findall(cell.source)}
    return [DATA / f"{name}.json" for name in sorted(names)]


def fingerprint(nb) -> str:
    """A hash of what the stored outputs came from: every cell's source, the recorded data shown."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        digest.update(f"{cell.cell_type}\0{cell.source}\0".encode())
    for path in recorded_data(nb):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
    return digest.hexdigest()


def sass_tools() -> bool:
    """Whether this machine makes the `sass` stage (ptxas and nvdisasm found)."""
    from tileworkbench.backends.nvptx.tools import missing_for

    return missing_for("sass") is None


# Run by the kernel before the first cell: reports show their compact static view (no colours, no IR
# after each pass: a fifth of the size) and no widget view
COMPACT_REPORTS = """
from tileworkbench.workbench.html_view import render_report
from tileworkbench.workbench.report import KernelReport

get_ipython().display_formatter.mimebundle_formatter.for_type(
    KernelReport,
    lambda report: {"text/plain": repr(report), "text/html": render_report(report, compact=True)},
)
"""


def environment(folder: str) -> dict[str, str]:
    """The variables a notebook runs under: the interpreter even on a GPU machine, this checkout's
    package, a fresh compile cache and IPython profile (compact reports) in `folder`, no display."""
    path = os.environ.get("PYTHONPATH", "")
    startup = Path(folder) / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-compact-reports.py").write_text(COMPACT_REPORTS)
    return {
        "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
        "TILEWORKBENCH_INTERPRET": "1",
        "TILEWORKBENCH_CACHE_DIR": str(Path(folder) / "cache"),
        "IPYTHONDIR": str(Path(folder) / "ipython"),
        "MPLBACKEND": "Agg",
    }


def execute(nb, folder: Path, timeout: int = 300):
    """Run every cell of `nb` in a fresh kernel started in `folder`; returns `nb` with its outputs.

    An error in a cell raises nbclient's CellExecutionError (the notebook stops as Run All does)."""
    import nbclient

    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.update(environment(scratch))
        try:
            client = nbclient.NotebookClient(
                nb, timeout=timeout, kernel_name="python3", record_timing=False,
                resources={"metadata": {"path": str(folder)}},
            )
            client.execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return nb


def tidy(nb):
    """Drop what a stored notebook must not carry: widget views and their state (megabytes, and
    useless without the kernel: the static HTML view beside them shows the same report) and
    execution timestamps."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
            output.get("metadata", {}).pop(WIDGET_VIEW, None)
    return nb


def stamp(nb):
    nb.metadata[STAMP] = {"fingerprint": fingerprint(nb), "sass": sass_tools()}
    return nb


def printed_text(nb) -> list[str]:
    """Per code cell, the text it printed and the plain-text form of what it displayed, as one
    string (a print may arrive in one stream message or several): compared between a stored notebook
    and a fresh run. Workbench reports are left out (they hold the interpreter's timings); their
    stages are checked by the claim checks."""
    return ["".join(_text(o) for o in cell.outputs if not _is_report(o))
            for cell in nb.cells if cell.cell_type == "code"]


def _text(output) -> str:
    if output.get("output_type") == "stream":
        return "".join(output["text"])
    return "".join(output.get("data", {}).get("text/plain", "")) + "\n"


def _is_report(output) -> bool:
    return 'class="twr"' in output.get("data", {}).get("text/html", "")


def store(path: Path) -> int:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    stamp(tidy(execute(nb, path.parent)))
    nbformat.write(nb, path)
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all), e.g. 03_matmul")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if not sass_tools():
        print('nvdisasm or ptxas is missing: pip install "tileworkbench[sass]" (the stored '
              "notebooks show SASS)", file=sys.stderr)
        return 1
    paths = [p for p in notebook_paths() if not args.names or p.stem in args.names]
    for path in paths:
        size = store(path)
        print(f"stored {path.relative_to(ROOT)} ({size / 1e3:.0f} kB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
