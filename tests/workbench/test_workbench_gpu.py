"""The workbench on a real GPU: device_print reaches the cell output, a timed launch lands on the
roofline with measured ceilings, and compile-only SASS/registers come from ptxas."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")
tw = pytest.importorskip("tileworkbench")


pytestmark = pytest.mark.gpu

PRINT_CELL = """
import cupy as cp
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("value", x)

x = cp.arange(4, dtype=cp.float32) + 40
print_kernel[(1,)](x, BLOCK=4);
"""

ADD_CELL = """
import cupy as cp
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)

n = 1 << 24
x = cp.random.standard_normal(n, dtype=cp.float32)
y = cp.random.standard_normal(n, dtype=cp.float32)
out = cp.full(n, cp.nan, dtype=cp.float32)
add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024);
"""


def test_device_print_appears_in_cell_output(real_shell, capfd):
    real_shell.run_cell_magic("tilekernel", "--no-roofline", PRINT_CELL)
    captured = capfd.readouterr()
    text = captured.out + captured.err
    assert "value" in text and "43" in text, text[-2000:]


def test_timed_launch_on_the_roofline(real_shell):
    real_shell.run_cell_magic(
        "tilekernel", "--bench 50 --ref 'x.get().astype(np.float64) + y.get()'", ADD_CELL
    )
    report = real_shell.user_ns["_tilekernel_reports"][0]
    assert report.check.passed
    assert report.timing.median_ms > 0 and "CUDA events" in report.timing.method
    bound = report.bound
    assert bound.name == "dram" and 0.05 < bound.fraction < 1.2
    assert report.resources.n_regs and report.resources.occupancy > 0
    assert "sass" in report.asm or report.metadata.get("n_regs")


def test_compare_with_triton(real_shell):
    pytest.importorskip("triton")
    real_shell.run_cell_magic("tilekernel", "--bench 20 --compare triton --no-roofline", ADD_CELL)
    report = real_shell.user_ns["_tilekernel_reports"][0]
    triton = report.triton
    assert triton.error is None, triton.error
    assert "ptx" in triton.asm and "ttir" in triton.asm and "tt.load" in triton.asm["ttir"]
    assert triton.timing.median_ms > 0
    assert "triton ptx" in report._repr_html_()
