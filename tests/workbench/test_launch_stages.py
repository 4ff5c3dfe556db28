"""Every stage for every launch: a `%%tilekernel` launch in the interpreter also shows the GPU stages
of the same specialization (types, `:16`, constexprs, warps), compiled for `--target` or sm_90."""

from __future__ import annotations

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.workbench.gpu_stages import gpu_target, launch_specialization

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
    tl.store(out_ptr + offs, x + y, mask=mask)

rng = np.random.default_rng(1)
n = N
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
add_kernel[(tw.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_warps=2)
"""


def run(shell, line: str, n: int):
    shell.user_ns.pop("_tilekernel_reports", None)
    shell.run_cell_magic("tilekernel", line, CELL.replace("N", str(n), 1))
    return shell.user_ns["_tilekernel_reports"]


def test_interpreter_launch_shows_ptx_of_its_specialization(real_shell):
    report = run(
        real_shell, "--no-roofline --target interpreter --ref 'x.astype(np.float64) + y'", 4096
    )[0]
    assert report.check.passed
    assert report.target == "interpreter"
    for stage in ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx"):
        assert stage in report.asm, stage
    ptx = report.asm["ptx"]
    assert ".target sm_90" in ptx
    # n = 4096 is a multiple of 16 and the arrays are 16-byte aligned: the launch specialized on
    # both, so the PTX holds vector loads, and the tile IR the divisibility of n
    assert "ld.global.v4" in ptx
    assert "tt.divisibility = 16" in report.asm["tile-gpu"]
    assert "n=i32:16" in " ".join(report.notes)
    assert report.metadata["num_warps"] == 2 and report.resources.threads_per_block == 64
    load_line = next(line for line, text in report.source_lines.items() if "x = tl.load" in text)
    assert report.stage_lines_for(load_line).get("ptx"), "the PTX is not linked to the source"
    assert any(name == "coalesce" or "layout" in name for name, _ in report.passes)


def test_odd_size_specializes_without_16(real_shell):
    report = run(real_shell, "--no-roofline --target interpreter", 4099)[0]
    assert "n=i32," in " ".join(report.notes)
    assert "ld.global.v4" not in report.asm["ptx"]


def test_target_option_picks_the_arch(real_shell):
    report = run(real_shell, "--no-roofline --target sm_80", 1024)[0]
    assert ".target sm_80" in report.asm["ptx"]
    assert "compiled for sm_80" in " ".join(report.notes)


def hide_tools(monkeypatch, keep: tuple[str, ...] = ()) -> None:
    """This machine without NVIDIA's tools (but those in `keep`), for every module that looks."""
    from tileworkbench.backends.nvptx import ptxas, tools

    real = tools.find_tool
    for module in (tools, ptxas):
        monkeypatch.setattr(module, "find_tool", lambda name: real(name) if name in keep else None)


def test_missing_sass_is_named(real_shell, monkeypatch):
    hide_tools(monkeypatch)
    report = run(real_shell, "--no-roofline --target interpreter", 1024)[0]
    assert "sass" not in report.asm
    notes = " ".join(report.notes)
    assert "tileworkbench[gpu]" in notes and "ptxas" in notes


def test_launch_specialization_reads_the_record(real_shell):
    from tileworkbench.runtime.record import record_launches

    real_shell.run_cell(CELL.replace("N", "64", 1).rsplit("\n", 2)[0])
    with record_launches() as launches:
        real_shell.run_cell("add_kernel[(1,)](x, y, out, 7, BLOCK=64)")
    specs, constexprs = launch_specialization(launches[-1])
    assert [s.key for s in specs] == ["*fp32:16", "*fp32:16", "*fp32:16", "i32"]
    assert constexprs == {"BLOCK": 64}


def test_gpu_target_defaults_to_sm90_without_a_gpu(monkeypatch):
    from tileworkbench.workbench import gpu_stages

    monkeypatch.setattr(gpu_stages, "local_gpu_arch", lambda: None)
    assert gpu_target(None) == "sm_90"
    assert gpu_target("interpreter") == "sm_90"
    assert gpu_target("sm_80") == "sm_80"


def test_locations_name_the_cell_and_its_lines(real_shell, capsys):
    """IR locations and errors say `In[N]:line` (the notebook's cell and line, the %%tilekernel line
    counted), not IPython's temporary file name."""
    cell = "%%tilekernel --no-roofline --target interpreter\n" + CELL.replace("N", "64", 1).lstrip()
    result = real_shell.run_cell(cell, store_history=True)
    assert result.success
    count = result.execution_count
    report = real_shell.user_ns["_tilekernel_reports"][0]
    lines = cell.splitlines()
    load_line = 1 + next(i for i, text in enumerate(lines) if "x = tl.load" in text)
    assert f'loc("In[{count}]":{load_line})' in report.asm["tile-opt"]
    assert "ipython-input" not in report.asm["tile-opt"] and "ipykernel" not in report.asm["ptx"]
    bad = cell.replace("x + y, mask", "x + tl.arange(0, 128), mask")
    result = real_shell.run_cell(bad, store_history=True)
    assert not result.success
    store_line = 1 + next(i for i, text in enumerate(lines) if "tl.store" in text)
    text = capsys.readouterr().out
    assert f"In[{result.execution_count}]:{store_line}:" in text
    assert "tl.store(out_ptr + offs" in text, "the error shows the cell's line"


def test_compile_only_report_names_a_missing_tool(real_shell, monkeypatch):
    hide_tools(monkeypatch, keep=("ptxas",))
    kernel = CELL.split("rng =")[0]
    signature = "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32"
    line = f'--signature "{signature}" --constexprs BLOCK=256 --target sm_90 --force'
    real_shell.run_cell_magic("tilekernel", line, kernel)
    report = real_shell.user_ns["_tilekernel_reports"][0]
    assert "sass" not in report.asm
    assert any("`nvdisasm` was not found" in note for note in report.notes), report.notes


WS_CELL = """
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in tl.range(0, n, BLOCK, warp_specialize=True):
        acc += tl.load(x_ptr + start + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
"""


def test_the_report_says_where_the_compiler_did_not_do_what_was_asked(real_shell):
    """A loop marked warp_specialize that cannot have a producer: the report's notes name its
    source line and the reason, as the `tile-gpu` tab's `ttng.warp_specialize_note` has them."""
    line = '--signature "x_ptr=*fp32,out_ptr=*fp32,n=i32" --constexprs BLOCK=128 --target sm_90a --force'
    real_shell.run_cell_magic("tilekernel", line, WS_CELL)
    report = real_shell.user_ns["_tilekernel_reports"][0]
    loop_line = next(n for n, text in report.source_lines.items() if "tl.range" in text)
    notes = [n for n in report.notes if "warp_specialize not applied" in n]
    assert notes == [f"line {loop_line}: warp_specialize not applied: the loop has no TMA "
                     "descriptor loads (pointer loads, or descriptors on pointers)"], report.notes


@tw.jit
def scale(src, dst, factor, BM: tl.constexpr, BN: tl.constexpr):
    tile = src.load([tl.program_id(0) * BM, 0])
    dst.store([tl.program_id(0) * BM, 0], tile * factor)


def test_descriptors_kept_off_tma_are_noted():
    """Host descriptors whose launch strides TMA cannot take: one note each, naming the descriptor
    and the rule, from the `ttng.tma_fallback` notes of the `tile-gpu` IR."""
    from types import SimpleNamespace

    from tileworkbench.frontend import ArgSpec
    from tileworkbench.workbench.gpu_stages import note_compiler_choices

    descs = [ArgSpec(name, "tensordesc<fp16,64x64,zero>", False) for name in ("src", "dst")]
    compiled = tw.compile(scale, signature=descs + [ArgSpec("factor", "fp32")],
                          constexprs={"BM": 64, "BN": 64}, target="sm_90a")
    report = SimpleNamespace(asm=compiled.asm, notes=[])
    note_compiler_choices(report)
    assert len(report.notes) == 2, report.notes
    for name, note in zip(("src", "dst"), report.notes):
        assert f"descriptor on pointers, not TMA: descriptor {name}:" in note
        assert "16-byte chunks" in note and note.startswith("line ")
