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
