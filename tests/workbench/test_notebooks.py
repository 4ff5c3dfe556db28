"""Every teaching notebook executed top to bottom with nbclient on the CPU path (no GPU).

Selected with `-m notebooks`; each notebook must stay fast (the interpreter runs small sizes).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_cpu(path, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")  # the CPU path even on a GPU machine
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    errors = [
        o for cell in nb.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors, "\n".join(e.get("ename", "") + ": " + e.get("evalue", "") for e in errors)
    reports = [
        o
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if "text/html" in o.get("data", {}) and 'class="twr"' in o["data"]["text/html"]
    ]
    assert reports, "no workbench report was displayed"
    failed = [r for r in reports if "FAIL" in r["data"]["text/plain"]]
    assert not failed, failed[0]["data"]["text/plain"]


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
