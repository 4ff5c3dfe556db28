"""`%%tilekernel` end to end with the real compiler, jit and launch recording, on the interpreter."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")
tw = pytest.importorskip("tileworkbench")
if not hasattr(tw, "jit"):
    pytest.skip("tileworkbench.jit not available yet", allow_module_level=True)

ADD_CELL = """
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
    tl.store(out_ptr + offs, x + y * SCALE, mask=mask)

rng = np.random.default_rng(SEED)
n = 3000
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
add_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""


@pytest.fixture(autouse=True)
def _globals_the_kernels_read(real_shell):
    real_shell.run_cell("import tileworkbench.language as tl\nSCALE = tl.constexpr(1.0)\nSEED = 0")


def test_real_launch_report(tilekernel):
    reports = tilekernel("--target interpreter --ref 'x.astype(np.float64) + y' --bench 5", ADD_CELL
    )
    assert len(reports) == 1
    report = reports[0]
    assert report.name == "add_kernel" and report.grid == (3, 1, 1)
    assert report.check.passed, report.check.summary()
    assert report.counts.loads == ["x_ptr", "y_ptr"] and report.counts.stores == ["out_ptr"]
    assert report.counts.bytes == 3 * 3000 * 4
    load_line = next(line for line, text in report.source_lines.items() if "x = tl.load" in text)
    tile_lines = report.stage_lines_for(load_line)["tile-opt"]
    tile = report.asm["tile-opt"].splitlines()
    assert any("tt.load" in tile[i - 1] for i in tile_lines)
    assert [name for name, _ in report.passes][0] == "tile"


def test_redefining_a_global_recompiles(tilekernel, real_shell):
    first = tilekernel("--target interpreter --ref 'x.astype(np.float64) + y'", ADD_CELL)[0]
    assert first.check.passed
    real_shell.run_cell("SCALE = tl.constexpr(2.0)")
    second = tilekernel("--target interpreter --ref 'x.astype(np.float64) + 2.0 * y'", ADD_CELL
    )[0]
    assert second.check.passed, "the kernel kept the old value of the global SCALE"
    assert second.asm["tile-opt"] != first.asm["tile-opt"]


def test_redefining_a_helper_recompiles(tilekernel, real_shell):
    helper = """
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def combine(a, b):
    return a {op} b
"""
    cell = ADD_CELL.replace("x + y * SCALE", "combine(x, y)")
    real_shell.run_cell(helper.format(op="+"))
    assert tilekernel("--target interpreter --ref 'x.astype(np.float64) + y'", cell)[0].check.passed
    real_shell.run_cell(helper.format(op="-"))
    report = tilekernel("--target interpreter --ref 'x.astype(np.float64) - y'", cell)[0]
    assert report.check.passed, "the kernel kept the old @jit helper"


def test_compile_only_interpreter_target(tilekernel):
    cell = ADD_CELL.split("rng =")[0]
    reports = tilekernel("--signature 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32' "
        "--constexprs BLOCK=256 --target interpreter",
        cell,
    )
    assert len(reports) == 1 and reports[0].launches == 0
    assert "tensor<256xf32>" in reports[0].asm["tile-opt"]


def test_compile_error_in_cell_names_the_kernel_line(real_shell, capsys):
    bad = ADD_CELL.replace("x + y * SCALE", "x + tl.arange(0, 512)")
    result = real_shell.run_cell("%%tilekernel --target interpreter\n" + bad)
    assert not result.success, "a compile error must fail the cell (Run All stops)"
    assert type(result.error_in_exec).__name__ == "TileTypeError"
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "TileTypeError" in text and "error: shapes (1024,) and (512,)" in text
    # line 14 of the cell as the notebook shows it: the %%tilekernel line, a blank line, then ADD_CELL
    assert "]:14:" in text and "^^^^" in text and "hint:" in text
    assert "Traceback" not in text


def test_ptx_stage_compile_only(tilekernel):
    cell = ADD_CELL.split("rng =")[0]
    try:
        reports = tilekernel("--signature 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32' "
            "--constexprs BLOCK=256 --target sm_90",
            cell,
        )
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"GPU back end not available: {exc}")
    if not reports:
        pytest.skip("GPU back end not available yet")
    assert ".entry" in reports[0].asm["ptx"] and reports[0].resources is not None


def test_no_fp_fusion_option(tilekernel, real_shell):
    """`--no-fp-fusion` compiles as `enable_fp_fusion=False`: x + y * 3 stays a rounded multiply and a
    rounded add; by default it is one FMA (a power of two would become y + y)."""
    real_shell.run_cell("SCALE = tl.constexpr(3.0)")
    cell = ADD_CELL.split("rng =")[0]
    options = "--signature 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32' --constexprs BLOCK=256 --target sm_90"
    fused = tilekernel(options, cell)[0].asm["ptx"]
    separate = tilekernel(options + " --no-fp-fusion", cell)[0].asm["ptx"]
    assert "fma.rn.f32" in fused and "mul.rn.f32" not in fused
    assert "fma.rn.f32" not in separate and "mul.rn.f32" in separate and "add.rn.f32" in separate


AUTOTUNE_CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.autotune(configs=[tw.Config({"BLOCK": 32}), tw.Config({"BLOCK": 128})], key=["n"])
@tw.jit
def inc_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

x = np.random.default_rng(7).standard_normal(1000).astype(np.float32)
out = np.full_like(x, np.nan)
inc_kernel[lambda meta: (tw.cdiv(1000, meta["BLOCK"]),)](x, out, 1000);
"""


def test_autotuned_kernel_gives_one_report_with_its_table(tilekernel, real_shell, capsys):
    reports = tilekernel("--target interpreter --ref 'x.astype(np.float64) + 1'", AUTOTUNE_CELL
    )
    assert len(reports) == 1, [r.metadata.get("constexprs") for r in reports]
    report = reports[0]
    assert report.check.passed
    rows = report.autotune
    assert len(rows) == 2 and rows[0].status == "best" and all(r.ms > 0 for r in rows)
    # the interpreter has no on-disk cache: compiled here, one config after another
    assert all(r.where == "compiled this process, timed interpreter (CPU)" for r in rows), rows
    assert all(r.compile_s is not None and r.bench_s > 0 for r in rows), rows
    tuner = real_shell.user_ns["inc_kernel"]
    best = min(tuner.last_results, key=lambda c: tuner.last_results[c]["ms"])
    assert report.metadata["constexprs"]["BLOCK"] == str(best.kwargs["BLOCK"])
    assert "CompiledKernel" not in capsys.readouterr().out  # the trailing `;` hid the result


def test_force_recompiles(tilekernel):
    first = tilekernel("--target interpreter", ADD_CELL)[0].compiled
    cell = ADD_CELL + "\nadd_kernel[(tw.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024);\n"
    second = tilekernel("--target interpreter", cell)
    third = tilekernel("--target interpreter --force", "add_kernel[(3,)](x, y, out, n, BLOCK=1024);"
    )
    same = tilekernel("--target interpreter", "add_kernel[(3,)](x, y, out, n, BLOCK=1024);")
    assert second[0].compiled is not first  # the cell redefined the kernel
    assert third[0].compiled is not second[0].compiled  # --force: compiled again
    assert same[0].compiled is third[0].compiled  # and cached again afterwards


def test_inspect_a_launched_kernel_without_signature(tilekernel, real_shell):
    tilekernel("--target interpreter", ADD_CELL)
    report = tw.inspect(real_shell.user_ns["add_kernel"])
    assert report.name == "add_kernel" and "tensor<1024xf32>" in report.asm["tile-opt"]
    with pytest.raises(TypeError, match="needs signature="):
        real_shell.run_cell("@tw.jit\ndef fresh(x_ptr):\n    pass\n")
        tw.inspect(real_shell.user_ns["fresh"])


def test_out_of_bounds_launch_shows_its_report_then_fails_the_cell(real_shell, capsys):
    bad = ADD_CELL.replace("mask=mask)\n    y", "mask=offs < n + 64)\n    y")
    result = real_shell.run_cell("%%tilekernel --target interpreter --no-roofline\n" + bad)
    assert not result.success
    assert type(result.error_in_exec).__name__ == "OutOfBoundsError"
    reports = real_shell.user_ns["_tilekernel_reports"]
    assert len(reports) == 1 and "tile-opt" in reports[0].asm and "ptx" in reports[0].asm
    text = capsys.readouterr().out
    assert "add_kernel [interpreter]" in text, "the report is shown before the error"
    assert text.index("add_kernel [interpreter]") < text.index("OutOfBoundsError")
    assert "x_ptr" in text and "Traceback" not in text
