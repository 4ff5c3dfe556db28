"""`--profile` without a GPU: ncu's pages parsed, counters attributed per source line through the
cubin's line table (sums equal the kernel totals), stall reasons in words, the runner's child process
and its one-line reasons when ncu is missing or refused (a stand-in `ncu` script plays ncu)."""

from __future__ import annotations

import os
import stat
import sys
import textwrap

import numpy as np
import pytest

from tileworkbench.workbench import ncu
from tileworkbench.workbench.profile import (
    Profile,
    attribute,
    check_totals,
    from_pages,
    mma_flops,
    stall_reason,
)
from tileworkbench.workbench.profile_view import ProfileSection, UnavailableSection
from tileworkbench.workbench.sass_link import parse_sass

RNG = np.random.default_rng(22)

SASS = textwrap.dedent("""\
    add_kernel:
    //## File "/tmp/k.py", line 4
            /*0000*/                   LDC R1, c[0x0][0x28] ;
            /*0010*/                   S2R R0, SR_TID.X ;
    //## File "/tmp/k.py", line 8
            /*0020*/              @!P0 LDG.E R2, desc[UR4][R4.64] ;
    //## File "/tmp/k.py", line 9
            /*0030*/              @!P0 LDG.E R3, desc[UR4][R6.64] ;
    //## File "/tmp/k.py", line 10
            /*0040*/                   FADD R3, R2, R3 ;
            /*0050*/              @!P0 STG.E desc[UR4][R8.64], R3 ;
            /*0060*/                   EXIT ;
    """)
COLUMNS = ["# Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
           "Thread Instructions Executed", "L2 Theoretical Sectors Global",
           "stall_long_scoreboard", "stall_wait", "stall_selected"]


def _page(counts: np.ndarray, extra_row: bool = False) -> str:
    """A source page (CSV) for SASS above with the per-instruction numbers `counts` (7 x 7)."""
    instrs = parse_sass(SASS)
    lines = ['"Kernel Name","add_kernel"', ",".join(f'"{c}"' for c in COLUMNS)]
    rows = [(s.pc, s.text) for s in instrs] + ([(0x70, "BRA 0x70")] if extra_row else [])
    for i, (pc, text) in enumerate(rows):
        values = counts[i % len(counts)]
        lines.append(",".join([f'"0x{pc:x}"', f'"{text}"'] + [f'"{v:.0f}"' for v in values]))
    return "\n".join(lines) + "\n"


def _raw(totals: dict[str, float]) -> str:
    names = ["ID", "Kernel Name", *totals]
    units = ["", "", *["" for _ in totals]]
    values = ["0", "add_kernel", *[repr(float(v)) for v in totals.values()]]
    return "\n".join(",".join(f'"{c}"' for c in row) for row in (names, units, values)) + "\n"


def _counts():
    counts = RNG.integers(1, 5000, size=(7, 7)).astype(float)
    counts[:, 0] = counts[:, 4:].sum(axis=1)  # all samples = the sum of the reasons
    return counts


def test_per_line_sums_equal_the_kernel_totals():
    counts = _counts()
    totals = {"smsp__inst_executed.sum": counts[:, 1].sum(),
              "smsp__thread_inst_executed.sum": counts[:, 2].sum(),
              "smsp__pcsamp_sample_count": counts[:, 0].sum(),
              "gpu__time_duration.sum": 2e-5, "dram__bytes_read.sum": 8e6,
              "dram__bytes_write.sum": 4e6}
    prof = from_pages(_page(counts), _raw(totals), parse_sass(SASS), "add_kernel")
    assert sorted(prof.lines) == [4, 8, 9, 10]
    assert prof.lines[10].get("Instructions Executed") == counts[4:7, 1].sum()
    assert prof.lines[8].get("L2 Theoretical Sectors Global") == counts[2, 3]
    assert prof.totals["smsp__inst_executed.sum"] == counts[:, 1].sum()  # compared, not skipped
    assert check_totals(prof) == []
    assert prof.unmatched == 0
    # a total that disagrees is reported, naming the column
    wrong = dict(totals, **{"smsp__inst_executed.sum": counts[:, 1].sum() + 1})
    prof = from_pages(_page(counts), _raw(wrong), parse_sass(SASS), "add_kernel")
    assert "Instructions Executed" in check_totals(prof)[0]


def test_a_row_the_cubin_lacks_goes_to_line_zero_and_still_counts():
    counts = _counts()
    prof = from_pages(_page(counts, extra_row=True), _raw({}), parse_sass(SASS), "add_kernel")
    assert prof.unmatched == 1 and 0 in prof.lines
    every = sum(lc.get("Instructions Executed") for lc in prof.lines.values())
    assert every == counts[:, 1].sum() + counts[0, 1]


def test_stalls_in_words_name_the_line_and_skip_selected():
    counts = _counts()
    counts[:, 4] = 0
    counts[2, 4] = 100_000  # long scoreboard at the first load (line 8)
    counts[:, 6] = 50_000  # selected (issuing) is never a stall
    counts[:, 0] = counts[:, 4:].sum(axis=1)
    prof = from_pages(_page(counts), _raw({}), parse_sass(SASS), "add_kernel")
    top = prof.stalls[0]
    assert top.reason == "long_scoreboard" and top.line == 8
    assert "waiting on global or local memory" in top.words() and "line 8" in top.words()
    assert all(note.reason != "selected" for note in prof.stalls)
    assert stall_reason("smsp__pcsamp_warps_issue_stalled_barrier") == "barrier"
    assert stall_reason("smsp__pcsamp_warps_issue_stalled_barrier_not_issued") is None


def test_measured_flops_and_roofline_point():
    counts = _counts()
    totals = {"gpu__time_duration.sum": 1e-5, "dram__bytes_read.sum": 3e6,
              "dram__bytes_write.sum": 1e6}
    prof = from_pages(_page(counts), _raw(totals), parse_sass(SASS), "add_kernel")
    fadd_threads = counts[4, 2]  # one FLOP per thread of the FADD row
    assert prof.cuda_core_flops == fadd_threads and prof.tensor_flops == 0
    point = prof.roofline_point()
    assert point.bytes == 4e6 and point.flops == fadd_threads and point.seconds == 1e-5
    assert mma_flops("HMMA.16816.F32") == 2 * 16 * 8 * 16
    assert mma_flops("HGMMA.64x128x16.F32") == 2 * 64 * 128 * 16 / 4
    text = "\n".join(ProfileSection(prof, {8: "x = tl.load(x_ptr + offs)"}).text())
    assert "DRAM 400 GB/s" in text and "x = tl.load" in text
    assert "per-line sums equal ncu's kernel totals" in text


def test_profile_round_trips_through_json():
    counts = _counts()
    prof = from_pages(_page(counts), _raw({"gpu__time_duration.sum": 1e-5}), parse_sass(SASS),
                      "add_kernel")
    again = Profile.from_json(prof.to_json())
    assert again.lines[10].values == prof.lines[10].values
    assert [s.words() for s in again.stalls] == [s.words() for s in prof.stalls]


def _fake_ncu(tmp_path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_missing_ncu_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_NCU", str(tmp_path / "nowhere" / "ncu"))
    with pytest.raises(ncu.NcuUnavailable, match="not installed"):
        ncu.run_ncu("x.py", "k", str(tmp_path))
    line = UnavailableSection("ncu (Nsight Compute) is not installed here").text()
    assert len(line) == 1 and "shown instead" in line[0]


def test_refused_counters_are_named(tmp_path, monkeypatch):
    fake = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have '
                               'permission to access NVIDIA GPU Performance Counters"\nexit 1\n')
    monkeypatch.setenv("TILEWORKBENCH_NCU", fake)
    with pytest.raises(ncu.NcuUnavailable, match="not permitted"):
        ncu.run_ncu("x.py", "k", str(tmp_path))


def test_runner_profiles_a_child_process_and_reads_both_pages(tmp_path, monkeypatch):
    """The stand-in ncu runs the child Python (as ncu does), writes the report, and answers `-i`
    with the pages; the runner passes --clock-control none and the kernel's name."""
    counts = _counts()
    (tmp_path / "source.csv").write_text(_page(counts))
    (tmp_path / "raw.csv").write_text(_raw({"smsp__inst_executed.sum": counts[:, 1].sum()}))
    fake = _fake_ncu(tmp_path, textwrap.dedent(f"""\
        echo "$@" >> {tmp_path}/calls
        if [ "$1" = "-i" ]; then
          case "$*" in *source*) cat {tmp_path}/source.csv;; *) cat {tmp_path}/raw.csv;; esac
          exit 0
        fi
        out=""; prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
        shift $(($# - 2)); "$1" "$2" && touch "$out.ncu-rep"
        """))
    monkeypatch.setenv("TILEWORKBENCH_NCU", fake)
    script = tmp_path / "child.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('launched')\n")
    pages = ncu.run_ncu(str(script), "add_kernel", str(tmp_path))
    assert (tmp_path / "ran").read_text() == "launched"
    calls = (tmp_path / "calls").read_text()
    assert "--clock-control none" in calls and "regex:^add_kernel$" in calls
    assert sys.executable in calls and "--print-units base" in calls
    prof = from_pages(pages["source"], pages["raw"], parse_sass(SASS), "add_kernel")
    assert check_totals(prof) == [] and prof.column_total("Instructions Executed") > 0
    assert os.path.exists(tmp_path / "profile.ncu-rep")
    assert isinstance(attribute(ncu.parse_source(pages["source"])[0], parse_sass(SASS), {}),
                      Profile)


ADD_CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)

n = 3000
x = np.random.default_rng().standard_normal(n).astype(np.float32)
y = np.random.default_rng().standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
add_kernel[lambda meta: (tw.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
"""


def test_magic_profile_without_a_gpu_says_what_it_could_not_measure(tilekernel):
    pytest.importorskip("IPython")
    from tileworkbench.workbench.profile_view import SweepProfileSection

    reports = tilekernel("--target interpreter --profile --ref 'x + y'", ADD_CELL)
    report = reports[0]
    assert report.check.passed
    section = report.sections[0]
    assert isinstance(section, UnavailableSection)
    assert "interpreter" in section.line() and "shown instead" in section.line()
    assert section.line() in report._repr_html_() or "no profile" in report._repr_html_()
    assert any(section.line() in line for line in report.summary_lines())
    reports = tilekernel("--target interpreter --profile --sweep BLOCK=256,1024", ADD_CELL)
    sweep = [s for s in reports[0].sections if isinstance(s, SweepProfileSection)]
    assert len(sweep) == 1 and len(sweep[0].rows) == 2
    assert [label.split()[0] for label, _ in sweep[0].rows] == ["BLOCK=256", "BLOCK=1024"]
    assert all("no profile" in row for row in sweep[0].text())


def test_cli_shows_a_recorded_profile(tmp_path, capsys):
    import json

    from tileworkbench.cli import main

    counts = _counts()
    prof = from_pages(_page(counts), _raw({"gpu__time_duration.sum": 1e-5}), parse_sass(SASS),
                      "add_kernel")
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"profile": prof.to_json(), "source": {"10": "y = a + b"}}]))
    assert main(["profile", "--recorded", str(path)]) == 0
    out = capsys.readouterr().out
    assert "add_kernel" in out and "y = a + b" in out and "stall 1:" in out


def test_profiling_lesson_is_what_its_builder_writes_and_its_record_checks(tmp_path):
    """notebooks/07_profiling.ipynb is build_profiling.py's output, and its recorded profiles (an H100)
    satisfy the claims the lesson makes (the claim-check cell's assertions, run here on the record)."""
    import importlib.util
    from pathlib import Path

    nbformat = pytest.importorskip("nbformat")
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("build_profiling",
                                                  root / "notebooks" / "build_profiling.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    fresh = nbformat.read(builder.build(tmp_path), as_version=4)
    stored = nbformat.read(root / "notebooks" / "07_profiling.ipynb", as_version=4)
    assert [c.source for c in fresh.cells] == [c.source for c in stored.cells]
    from tileworkbench.workbench.profile_view import recorded_profiles

    sections = recorded_profiles("07_profiling")
    assert len(sections) == 3
    profiles = dict(enumerate(sections))
    check = next(c.source for c in stored.cells if "from the three profiles" in c.source)
    exec(compile(check, "claim-check", "exec"), {"profiles": profiles})  # noqa: S102 - the claim check
