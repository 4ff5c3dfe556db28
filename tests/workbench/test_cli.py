"""The `tileworkbench` command: compile a kernel file to a stage, and the demo on the CPU path."""

from __future__ import annotations

import textwrap

import pytest

from tileworkbench.cli import main

KERNEL_FILE = textwrap.dedent("""
    import tileworkbench as tw
    import tileworkbench.language as tl


    @tw.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)
""")
SIGNATURE = "x_ptr=*fp32,out_ptr=*fp32,n=i32"


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNEL_FILE)
    return path


def compile_cli(kernel_file, stage: str, target: str, block: int = 64,
                signature: str = SIGNATURE) -> int:
    """`tileworkbench compile FILE::scale_kernel -s SIGNATURE -c BLOCK=.. --stage .. --target ..`."""
    return main(["compile", f"{kernel_file}::scale_kernel", "--signature", signature,
                 "--constexprs", f"BLOCK={block}", "--stage", stage, "--target", target])


def test_compile_prints_tile_opt(kernel_file, capsys):
    rc = compile_cli(kernel_file, "tile-opt", "interpreter", 128)
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("tt.func @scale_kernel(") and "tensor<128xf32>" in out
    assert "arith.mulf" in out


def test_compile_ptx_for_sm90(kernel_file, capsys):
    rc = compile_cli(kernel_file, "ptx", "sm_90", 256)
    out = capsys.readouterr().out
    assert rc == 0 and ".target sm_90" in out and ".entry scale_kernel" in out


def test_compile_debug_ptx_shows_the_checks(kernel_file, capsys):
    args = ["compile", f"{kernel_file}::scale_kernel", "--signature", SIGNATURE, "--constexprs", "BLOCK=256",
            "--stage", "ptx", "--target", "sm_90"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--debug"]) == 0
    debug = capsys.readouterr().out
    assert "tw_debug_report" in debug and "tw_debug_report" not in plain


def test_compile_all_stages_and_passes(kernel_file, capsys):
    assert compile_cli(kernel_file, "all", "interpreter", 64) == 0
    out = capsys.readouterr().out
    for stage in ("source", "tile", "tile-opt"):
        assert f"// ===== {stage} =====" in out
    assert compile_cli(kernel_file, "passes", "interpreter", 64) == 0
    assert "// ----- after cse -----" in capsys.readouterr().out


def test_compile_errors_are_one_clear_message(kernel_file, capsys):
    assert compile_cli(kernel_file, "ptx", "interpreter", 64, signature="x_ptr=*fp33") == 1
    assert "unknown type 'fp33' in the signature" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="defines no 'nope'"):
        main(["compile", f"{kernel_file}::nope", "-s", SIGNATURE])
    with pytest.raises(SystemExit, match="expected FILE.py::kernel"):
        main(["compile", str(kernel_file), "-s", SIGNATURE])
    with pytest.raises(SystemExit, match="is not available for target interpreter"):
        compile_cli(kernel_file, "ptx", "interpreter", 64)


def test_demo_on_the_interpreter_writes_a_checked_report(tmp_path, capsys):
    out_file = tmp_path / "demo.html"
    rc = main(["demo", "--out", str(out_file), "--target", "interpreter"])
    log = capsys.readouterr().out
    assert rc == 0, log
    assert log.count("PASS") == 4
    page = out_file.read_text()
    for name in ("add_kernel", "softmax_kernel", "matmul_kernel", "layer_norm_kernel"):
        assert f"{name} [interpreter]" in page
    assert "data:image/png;base64," in page  # the roofline
    assert 'twp-ptx"' in page or "GPU stages for sm_90 unavailable" in page


def test_a_kernel_file_with_a_syntax_error_is_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text(KERNEL_FILE.replace("def scale_kernel(x_ptr,", "def scale_kernel(x_ptr"))
    with pytest.raises(SystemExit) as exc:
        main(["compile", f"{bad}::scale_kernel", "--signature", SIGNATURE])
    message = str(exc.value.code)
    line = KERNEL_FILE.split("\n").index(
        "def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):") + 1
    assert message.startswith(f"{bad}:{line}:") and "SyntaxError" in message, message
    assert "\n" not in message and "Traceback" not in message


def test_compile_help_names_each_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert text.count("(default: ptx)") == 1 and "(default: sm_90)" in text
    assert "(default: None)" not in text and "(default: False)" not in text
    assert text.count("default:") == text.count("(default: ptx)") + 3, text  # target, warps, stages
