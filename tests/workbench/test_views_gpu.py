"""The views beyond the stages on a real GPU: a sweep timed with CUDA events, the access picture of a
launch on CuPy arrays (copied to the host, the user's data untouched), the reproducer script relaunching
on the GPU, and an edited cell's PTX diff with the time before and after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("IPython")
ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.gpu

CELL = """
import cupy as cp
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def gpu_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) OP tl.load(y_ptr + offs, mask=mask),
             mask=mask)

n = 1 << 20
x = cp.random.standard_normal(n, dtype=cp.float32)
y = cp.random.standard_normal(n, dtype=cp.float32)
out = cp.full(n, cp.nan, cp.float32)
gpu_add[lambda meta: (tw.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
"""


def test_sweep_on_the_gpu_is_timed_with_cuda_events(tilekernel):
    reports = tilekernel(
        "--ref 'x.astype(cp.float64) + y' --sweep \"BLOCK=256,1024 num_warps=4,8\"",
        CELL.replace("OP", "+"),
    )
    section = next(s for s in reports[0].sections if s.title == "sweep")
    assert section.time_source == "GPU time"
    for row, cells in zip(section.rows, section.table()):
        assert row.status() == "ok", row.status()
        assert row.report.resources.num_warps == row.config["num_warps"]
        assert cells[3] != "-" and cells[2].endswith("B/s")


def test_access_picture_of_a_gpu_launch(tilekernel, real_shell):
    report = tilekernel("", CELL.replace("OP", "+"))[0]
    access = next(s for s in report.sections if s.title.startswith("memory accesses"))
    load = access.accesses.accesses[0]
    assert load.argument == "x_ptr" and load.offsets.tolist() == list(range(1024))
    import cupy as cp

    ns = real_shell.user_ns
    out = cp.asnumpy(ns["out"])  # the launch's output is intact: written, and x + y
    want = cp.asnumpy(ns["x"]).astype("float64") + cp.asnumpy(ns["y"])
    assert not cp.isnan(ns["out"]).any().item()
    assert float(abs(out - want).max() / abs(want).max()) < 1e-6


def test_rerun_shows_ptx_diff_and_times(tilekernel):
    tilekernel("--bench 20", CELL.replace("OP", "+"))
    edited = tilekernel("--bench 20", CELL.replace("OP", "*"))[0]
    changes = edited.sections[0]
    assert "ptx" in changes.changed_stages()
    assert any(r.kind == "+" and "mul" in r.text for r in changes.diffs["ptx"])
    times = dict((k, (a, b)) for k, a, b, _ in changes.number_rows())["time (ms)"]
    assert "-" not in times


def test_reproducer_relaunches_on_the_gpu(tilekernel, tmp_path):
    tilekernel(f"--export {tmp_path}", CELL.replace("OP", "+"))
    script = tmp_path / "gpu_add_repro.py"
    check = (
        "\nassert xp.__name__ == 'cupy', 'ran in the interpreter'\n"
        "assert xp.allclose(args['out_ptr'], args['x_ptr'] + args['y_ptr']), 'wrong output'\n"
        "print('reproduced on the GPU')\n"
    )
    script.write_text(script.read_text() + check)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "reproduced on the GPU" in done.stdout
