"""The notebooks: stored executed and current, and executed again with nbclient on the CPU path (no
GPU).

Each notebook is stored with its outputs (notebooks/execute_notebooks.py) and a stamp of what they
came from. The fast tests read the stored files only: every cell ran, top to bottom, no error, each
claim check printed its "checked:", no widget state, a small file, and the stamp matches the cells
and recorded data of today. The `notebooks` tests run every notebook again and compare what it
prints with what is stored: a compiler whose output moved, or a notebook edited without being
re-executed, fails here instead of going stale in silence.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
import execute_notebooks as stored  # noqa: E402

NOTEBOOKS = stored.notebook_paths()
MAX_BYTES = 1_200_000  # a stored notebook: reports' static views and a few plots, no widget state
RERUN = "run `python notebooks/execute_notebooks.py {}` (it needs the sass extra)"


def claim_checks(nb) -> list:
    return [cell for cell in nb.cells if "claim-check" in cell.metadata.get("tags", [])]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_executed_and_current(path):
    nb = nbformat.read(path, as_version=4)
    stamp = nb.metadata.get(stored.STAMP)
    assert stamp, f"{path.name} is stored without its outputs: {RERUN.format(path.stem)}"
    assert stamp["fingerprint"] == stored.fingerprint(nb), (
        f"{path.name}: its cells or the recorded data it shows changed since it ran: "
        + RERUN.format(path.stem)
    )
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "not run top to bottom"
    outputs = [o for cell in code for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert "widgets" not in nb.metadata
    assert not [o for o in outputs if stored.WIDGET_VIEW in o.get("data", {})]
    for cell in claim_checks(nb):
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "checked:" in text, cell.source
    assert path.stat().st_size < MAX_BYTES, f"{path.name}: {path.stat().st_size:,} bytes"


def test_the_stamp_sees_a_changed_cell_and_changed_data(tmp_path, monkeypatch):
    nb = nbformat.read(ROOT / "notebooks" / "03_matmul.ipynb", as_version=4)
    before = stored.fingerprint(nb)
    assert [p.name for p in stored.recorded_data(nb)] == ["03_matmul.json"]
    nb.cells[-1].source += " "
    assert stored.fingerprint(nb) != before
    nb.cells[-1].source = nb.cells[-1].source[:-1]
    data = tmp_path / "03_matmul.json"
    data.write_text(json.dumps({"rows": []}))
    monkeypatch.setattr(stored, "DATA", tmp_path)
    assert stored.fingerprint(nb) != before



def test_the_stamp_tracks_the_recorded_profiles_a_notebook_shows(tmp_path, monkeypatch):
    nb = nbformat.read(ROOT / "notebooks" / "07_profiling.ipynb", as_version=4)
    assert "07_profiling.json" in [p.name for p in stored.recorded_data(nb)]
    before = stored.fingerprint(nb)
    data = tmp_path / "07_profiling.json"
    data.write_text(json.dumps({"profiles": []}))
    monkeypatch.setattr(stored, "DATA", tmp_path)
    assert stored.fingerprint(nb) != before

@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_cpu_and_prints_what_is_stored(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    stored.tidy(stored.execute(nb, path.parent))  # a failing cell raises CellExecutionError
    reports = [
        o
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if "text/html" in o.get("data", {}) and 'class="twr"' in o["data"]["text/html"]
    ]
    assert reports or path.parent.name == "puzzles", "no workbench report was displayed"
    failed = [r for r in reports if "FAIL" in r["data"]["text/plain"]]
    assert not failed, failed[0]["data"]["text/plain"]
    checks = claim_checks(nb)
    assert checks or path.parent.name == "puzzles", f"{path.stem} has no claim-check cell"
    for cell in checks:  # each ran to its last line (an assertion that fails stops the notebook)
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        assert "checked:" in text, cell.source
    kept = nbformat.read(path, as_version=4)
    if kept.metadata.get(stored.STAMP, {}).get("sass") != stored.sass_tools():
        pytest.skip("stored with the SASS tools and run without them (or the reverse): what it "
                    "prints is not compared; CI has them (the dev extra)")
    assert stored.printed_text(nb) == stored.printed_text(kept), (
        f"{path.name} prints something else than its stored outputs: " + RERUN.format(path.stem)
    )


def test_built_notebooks_match_their_builder(tmp_path):
    """The .ipynb files in notebooks/ are what build_notebooks.py writes (edit the builder, rebuild)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "notebooks" / "build_notebooks.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    for built in builder.build(tmp_path):
        stored = nbformat.read(ROOT / "notebooks" / built.name, as_version=4)
        fresh = nbformat.read(built, as_version=4)
        assert [c.source for c in stored.cells] == [c.source for c in fresh.cells], built.name
        assert [c.metadata for c in stored.cells] == [c.metadata for c in fresh.cells], built.name


def test_a_failing_tilekernel_cell_stops_nbclient(tmp_path, monkeypatch):
    """An out-of-bounds launch shows its report, then fails the cell: Run All and nbconvert stop."""
    from nbformat.v4 import new_code_cell, new_notebook

    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    kernel = '''%%tilekernel --no-roofline
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)

x = np.random.rand(100).astype(np.float32)
out = np.full_like(x, np.nan)
copy_kernel[(1,)](x, out, x.size, BLOCK=128)'''
    nb = new_notebook(cells=[new_code_cell("%load_ext tileworkbench"), new_code_cell(kernel),
                             new_code_cell("after = 1")])
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3")
    with pytest.raises(nbclient.exceptions.CellExecutionError) as info:
        client.execute()
    assert "OutOfBoundsError" in str(info.value)
    outputs = nb.cells[1].outputs
    assert any("copy_kernel" in o.get("data", {}).get("text/plain", "") for o in outputs), outputs
    assert outputs[-1]["output_type"] == "error" and outputs[-1]["ename"] == "OutOfBoundsError"
    assert "x_ptr" in "".join(outputs[-1]["traceback"])
    assert not nb.cells[2].outputs and nb.cells[2].get("execution_count") is None


def test_a_notebook_kernel_sweeps_on_forked_workers_in_a_jupyter_kernel(tmp_path, monkeypatch):
    """In a real Jupyter kernel (ipykernel's threads running), a `--sweep` of the kernel the cell
    defines compiles its configs after the first in workers forked from the kernel's process, and
    every config runs and checks."""
    import ast
    import sys

    from nbformat.v4 import new_code_cell, new_notebook

    if not sys.platform.startswith("linux"):
        pytest.skip("workers are forks of the process by default on Linux only")
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEWORKBENCH_COMPILE_WORKERS", "2")
    monkeypatch.delenv("TILEWORKBENCH_COMPILE_START", raising=False)  # the default: fork
    kernel = '''%%tilekernel --target cpu --no-roofline --ref 'x.astype(np.float64) * 2' --sweep "BLOCK=64,128,256"
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

x = np.random.default_rng().standard_normal(1000).astype(np.float32)
out = np.full_like(x, np.nan)
twice_kernel[(tw.cdiv(x.size, 64),)](x, out, x.size, BLOCK=64)'''
    report = '''section = next(s for s in _tilekernel_reports[0].sections if s.title == "sweep")
print([(row.status(), row.where) for row in section.rows])'''
    nb = new_notebook(cells=[new_code_cell("%load_ext tileworkbench"), new_code_cell(kernel),
                             new_code_cell(report)])
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    rows = ast.literal_eval(text.strip())  # the list the cell printed
    assert [status for status, _ in rows] == ["ok"] * 3, rows
    assert rows[0][1] == "this process" and all(w.startswith("pid ") for _, w in rows[1:]), rows
