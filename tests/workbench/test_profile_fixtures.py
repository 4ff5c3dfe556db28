"""`--profile`'s parser and attribution on real Nsight Compute output: pages captured on an H100
(tests/workbench/data/ncu_*) for a
vector add, a 16384-wide softmax and a 2048^3 fp16 wgmma matmul, with the SASS (nvdisasm
--print-line-info) of the cubins those launches ran. The per-line sums equal ncu's own kernel totals,
every SASS row lands on a source line, the stall reasons and the roofline point come out right.

Made by data/ncu_probe.py (run as probe_kernels.py) under `ncu --clock-control none --set full
--import-source yes -k regex:add_kernel|softmax_kernel|matmul_kernel -o prof`, the pages exported with
`ncu -i prof.ncu-rep --csv --print-units base --page source --print-source sass` and `--page raw`, the
SASS by `nvdisasm -c -g --print-line-info` of each launch's cubin; one kernel's block of each page kept.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tileworkbench.workbench.ncu import parse_raw, parse_source
from tileworkbench.workbench.profile import TOTALS, check_totals, from_pages
from tileworkbench.workbench.profile_view import ProfileSection
from tileworkbench.workbench.sass_link import parse_sass

DATA = Path(__file__).parent / "data"
PROBE = (DATA / "ncu_probe.py").read_text().splitlines()


def _read(name: str) -> str:
    with gzip.open(DATA / name, "rt") as f:
        return f.read()


def _profile(case: str, kernel: str):
    sass = parse_sass(_read(f"ncu_{case}.sass.gz"))
    return from_pages(_read(f"ncu_{case}_source.csv.gz"), _read(f"ncu_{case}_raw.csv.gz"), sass,
                      kernel), sass


def _line(text: str) -> int:
    return next(i for i, line in enumerate(PROBE, start=1) if text in line)


@pytest.mark.parametrize("case,kernel", [("add", "add_kernel"), ("softmax_w16", "softmax_kernel"),
                                         ("matmul_w8", "matmul_kernel")])
def test_per_line_sums_equal_ncus_kernel_totals(case, kernel):
    prof, sass = _profile(case, kernel)
    assert prof.unmatched == 0  # every row of ncu's page is an instruction of the cubin, by offset
    assert len(parse_source(_read(f"ncu_{case}_source.csv.gz"))[0].rows) == len(sass)
    for column, metric in TOTALS.items():
        assert prof.totals[metric] > 0
        assert prof.column_total(column) == prof.totals[metric], column
    assert check_totals(prof) == []
    # the measured DRAM bytes (read + write) agree with ncu's DRAM throughput x duration
    rate = prof.metric("dram__bytes.sum.per_second")
    assert abs(prof.dram_bytes - rate * prof.seconds) <= 0.10 * prof.dram_bytes


def test_vector_add_waits_on_its_loads():
    prof, _ = _profile("add", "add_kernel")
    top = prof.stalls[0]
    assert top.reason == "long_scoreboard" and top.line == _line("tl.store(out_ptr + offs, x + y")
    assert prof.seconds == pytest.approx(62.464e-6)
    n = 1 << 24
    assert prof.dram_bytes == pytest.approx(3 * 4 * n, rel=0.1)  # x, y read, out written
    assert prof.cuda_core_flops == n  # one FADD per element, from the per-instruction counts
    assert prof.summary()["achieved_occupancy_pct"] == pytest.approx(80.07)
    point = prof.roofline_point()
    assert point.intensity == pytest.approx(1 / 12, rel=0.1)


def test_matmul_tensor_flops_and_pipe_from_counters():
    prof, sass = _profile("matmul_w8", "matmul_kernel")
    assert prof.tensor_flops == 2 * 2048**3  # HGMMA executions x their shape, exactly the product
    assert prof.tensor_pipe_pct() > 30
    dot = _line("acc = tl.dot(a, b, acc)")
    on_dot = {sass[i].mnemonic for i in prof.lines[dot].sass}
    assert "HGMMA" in on_dot
    section = ProfileSection(prof, {i: t for i, t in enumerate(PROBE, start=1)}, sass)
    page = section.html()
    assert "HGMMA" in page and "tensor pipe" in page


def test_softmax_top_stalls_are_named_with_their_lines():
    prof, _ = _profile("softmax_w16", "softmax_kernel")
    lines = {n.line for n in prof.stalls}
    assert lines <= set(range(_line("def softmax_kernel"), _line("def softmax_kernel") + 12))
    words = [n.words() for n in prof.stalls]
    assert len(words) == 3 and all("at line" in w for w in words)
    text = "\n".join(ProfileSection(prof, {i: t for i, t in enumerate(PROBE, start=1)}).text())
    assert "stall 1:" in text and "per-line sums equal ncu's kernel totals" in text


def test_raw_page_units_become_seconds_and_bytes():
    raw = parse_raw(_read("ncu_add_raw.csv.gz"))[0]
    assert raw["gpu__time_duration.sum"] == pytest.approx(62.464e-6)  # printed in ns
    assert raw["dram__bytes_read.sum"] > 1e8


def test_the_measured_point_is_placed_on_the_devices_roofline():
    from tileworkbench.workbench.peaks import Peaks, datasheet_peaks

    prof, sass = _profile("add", "add_kernel")
    peaks = Peaks("H100 SXM", datasheet=datasheet_peaks("H100 SXM"))
    section = ProfileSection(prof, {}, sass, peaks=peaks)
    text = "\n".join(section.text())
    assert "of DRAM bandwidth bound on H100 SXM" in text  # a vector add is memory bound
    assert "data:image/png;base64," in section.html()
