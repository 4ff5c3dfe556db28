"""The hierarchical roofline: memory levels and compute kinds as ceilings, warnings for points above
one, the host CPU's measured ceilings without a GPU, and the L2 microbenchmark kernel's arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from tileworkbench.workbench import peaks as peaks_module
from tileworkbench.workbench.peaks import Peak, Peaks
from tileworkbench.workbench.roofline import Roofline, RooflinePoint, ceiling_warnings

G, T = 1e9, 1e12


def toy() -> Peaks:
    return Peaks(
        "toy",
        measured={
            "l2": Peak("l2", 10_000 * G, "B/s", "measured", "L2 re-read"),
            "dram": Peak("dram", 4_000 * G, "B/s", "measured", "copy"),
            "fp32": Peak("fp32", 60 * T, "FLOP/s", "measured", "fma"),
        },
    )


def point(flops: float, nbytes: float, seconds: float) -> RooflinePoint:
    return RooflinePoint("k", flops, nbytes, seconds)


def test_point_under_every_ceiling_gets_no_warning():
    # 1 GB at 0.25 FLOP/B in 0.5 ms: 2 TB/s, half the DRAM slope
    assert ceiling_warnings(point(0.25e9, 1e9, 0.5e-3), toy()) == []


def test_point_between_dram_and_l2_is_explained_by_l2():
    [warning] = ceiling_warnings(point(0.25e9, 1e9, 0.125e-3), toy())  # 8 TB/s
    assert "above the DRAM ceiling (2.00x) but under L2's" in warning


def test_point_above_every_slope_says_counts_are_off():
    [warning] = ceiling_warnings(point(0.25e9, 1e9, 0.05e-3), toy())  # 20 TB/s
    assert "and L2's" in warning and "undercounted" in warning


def test_point_above_the_compute_roof():
    warnings = ceiling_warnings(point(1e12, 1e6, 1e-2), toy())  # 100 TFLOP/s at 1e6 FLOP/B
    assert any("above the fp32 ceiling" in w for w in warnings)


def test_plot_draws_a_slope_per_memory_level(tmp_path):
    chart = Roofline([point(0.25e9, 1e9, 0.125e-3)], toy())
    ax = chart.figure().axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(label.startswith("L2 10000 GB/s") for label in labels)
    assert any(label.startswith("DRAM 4000 GB/s") for label in labels)
    assert any("ABOVE A CEILING" in label for label in labels)
    assert "warning: k is above the DRAM ceiling" in repr(chart)


def test_host_peaks_are_measured_labelled_and_cached(monkeypatch):
    host = peaks_module.host_peaks()
    assert host.device.startswith("host CPU") and not host.datasheet
    for name in ("dram", "l2", "fp32", "fp64"):
        peak = host.measured[name]
        assert np.isfinite(peak.value) and peak.value > 0 and peak.detail.startswith("host")
    assert host.measured["fp32"].value > 1e8  # any BLAS does more than 0.1 GFLOP/s

    def refuse():
        raise AssertionError("measured again instead of using the cache")

    monkeypatch.setattr("tileworkbench.workbench.hostbench.measure_host", refuse)
    assert peaks_module.host_peaks().measured["dram"].value == host.measured["dram"].value


def test_l2_kernel_reads_what_the_bandwidth_counts():
    from tileworkbench.config import config
    from tileworkbench.workbench.l2_kernel import STRIDE, l2_read_kernel

    n, block, reps, programs = 3008, 64, 5, 4  # n - block a multiple of 16
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.full(programs * block, np.nan, np.float32)
    saved, config.interpret = config.interpret, True
    try:
        l2_read_kernel[(programs,)](x, out, n, REPS=reps, BLOCK=block)
    finally:
        config.interpret = saved
    lanes = np.arange(block)
    expected = np.zeros((programs, block))
    for pid in range(programs):
        for i in range(reps):
            start = (pid * block + i * int(STRIDE)) % (n - block)
            expected[pid] += x[start + lanes]
    np.testing.assert_allclose(out.reshape(programs, block), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_l2_ceiling_is_above_dram_on_the_gpu():
    from tileworkbench.workbench.microbench import measure_dram, measure_l2

    dram, l2 = measure_dram(), measure_l2()
    assert l2.value > 1.5 * dram.value, (l2, dram)


def test_peaks_magic_measures_the_host(shell):
    shown = shell.run_line_magic("tilekernel_peaks", "--host")
    assert shown.device.startswith("host CPU") and "NumPy BLAS sgemm" in repr(shown)
    assert "GB/s" in repr(shown)
