"""Triton's GPU-limit helpers in tw.testing (computed from device properties as Triton computes them)
and do_bench_cudagraph (host timing without a GPU; a CUDA graph replay on one, marked gpu)."""

from __future__ import annotations

import time

import pytest

import tileworkbench as tw
from tileworkbench.runtime import device_limits
from tileworkbench.cuda.device import DeviceProperties

# an H200's properties as CUDA reports them (clock 1980 MHz, HBM3e 2619 MHz on a 6144-bit bus)
H200 = DeviceProperties(0, "NVIDIA H200", 9, 0, 132, 1024, 49152, 232448, 233472, 65536, 65536,
                        (2**31 - 1, 65535, 65535), 32, 62914560, 150 * 2**30, 1980000, 2619000, 6144)


def test_limits_from_properties():
    assert device_limits.dram_gbps(H200) == pytest.approx(2 * 2619e6 * 6144 / 8 / 1e9)
    sub_cores_hz = 132 * 4 * 1.98e9
    assert device_limits.tensorcore_tflops(H200, "float16") == pytest.approx(sub_cores_hz * 1024 / 1e12)
    assert device_limits.tensorcore_tflops(H200, tw.language.float8e4nv) == \
        pytest.approx(sub_cores_hz * 2048 / 1e12)
    assert device_limits.simd_tflops(H200, "fp32", clock_khz=1e6) == pytest.approx(132 * 4 * 1e9 * 32 / 1e12)
    with pytest.raises(ValueError, match="no figure for float64"):
        device_limits.tensorcore_tflops(H200, "float64")


def test_triton_names_are_exported():
    for name in ("do_bench_cudagraph", "get_dram_gbps", "get_max_tensorcore_tflops", "get_max_simd_tflops"):
        assert callable(getattr(tw.testing, name))


def test_do_bench_cudagraph_times_on_the_host_without_a_gpu(monkeypatch):
    from tileworkbench.runtime import testing

    monkeypatch.setattr(testing, "_gpu_timing", lambda: False)
    ms = tw.testing.do_bench_cudagraph(lambda: time.sleep(0.002), rep=10)
    assert 2.0 <= ms < 50.0


@pytest.mark.gpu
def test_do_bench_cudagraph_on_the_gpu():
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    import cupy

    x = cupy.random.standard_normal(1 << 24, dtype=cupy.float32)
    y = cupy.empty_like(x)
    ms = tw.testing.do_bench_cudagraph(lambda: cupy.multiply(x, 2, out=y))
    gbps = 2 * x.nbytes / (ms * 1e-3) / 1e9
    assert 0 < gbps <= tw.testing.get_dram_gbps() * 1.05  # a copy cannot beat the DRAM limit
