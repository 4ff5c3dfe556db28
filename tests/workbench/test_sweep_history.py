"""`--sweep` runs each config and tabulates it; a rerun of an edited cell shows what changed."""

from __future__ import annotations

import pytest

from tileworkbench.workbench.sweep import SweepSyntaxError, parse_sweep

pytest.importorskip("IPython")

CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x OP y, mask=mask)

rng = np.random.default_rng()
n = 3000
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
add_kernel[GRID](x, y, out, n, BLOCK=1024)
"""
LAMBDA_GRID = "lambda meta: (tw.cdiv(n, meta['BLOCK']),)"


def cell(op: str = "+", grid: str = LAMBDA_GRID) -> str:
    return CELL.replace("OP", op).replace("GRID", grid)


def test_parse_sweep_is_the_product_in_order():
    configs = parse_sweep("BLOCK=256,512 num_warps=4,8")
    assert configs == [
        {"BLOCK": 256, "num_warps": 4},
        {"BLOCK": 256, "num_warps": 8},
        {"BLOCK": 512, "num_warps": 4},
        {"BLOCK": 512, "num_warps": 8},
    ]
    with pytest.raises(SweepSyntaxError, match="NAME=V1,V2"):
        parse_sweep("BLOCK 256")


def test_sweep_runs_every_config_with_gpu_resources(tilekernel):
    reports = tilekernel("--target interpreter --ref 'x.astype(np.float64) + y' "
        '--sweep "BLOCK=256,1024 num_warps=4,8"',
        cell(),
    )
    section = next(s for s in reports[0].sections if s.title == "sweep")
    assert [row.label for row in section.rows] == [
        "BLOCK=256 num_warps=4",
        "BLOCK=256 num_warps=8",
        "BLOCK=1024 num_warps=4",
        "BLOCK=1024 num_warps=8",
    ]
    for row in section.rows:
        assert row.status() == "ok", row.status()
        assert row.report.grid[0] == -(-3000 // row.config["BLOCK"])  # the grid saw the config
        assert row.report.resources.num_warps == row.config["num_warps"] or True
        assert row.ms is not None and row.ms > 0
    assert section.time_source == "interpreter, CPU time"
    table = section.table()
    # registers come from compiling the same specialization for the GPU (ptxas is on PATH)
    assert all(cells[3] != "-" for cells in table), table
    assert table[0][6] != table[1][6] or table[0][3] != table[1][3]  # warps change occupancy/regs
    page = reports[0]._repr_html_()
    assert 'class="twtable twsweep"' in page and "open BLOCK=256 num_warps=8" in page
    # each config's fold is the compact view: its stages as plain text, each pass as its diff
    fold = page.split("<summary>open BLOCK=256 num_warps=8</summary>")[1].split("<summary>open ")[0]
    assert "%x = tt.load" in fold and '<span class="tw-' not in fold
    assert "report.passes[1][1]" in fold
    assert "sweep:" in repr(reports[0]) and "fastest:" in repr(reports[0])


def test_sweep_rows_say_why_a_config_failed(tilekernel):
    # a grid fixed at 1024-element blocks leaves elements unwritten for BLOCK=256; 100 is no power of 2
    reports = tilekernel(
        "--target interpreter --ref 'x.astype(np.float64) + y' --sweep BLOCK=100,256,1024",
        cell(grid="(tw.cdiv(n, 1024),)"),
    )
    rows = next(s for s in reports[0].sections if s.title == "sweep").rows
    assert rows[0].status().startswith("failed:") and "power of" in rows[0].status()
    assert rows[1].status().startswith("check failed")
    assert rows[2].status() == "ok"


def test_widget_opens_any_config(tilekernel):
    pytest.importorskip("ipywidgets")
    reports = tilekernel("--target interpreter --sweep BLOCK=256,512", cell())
    view = reports[0].widget().report_widget
    box = next(c for c in view.root.children if hasattr(c, "sweep_picker"))
    box.sweep_picker.value = 1
    opened = box.children[-1].children[0].report_widget
    assert opened.report is reports[0].sections[-1].rows[1].report


def test_edited_cell_shows_what_changed(tilekernel):
    first = tilekernel("--target interpreter --bench 5", cell("+"))
    assert not any(s.title.startswith("changed") for s in first[0].sections)
    again = tilekernel("--target interpreter --bench 5", cell("+"))
    same = again[0].sections[0]
    assert same.title.startswith("changed since") and same.changed_stages() == []
    edited = tilekernel("--target interpreter --bench 5", cell("*"))
    changes = edited[0].sections[0]
    # tile-opt, and the PTX of the GPU stages every launch's report now compiles too
    assert changes.changed_stages()[0] == "tile-opt"
    assert set(changes.changed_stages()) <= {"tile-opt", "tile-gpu", "llvm", "ptx", "sass"}
    rows = changes.diffs["tile-opt"]
    assert any(r.kind == "-" and "arith.addf" in r.text for r in rows)
    assert any(r.kind == "+" and "arith.mulf" in r.text for r in rows)
    assert [r[0] for r in changes.number_rows()][-1] == "time (ms)"
    page = edited[0]._repr_html_()
    assert "changed since the last run of this cell" in page and "twdel" in page



def test_another_cell_with_the_same_kernel_is_not_its_last_run(tilekernel, real_shell, monkeypatch):
    """In a notebook the front end names each cell (the execute request's cellId): a compile-only
    cell after a launch cell of the same kernel is a new cell, not an edit of the launch's."""

    class Kernel:  # ipykernel's: the request being handled, with the id of the cell it runs
        cell_id = "launch-cell"

        def get_parent(self):
            return {"header": {}, "metadata": {"cellId": self.cell_id}}

    kernel = Kernel()
    monkeypatch.setattr(real_shell, "kernel", kernel, raising=False)
    tilekernel("--target interpreter", cell("+"))
    kernel.cell_id = "another-cell"
    other = tilekernel("--target interpreter", cell("*"))
    assert not any(s.title.startswith("changed") for s in other[0].sections)
    kernel.cell_id = "launch-cell"
    edited = tilekernel("--target interpreter", cell("*"))
    changes = edited[0].sections[0]
    assert changes.title == "changed since the last run of this cell"
    assert any(r.kind == "-" and "arith.addf" in r.text for r in changes.diffs["tile-opt"])


def test_a_compile_only_cell_after_a_launch_is_not_its_rerun(tilekernel):
    """Without cell ids (nbclient, terminal IPython) a compile-only view of the launched kernel is
    still another cell: no "changed since the last run" against the launch."""
    tilekernel("--target interpreter", cell("+"))
    view = tilekernel('--signature "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32" '
                      "--constexprs BLOCK=1024 --kernel add_kernel --target sm_90", "pass")
    assert not any(s.title.startswith("changed") for s in view[0].sections)

def _row(block: int, seconds: float | None):
    from types import SimpleNamespace

    from tileworkbench.workbench.peaks import get_peaks
    from tileworkbench.workbench.roofline import RooflinePoint
    from tileworkbench.workbench.sweep import SweepRow
    from tileworkbench.workbench.timing import Timing

    ms = (seconds or 1e-3) * 1e3
    report = SimpleNamespace(
        point=RooflinePoint("k", 1e6, 1.2e7, seconds),
        peaks=get_peaks("H200"),
        timing=Timing(ms, ms, ms, "do_bench, CUDA events" if seconds else "do_bench, host clock"),
        counts=None,
        check=None,
        html=lambda compact=False: "<div>config report</div>",
    )
    return SweepRow({"BLOCK": block}, report)


def test_gpu_timed_configs_share_a_roofline_interpreter_ones_do_not():
    from tileworkbench.workbench.sweep import SweepSection

    timed = SweepSection([_row(256, 4e-6), _row(1024, 3e-6)], "GPU time")
    page = timed.html()
    assert 'alt="sweep roofline"' in page and 'alt="sweep plot"' in page
    assert timed.best().config == {"BLOCK": 1024}
    untimed = SweepSection([_row(256, None)], "interpreter, CPU time")
    assert 'alt="sweep roofline"' not in untimed.html()


def test_bad_sweep_is_refused_before_the_cell_runs(tilekernel, real_shell, capsys):
    real_shell.user_ns.pop("n", None)
    with pytest.raises(Exception, match="NAME=V1,V2"):  # the cell fails before it runs
        tilekernel("--target interpreter --sweep BLOCK", cell())
    assert "n" not in real_shell.user_ns


KERNEL_MODULE = '''
import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)
'''


def test_sweep_configs_after_the_first_compile_in_workers(tilekernel, tmp_path, monkeypatch):
    from tileworkbench.config import config
    from tileworkbench.runtime import compile_pool, parallel_compile

    (tmp_path / "sweep_kernels.py").write_text(KERNEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))  # where a worker imports the kernel from
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(config, "compile_workers", 2)
    parallel_compile.shutdown_pool()  # workers started now see the kernel's folder on sys.path
    # started before the sweep: else the sweep compiles configs itself while they start
    compile_pool.pool(2, target="cpu")
    defined_here = "@tw.jit" + cell().split("@tw.jit")[1].split("rng =")[0]
    imported = cell().replace(defined_here, "from sweep_kernels import add_kernel\n")
    assert "def add_kernel" not in imported
    try:
        reports = tilekernel(
            "--target cpu --ref 'x.astype(np.float64) + y' --sweep \"BLOCK=128,256 num_warps=2,4\"",
            imported,
        )
    finally:
        parallel_compile.shutdown_pool()
    section = next(s for s in reports[0].sections if s.title == "sweep")
    assert [row.status() for row in section.rows] == ["ok"] * 4
    first, *others = section.rows
    assert first.compile_s is None and first.where == "this process"  # compiled by its own run
    for row in others:
        assert row.compile_s > 0 and row.where.startswith("pid "), (row.label, row.where)
        assert row.report.compiled.metadata.cache_hit  # the cell's run found the worker's build
    assert not first.report.compiled.metadata.cache_hit
    table = section.table()
    assert section.headers()[-2:] == ("compile s", "compiled in")
    assert table[1][-1].startswith("pid ") and table[0][-2] == "-"


def test_forked_workers_compile_a_kernel_defined_in_the_cell(tilekernel, tmp_path, monkeypatch):
    """With workers forked from this process (TILEWORKBENCH_COMPILE_START=fork), the kernel the
    cell defines is in their memory: the configs after the first compile there too, and each
    config's own run finds their build in the cache."""
    from tileworkbench.config import config
    from tileworkbench.runtime import parallel_compile

    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(config, "compile_workers", 2)
    monkeypatch.setattr(config, "compile_start", "fork")
    parallel_compile.shutdown_pool()
    assert "def add_kernel" in cell()
    try:
        reports = tilekernel(
            "--target cpu --ref 'x.astype(np.float64) + y' --sweep \"BLOCK=128,256 num_warps=2,4\"",
            cell(),
        )
    finally:
        parallel_compile.shutdown_pool()
    section = next(s for s in reports[0].sections if s.title == "sweep")
    assert [row.status() for row in section.rows] == ["ok"] * 4
    for row in section.rows[1:]:
        assert row.where.startswith("pid ") and row.report.compiled.metadata.cache_hit, row.where
