"""Every stage for every launch, on a GPU: a launch's report has its own arch's stages, `--target`
shows another arch's (compiled from the launch's specialization, not run), and a failing launch
still fails the cell."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")


pytestmark = pytest.mark.gpu

CELL = """
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

n = 1 << 20
x = cp.random.standard_normal(n, dtype=cp.float32)
y = cp.random.standard_normal(n, dtype=cp.float32)
out = cp.full(n, cp.nan, dtype=cp.float32)
add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024);
"""


def test_gpu_launch_shows_its_own_arch(real_shell):
    from tileworkbench.backends import backend_for

    real_shell.run_cell_magic(
        "tilekernel", "--no-roofline --ref 'x.get().astype(np.float64) + y.get()'", CELL
    )
    report = real_shell.user_ns["_tilekernel_reports"][0]
    arch = backend_for("cuda").resolve("cuda")  # what launches compile for: sm_90a on an H200
    assert report.target == arch and report.check.passed
    assert f".target {arch}" in report.asm["ptx"] and "ld.global.v4" in report.asm["ptx"]
    assert not any("not run" in note for note in report.notes)


def test_target_option_shows_another_arch_not_run(real_shell):
    real_shell.run_cell_magic("tilekernel", "--no-roofline --target sm_80", CELL)
    report = real_shell.user_ns["_tilekernel_reports"][0]
    assert ".target sm_80" in report.asm["ptx"]
    assert any("compiled for sm_80, not run" in note for note in report.notes)
