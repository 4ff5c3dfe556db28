"""`%%tilekernel` in IPython's InteractiveShell, with hand-built kernels and a fake launch recorder."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("IPython")


def run(shell, line: str, cell: str):
    shell.run_cell_magic("tilekernel", line, cell)
    return shell.user_ns["_tilekernel_reports"]


def run_failing(shell, line: str, cell: str):
    """Run a `%%tilekernel` cell as Jupyter does; it must fail (so Run All stops). Returns its
    reports and the error IPython recorded."""
    shell.user_ns.pop("_tilekernel_reports", None)
    result = shell.run_cell(f"%%tilekernel {line}\n{cell}")
    assert not result.success, "the cell should have failed"
    return shell.user_ns.get("_tilekernel_reports"), result.error_in_exec


def test_launch_is_reported_with_check_and_timing(shell, capsys):
    shell.user_ns["np"] = np
    reports = run(
        shell,
        "--ref 'x.astype(np.float64) + y' --bench 5",
        """
from fakes import fake_add_launch
rec = fake_add_launch(n=3000, seed=1)
x, y, out = rec.args["x_ptr"], rec.args["y_ptr"], rec.args["out_ptr"]
_rec.launch(rec)
""",
    )
    assert len(reports) == 1
    report = reports[0]
    assert report.name == "add_kernel" and report.grid == (3, 1, 1)
    assert report.check.passed and report.check.max_abs < 1e-6
    assert report.timing.median_ms > 0
    assert report.counts.flops == 3 * 1024  # one addf per element per program
    assert report.counts.bytes == 3 * 3000 * 4  # x, y read once, out written once
    text = capsys.readouterr().out
    assert "add_kernel [interpreter]" in text and "PASS" in text


def test_wrong_output_fails_the_check(shell):
    shell.user_ns["np"] = np
    reports = run(
        shell,
        "--ref 'x * 2' --out out",
        """
from fakes import fake_add_launch
rec = fake_add_launch(n=2048, seed=2)
x, out = rec.args["x_ptr"], rec.args["out_ptr"]
_rec.launch(rec)
""",
    )
    check = reports[0].check
    assert not check.passed and check.n_bad > 1000


def test_repeated_launches_give_one_report(shell):
    reports = run(
        shell,
        "",
        """
from fakes import fake_add_launch
rec = fake_add_launch(n=100)
for _ in range(3):
    _rec.launch(rec)
""",
    )
    assert len(reports) == 1 and reports[0].launches == 3
    assert "3 launches" in repr(reports[0])


def test_cell_without_launch_says_so(shell, capsys):
    assert run(shell, "", "z = 1 + 1") == []
    assert "launched no tileworkbench kernel" in capsys.readouterr().out
    assert shell.user_ns["z"] == 2  # the cell ran in the user's namespace


def test_compilation_error_shows_kernel_line_not_traceback(shell, capsys):
    message = (
        "/tmp/k.py:14:13: error: shapes (128,) and (64,) do not broadcast in `x - m`\n"
        "    x = x - m\n        ^^^^^\nhint: index with m[:, None]"
    )
    shell.user_ns["msg"] = message
    reports, error = run_failing(
        shell,
        "",
        """
from tileworkbench.errors import CompilationError
raise CompilationError(msg)
""",
    )
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert reports == [] and type(error).__name__ == "CompilationError"
    assert "/tmp/k.py:14:13: error: shapes" in text and "^^^^^" in text and "hint:" in text
    assert "Traceback" not in text and "raise CompilationError" not in text
    assert text.count("do not broadcast") == 1, "the error is shown once"


def test_bad_ref_expression_is_a_clear_error(shell, capsys):
    run_failing(
        shell,
        "--ref no_such_name",
        """
from fakes import fake_add_launch
_rec.launch(fake_add_launch(n=100))
""",
    )
    captured = capsys.readouterr()
    assert "--ref 'no_such_name' failed: NameError" in captured.out + captured.err


def test_compile_only_needs_a_kernel(shell, capsys):
    run_failing(shell, "--signature x_ptr=*fp32", "a = 1")
    captured = capsys.readouterr()
    assert "found no @tw.jit kernel" in captured.out + captured.err


def test_a_python_error_in_the_cell_fails_it_with_its_traceback(shell, capsys):
    reports, error = run_failing(shell, "", "a = 1\nb = undefined_name + a")
    assert isinstance(error, NameError) and reports == []
    text = capsys.readouterr().out
    assert "undefined_name" in text and "cellrun.py" not in text and "magic.py" not in text


def test_a_syntax_error_fails_the_cell(shell):
    run_failing(shell, "", "def f(:\n    pass")


def test_help_documents_options(shell):
    from tileworkbench.workbench.magic import TileKernelMagics

    doc = TileKernelMagics.tilekernel.__doc__
    for option in ("--signature", "--ref", "--bench", "--compare", "--no-roofline", "--stages"):
        assert option in doc


def test_reload_ext_is_harmless(shell):
    from tileworkbench.workbench import load_ipython_extension

    load_ipython_extension(shell)
    load_ipython_extension(shell)
    assert "tilekernel" in shell.magics_manager.magics["cell"]
    assert "tilekernel_peaks" in shell.magics_manager.magics["line"]


def test_device_print_from_c_reaches_the_cell_output(shell, capsys):
    run(
        shell,
        "",
        """
import ctypes, os
ctypes.CDLL(None).printf(b"pid (0) x: 42\\n")
os.write(1, b"raw device line\\n")
""",
    )
    out = capsys.readouterr().out
    assert "pid (0) x: 42" in out and "raw device line" in out


def test_peaks_magic_without_gpu_shows_datasheet(shell):
    peaks = shell.run_line_magic("tilekernel_peaks", "--device 'H100 SXM'")
    assert peaks.device == "H100 SXM" and peaks.measured == {}
    assert peaks.best("dram").value == pytest.approx(3.35e12)
    assert "H100 SXM datasheet" in repr(peaks)


def test_ref_checks_only_the_launch_that_wrote_out(shell):
    shell.user_ns["np"] = np
    reports = run(
        shell,
        "--ref 'x + y' --out out",
        """
from fakes import fake_add_launch, fake_add_compiled
first = fake_add_launch(n=2048, seed=4)
other = fake_add_launch(n=1024, seed=5)
other.compiled = fake_add_compiled("interpreter", 512)
x, y, out = first.args["x_ptr"], first.args["y_ptr"], first.args["out_ptr"]
_rec.launch(first)
_rec.launch(other)
""",
    )
    assert len(reports) == 2
    assert reports[0].check.passed and reports[1].check is None
