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
    checks = [cell for cell in nb.cells if "claim-check" in cell.metadata.get("tags", [])]
    if path.stem in CLAIM_CHECKED:
        assert checks, f"{path.stem} has no claim-check cell"
    for cell in checks:  # each ran to its last line (an assertion that fails stops the notebook)
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        assert "checked:" in text, cell.source


CLAIM_CHECKED = {
    "00_start_here", "01_vector_add", "02_fused_softmax", "04_layer_norm", "05_inside_the_compiler",
    "06_roofline",
}


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
