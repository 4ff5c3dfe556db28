"""Device helpers without a GPU: gpu_available never raises, properties derive arch and bandwidth."""

from __future__ import annotations

import sys

import pytest

from tileworkbench.errors import LaunchError
from tileworkbench.cuda import device
from tileworkbench.cuda.device import DeviceProperties


@pytest.fixture
def fresh_cache():
    device.gpu_available.cache_clear()
    yield
    device.gpu_available.cache_clear()


def test_no_cupy_means_no_gpu(monkeypatch, fresh_cache):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    assert device.gpu_available() is False
    assert device.device_count() == 0
    with pytest.raises(LaunchError, match="no CUDA GPU is available"):
        device.device_properties()


def test_a_failing_driver_means_no_gpu(monkeypatch, fresh_cache):
    class Runtime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeError("cudaErrorInsufficientDriver")

    class Cuda:
        runtime = Runtime

    fake_cupy = type(sys)("cupy")
    fake_cupy.cuda = Cuda
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    assert device.gpu_available() is False


def _h100(**overrides) -> DeviceProperties:
    values = dict(
        device_id=0, name="NVIDIA H100 80GB HBM3", major=9, minor=0, sm_count=132,
        max_threads_per_block=1024, max_shared_per_block=49152,
        max_shared_per_block_optin=232448, max_shared_per_sm=233472, max_regs_per_block=65536,
        max_regs_per_sm=65536, max_grid=(2**31 - 1, 65535, 65535), warp_size=32,
        l2_size=52428800, total_memory=85 * 2**30, clock_khz=1980000,
        memory_clock_khz=2619000, memory_bus_width=5120,
    )  # fmt: skip
    values.update(overrides)
    return DeviceProperties(**values)


def test_arch_and_datasheet_bandwidth():
    props = _h100()
    assert props.arch == "sm_90" and props.compute_capability == (9, 0)
    # 2 transfers x 2.619 GHz x 640 bytes = 3.35 TB/s, the H100 SXM datasheet figure
    assert props.dram_bandwidth == pytest.approx(3.352e12, rel=1e-3)
    assert _h100(major=8, minor=6).arch == "sm_86"
