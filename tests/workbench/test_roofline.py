"""Roofline numbers, FLOP and byte counts, occupancy and peaks, against hand-computed values."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fakes import build_add, build_loop_kernel

from tileworkbench.workbench.counts import count_launch, memory_params
from tileworkbench.workbench.peaks import Peak, Peaks, cache_path, datasheet_entry, get_peaks
from tileworkbench.workbench.resources import limits_for, occupancy
from tileworkbench.workbench.roofline import RooflinePoint, bound_of, roofline


def toy_peaks() -> Peaks:
    measured = {
        "dram": Peak("dram", 1e12, "B/s", "measured"),
        "fp32": Peak("fp32", 50e12, "FLOP/s", "measured"),
        "fp16": Peak("fp16", 400e12, "FLOP/s", "measured"),
    }
    return Peaks("Toy GPU", measured=measured)


def test_memory_bound_point():
    # I = 2e12 / 1e11 = 20 FLOP/B; memory roof 1e12 * 20 = 20 TFLOP/s < 50: DRAM bound.
    point = RooflinePoint("k", flops=2e12, bytes=1e11, seconds=0.2)
    bound = bound_of(point, toy_peaks())
    assert point.intensity == pytest.approx(20.0)
    assert bound.name == "dram" and bound.attainable == pytest.approx(20e12)
    assert bound.fraction == pytest.approx(0.5)  # achieved 10 TFLOP/s
    assert bound.label() == "50% of DRAM bandwidth bound"


def test_compute_bound_point_uses_its_ceiling():
    # I = 1000 FLOP/B: fp32 roof 50 TFLOP/s; as an fp16 dot kernel, the 400 TFLOP/s roof.
    point = RooflinePoint("mm", flops=1e13, bytes=1e10, seconds=0.5)
    assert bound_of(point, toy_peaks()).attainable == pytest.approx(50e12)
    point.compute = "fp16"
    bound = bound_of(point, toy_peaks())
    assert bound.name == "fp16" and bound.fraction == pytest.approx(20e12 / 400e12)


def test_plot_and_save(tmp_path):
    points = [RooflinePoint("a", 2e12, 1e11, 0.2), RooflinePoint("b", 1e13, 1e10, 0.5, "fp16")]
    plot = roofline(points, peaks=toy_peaks())
    png, svg = plot.save(tmp_path / "r.png"), plot.save(tmp_path / "r.svg")
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(svg, "rb") as f:
        assert b"<svg" in f.read(400)
    text = repr(plot)
    assert "a: 20 FLOP/B, 10 TFLOP/s, 50% of DRAM bandwidth bound" in text


def test_add_kernel_counts():
    func = build_add(1024)
    loads, stores = memory_params(func)
    assert loads == ["x_ptr", "y_ptr"] and stores == ["out_ptr"]
    n = 5000
    args = {
        "x_ptr": np.ones(n, np.float32),
        "y_ptr": np.ones(n, np.float32),
        "out_ptr": np.ones(n, np.float32),
        "n": n,
    }
    counts = count_launch(func, args, (5, 1, 1))
    assert counts.flops == 5 * 1024  # one addf per element of each program's tile
    assert counts.bytes == 3 * 4 * n


def test_loop_trip_count_from_scalar_arg():
    func = build_loop_kernel(64)
    counts = count_launch(func, {"x_ptr": np.zeros(64, np.float32), "K": 100}, (4, 1, 1))
    # ceil(100 / 16) = 7 trips of exp + mul + add on 64 elements, 4 programs.
    assert counts.flops == 4 * 7 * 3 * 64
    assert counts.bytes == 2 * 64 * 4  # x both read and written
    unknown = count_launch(func, None, (4, 1, 1))
    assert unknown.flops == 4 * 3 * 64 and "trip count unknown" in unknown.notes[0]


def test_user_counts_override():
    counts = count_launch(build_add(), None, (1, 1, 1), flops=7.0, bytes=11.0)
    assert (counts.flops, counts.bytes) == (7.0, 11.0)
    assert counts.flops_source == counts.bytes_source == "given by the user"


def test_occupancy_h100_limits():
    limits = limits_for("sm_90")
    # 128 regs/thread, 8 warps: 128*32 = 4096 regs/warp -> 16 warps -> 2 blocks.
    assert occupancy(128, 0, 8, limits) == (2, "registers")
    # 100 KB shared (+1 KB reserved) -> 2 blocks of 228 KB.
    assert occupancy(32, 100 * 1024, 4, limits) == (2, "shared memory")
    # small kernel, 4 warps: 2048 threads / 128 = 16 blocks.
    assert occupancy(32, 0, 4, limits) == (16, "threads")
    # 1 warp: the 32 blocks/SM cap binds before threads (64).
    assert occupancy(16, 0, 1, limits) == (32, "blocks")


def test_datasheet_lookup_and_cache(tmp_path):
    assert datasheet_entry("NVIDIA H200")[0] == "H200"
    assert datasheet_entry("NVIDIA H100 80GB HBM3 SXM")[0] == "H100 SXM"
    assert datasheet_entry("NVIDIA GeForce RTX 4090")[0] == "RTX 4090"
    assert datasheet_entry("Some Other GPU") is None
    path = cache_path("Toy GPU")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(toy_peaks().to_json()))
    peaks = get_peaks("Toy GPU")
    assert peaks.measured["dram"].value == 1e12 and peaks.best("fp16").source == "measured"
    path.write_text("{not json")
    assert get_peaks("Toy GPU").measured == {}  # an unreadable cache is ignored


def test_peaks_html_has_table_and_plot():
    html = toy_peaks()._repr_html_()
    assert "<table>" in html and "Toy GPU" in html and "data:image/png;base64," in html


def test_untimed_kernels_on_datasheet_ceilings_say_what_is_placed_where():
    """On a CPU: no ceiling measured, no kernel timed. The title names the datasheet, the legend
    says a vertical line is an intensity and its circle the roof there; the text gives the bound."""
    peaks = Peaks("Toy GPU", datasheet=toy_peaks().measured)
    points = [RooflinePoint("add", 1e9, 12e9, None), RooflinePoint("mm", 1e13, 1e10, None, "fp16")]
    plot = roofline(points, peaks=peaks)
    ax = plot.figure().axes[0]
    assert ax.get_title() == "Roofline: Toy GPU datasheet ceilings (none measured here)"
    legend = ax.get_legend()
    assert "a vertical line is a kernel's arithmetic intensity" in legend.get_title().get_text()
    labels = [t.get_text() for t in legend.get_texts()]
    # 1/12 FLOP/B x 1 TB/s = 83.3 GFLOP/s; mm at 1000 FLOP/B meets the fp16 roof at 400 TFLOP/s
    assert "add: 0.0833 FLOP/B, not timed; at most 83.3 GFLOP/s (DRAM bandwidth bound)" in labels
    assert "mm: 1e+03 FLOP/B, not timed; at most 400 TFLOP/s (fp16 compute bound)" in labels
    circles = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert sorted(c.get_ydata()[0] for c in circles) == pytest.approx([1e12 / 12, 400e12])
    text = repr(plot)
    assert text.startswith("Roofline on Toy GPU datasheet ceilings (none measured here)")
    assert "add: 0.0833 FLOP/B, not timed, at most 83.3 GFLOP/s there" in text
    timed = roofline([RooflinePoint("a", 2e12, 1e11, 0.2)], peaks=toy_peaks())
    ax = timed.figure().axes[0]
    assert ax.get_title() == "Roofline: Toy GPU, measured"
    assert "vertical line" not in ax.get_legend().get_title().get_text()
