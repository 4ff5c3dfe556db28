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
