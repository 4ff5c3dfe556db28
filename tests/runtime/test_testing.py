"""do_bench in host mode, assert_close, and perf_report's table (no GPU, no pandas needed)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tileworkbench.runtime import testing
from tileworkbench.runtime.testing import Benchmark, assert_close, do_bench, perf_report


def _sleeper(ms: float):
    calls = []

    def fn():
        calls.append(1)
        time.sleep(ms / 1e3)

    return fn, calls


def test_do_bench_host_mode_measures_a_sleep():
    fn, calls = _sleeper(2.0)
    mean = do_bench(fn, warmup=4, rep=20, timer="host")
    # sleep never returns early; a loaded CI machine may oversleep, so the upper bound is loose
    assert 2.0 <= mean < 20.0
    # one first call, 5 for the estimate, then about warmup/estimate and rep/estimate runs
    assert 8 <= len(calls) <= 6 + 2 + 10


def test_do_bench_auto_uses_the_host_without_a_gpu(monkeypatch):
    monkeypatch.setattr(testing, "_gpu_timing", lambda: False)
    fn, calls = _sleeper(1.0)
    measured_ms = do_bench(fn, warmup=2, rep=10)  # a 1 ms sleep, timed on the host
    assert measured_ms >= 1.0, measured_ms  # never less than the sleep itself
    assert measured_ms < 15.0, measured_ms
    assert len(calls) >= 1 + 5 + 1


def test_do_bench_return_modes_and_quantiles():
    durations = iter([0.5] * 6 + [1.0, 3.0, 2.0, 4.0, 5.0] * 50)

    def fn():
        time.sleep(next(durations) / 1e3)

    # rep / estimate runs: at least 5 even if a loaded machine makes the 0.5 ms estimate 6 ms
    times = do_bench(fn, warmup=0, rep=30, return_mode="all", timer="host")
    assert len(times) >= 5 and all(t > 0 for t in times)
    assert min(times) >= 0.99 - 1e-3
    low, median, high = testing._summarize([1.0, 2.0, 3.0, 4.0, 5.0], [0.2, 0.5, 0.8], "mean")
    assert (low, median, high) == pytest.approx((1.8, 3.0, 4.2))
    assert testing._summarize([1.0, 2.0, 9.0], [0.5], "mean") == 2.0
    assert testing._summarize([1.0, 2.0, 9.0], None, "median") == 2.0
    assert testing._summarize([1.0, 2.0, 9.0], None, "mean") == 4.0
    assert testing._summarize([1.0, 2.0, 9.0], None, "min") == 1.0
    assert testing._summarize([1.0, 2.0, 9.0], None, "max") == 9.0


def test_do_bench_resets_grads_and_rejects_bad_modes():
    class Tensor:
        grad = "stale"

    tensor = Tensor()
    seen = []

    def fn():
        seen.append(tensor.grad)
        tensor.grad = "accumulated"

    times = do_bench(fn, warmup=0, rep=1, grad_to_none=[tensor], timer="host", return_mode="all")
    # the measured runs (the last ones) start from a cleared grad; the others do not
    assert seen[-len(times) :] == [None] * len(times)
    assert seen[: -len(times)] == ["stale"] + ["accumulated"] * (len(seen) - len(times) - 1)
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(fn, return_mode="average", timer="host")
    with pytest.raises(ValueError, match="timer"):
        do_bench(fn, timer="gpu")


def test_assert_close_passes_within_and_fails_outside_tolerance():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    assert_close(x, x.astype(np.float64) + 5e-3)
    with pytest.raises(AssertionError, match="softmax row"):
        assert_close(x, x + 0.05, err_msg="softmax row")
    assert_close(x, x * (1 + 1e-3), atol=0, rtol=2e-3)
    with pytest.raises(AssertionError):
        assert_close(x, x * (1 + 1e-2), atol=0, rtol=lambda dtype: 1e-3)


def test_assert_close_scalars_nans_and_bf16():
    import ml_dtypes

    assert_close(1.0, 1.005)
    with pytest.raises(AssertionError, match="is not close to"):
        assert_close(1.0, 1.5)
    with_nan = np.array([1.0, np.nan, 3.0])
    assert_close(with_nan, with_nan.copy())
    with pytest.raises(AssertionError):
        assert_close(with_nan, np.array([1.0, 2.0, 3.0]))
    values = np.random.default_rng(1).standard_normal(64)
    assert_close(values.astype(ml_dtypes.bfloat16), values, atol=0, rtol=1e-2)


def _vector_benchmark(**overrides) -> Benchmark:
    settings = dict(
        x_names=["size"],
        x_vals=[2**10, 2**12, 2**14],
        line_arg="provider",
        line_vals=["fast", "slow"],
        line_names=["Fast", "Slow"],
        plot_name="vector-add",
        args={"scale": 3},
        ylabel="GB/s",
    )
    settings.update(overrides)
    return Benchmark(**settings)


def test_perf_report_prints_a_table(capsys):
    seen = []

    @perf_report(_vector_benchmark())
    def bench(size, provider, scale):
        seen.append((size, provider, scale))
        value = size * scale / (2 if provider == "slow" else 1)
        return value, value - 1, value + 1

    table = bench.run(print_data=True, return_df=True)
    out = capsys.readouterr().out
    assert seen == [(s, p, 3) for s in (2**10, 2**12, 2**14) for p in ("fast", "slow")]
    lines = out.strip().splitlines()
    assert lines[0] == "vector-add:"
    assert lines[1].split() == ["size", "Fast", "Slow"]
    assert lines[2].split() == ["1024", "3072", "1536"]
    assert lines[4].split() == ["16384", "49152", "24576"]
    assert list(table["Slow"]) == [1536.0, 6144.0, 24576.0]


def test_perf_report_several_x_names_and_csv(tmp_path, monkeypatch):
    @perf_report([_vector_benchmark(x_names=["M", "N"], x_vals=[(1, 2), (3, 4)])])
    def bench(M, N, provider, scale):
        return float(M * 10 + N + (0.5 if provider == "slow" else 0))

    monkeypatch.setattr(testing.Mark, "_plot", lambda *args: None)  # matplotlib is optional
    assert bench.run(print_data=False, save_path=str(tmp_path)) is None
    csv = (tmp_path / "vector-add.csv").read_text().splitlines()
    assert csv == ["M,N,Fast,Slow", "1,2,12.0,12.5", "3,4,34.0,34.5"]
    assert "vector-add.png" in (tmp_path / "results.html").read_text()
