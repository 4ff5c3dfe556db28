"""Export: one self-contained HTML file and a reproducer script that launches the kernel again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("IPython")
ROOT = Path(__file__).resolve().parents[2]

CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)

n = 700
x = np.random.default_rng().standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
scale_kernel[(tw.cdiv(n, 256),)](x, out, n, 2.5, BLOCK=256)
"""


def test_export_writes_html_and_a_reproducer_that_runs(real_shell, tmp_path):
    folder = tmp_path / "export"
    real_shell.run_cell_magic("tilekernel", f"--target interpreter --export {folder}", CELL)
    page = (folder / "scale_kernel.html").read_text()
    assert page.startswith("<!doctype html>") and "twScrollAll" in page
    assert "<link" not in page and 'src="http' not in page  # nothing fetched from elsewhere
    script = folder / "scale_kernel_repro.py"
    assert "xp.full((700,), xp.nan, 'float32')" in script.read_text()  # the output is remade
    check = (
        "\nassert xp.allclose(args['out_ptr'], 2.5 * args['x_ptr'].astype(np.float64), rtol=1e-6)\n"
        "print('reproduced')\n"
    )
    script.write_text(script.read_text() + check)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TILEWORKBENCH_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, script.name], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "reproduced" in done.stdout


def test_html_export_of_a_live_run_shows_the_static_report(tmp_path):
    """A notebook saved with its widget state after a live run holds each report as a widget view
    beside its static HTML; nbconvert prefers the widget (CDN JavaScript): no report offline. In the
    JupyterLab `tileworkbench lab` starts, the config it writes exports the static HTML instead."""
    import json
    import subprocess
    import sys

    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    from fakes import fake_add_compiled

    from tileworkbench.workbench import inspect
    from tileworkbench.workbench.nbconvert_static import WIDGET_VIEW, write_config

    static = inspect(fake_add_compiled())._repr_html_()
    cell = nbformat.v4.new_code_cell("%%tilekernel\n...")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "add_kernel [sm_90]", "text/html": static,
        WIDGET_VIEW: {"model_id": "0123", "version_major": 2, "version_minor": 0},
    })]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    # saved with its widget state (JupyterLab's "save widget state"): nbconvert picks the widget
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"0123": {"model_name": "VBoxModel", "model_module": "@jupyter-widgets/controls",
                           "model_module_version": "2.0.0", "state": {}}},
        "version_major": 2, "version_minor": 0}}
    nbformat.write(notebook, tmp_path / "live.ipynb")

    def export(folder, config_path=""):
        env = dict(os.environ, JUPYTER_CONFIG_PATH=config_path)
        done = subprocess.run(
            [sys.executable, "-m", "nbconvert", "--to", "html", str(tmp_path / "live.ipynb"),
             "--output-dir", str(folder)],
            cwd=folder, capture_output=True, text=True, timeout=300, env=env, check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return (folder / "live.html").read_text()

    plain = tmp_path / "plain"
    plain.mkdir()
    before = export(plain)  # the problem: only the widget's placeholder
    assert 'class="twr"' not in before and f'<script type="{WIDGET_VIEW}">' in before
    lab = tmp_path / "lab" / ".jupyter"  # what `tileworkbench lab` puts on JUPYTER_CONFIG_PATH
    assert write_config(lab) == ["jupyter_nbconvert_config.json", "jupyter_server_config.json"]
    page = export(lab.parent, str(lab))
    assert 'class="twr"' in page and f'<script type="{WIDGET_VIEW}">' not in page
    (lab / "jupyter_nbconvert_config.json").write_text(json.dumps({"mine": 1}))
    assert write_config(lab) == [] and "mine" in (lab / "jupyter_nbconvert_config.json").read_text()
