"""CudaKernel on a real GPU: hand-written PTX loaded through CuPy, launched, checked against NumPy.
Skipped where there is no GPU."""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
import pytest

from tileworkbench.errors import LaunchError, OutOfResources
from tileworkbench.cuda.device import device_properties, gpu_available
from tileworkbench.cuda.launcher import CudaKernel

from ptx_samples import ADD_KINDS, ADD_NAMES, ADD_PTX, ROTATE_PTX  # noqa: E402 (tests/runtime)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU with CuPy"),
]


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def add_kernel():
    return CudaKernel(
        ADD_PTX, "add_f32", num_warps=4, shared=0, param_kinds=ADD_KINDS, param_names=ADD_NAMES
    )


def _inputs(cp, n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = cp.full(n + 77, np.nan, dtype=cp.float32)  # poisoned, with a tail the mask must spare
    return x, y, cp.asarray(x), cp.asarray(y), out


def _poison(cp, out):
    """NaN into `out`, finished before the next launch (which may be on a non-blocking stream)."""
    out.fill(np.nan)
    cp.cuda.Device().synchronize()


def _check_add(x, y, out_gpu, n):
    out = out_gpu.get()
    expected = x.astype(np.float64) + y.astype(np.float64)
    relative = np.abs(out[:n] - expected) / np.maximum(np.abs(expected), 1e-30)
    assert relative.max() <= 2.0**-23
    assert np.isnan(out[n:]).all()


def test_add_kernel_matches_numpy(cp, add_kernel):
    n = 100_000 + int(np.random.default_rng(0).integers(1, 127))
    x, y, x_gpu, y_gpu, out = _inputs(cp, n, seed=1)
    add_kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n))
    add_kernel.synchronize()
    _check_add(x, y, out, n)
    assert add_kernel.num_regs > 0 and add_kernel.local_bytes == 0


def test_raw_arguments_without_a_signature(cp):
    kernel = CudaKernel(ADD_PTX, "add_f32", num_warps=8, shared=0)
    n = 5000
    x, y, x_gpu, y_gpu, out = _inputs(cp, n, seed=2)
    kernel(((n + 255) // 256, 1, 1), (x_gpu, y_gpu, out, np.int32(n)))
    cp.cuda.get_current_stream().synchronize()
    _check_add(x, y, out, n)


def test_cuda_array_interface_and_dlpack_objects(cp, add_kernel):
    class InterfaceOnly:
        def __init__(self, array):
            self.array = array
            self.__cuda_array_interface__ = array.__cuda_array_interface__

    class DLPackOnly:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    n = 3000
    x, y, x_gpu, y_gpu, out = _inputs(cp, n, seed=3)
    add_kernel.launch(((n + 127) // 128,), (InterfaceOnly(x_gpu), DLPackOnly(y_gpu), out, n))
    add_kernel.synchronize()
    _check_add(x, y, out, n)


def test_torch_tensors(add_kernel):
    torch = pytest.importorskip("torch")
    n = 4096 + 3
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = torch.full((n,), float("nan"), device="cuda")
    add_kernel.launch(
        ((n + 127) // 128,), (torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), out, n)
    )
    torch.cuda.synchronize()
    expected = x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=2.0**-23, atol=0)


def test_streams_and_threads(cp, add_kernel):
    import threading

    n = 20_000
    x, y, x_gpu, y_gpu, out = _inputs(cp, n, seed=11)
    # a non-blocking stream does not wait for the default stream's copies and fills: each launch
    # below waits for them here (without this, the kernel raced the inputs' copies on the H200)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    add_kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n), stream=stream)
    add_kernel.synchronize(stream)
    _check_add(x, y, out, n)
    _poison(cp, out)
    with stream:  # CuPy's current stream
        add_kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n))
        add_kernel.synchronize()
    _check_add(x, y, out, n)
    _poison(cp, out)
    add_kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n), stream=stream.ptr)
    stream.synchronize()
    _check_add(x, y, out, n)
    # a thread that has never touched CUDA has no current context until CuPy makes one
    _poison(cp, out)
    errors = []

    def launch_in_thread():
        try:
            add_kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n))
            add_kernel.synchronize()
        except Exception as error:  # re-raised below in the test's thread
            errors.append(error)

    thread = threading.Thread(target=launch_in_thread)
    thread.start()
    thread.join()
    assert not errors
    _check_add(x, y, out, n)


def test_empty_grid_launches_nothing(cp, add_kernel):
    n = 256
    _, _, x_gpu, y_gpu, out = _inputs(cp, n, seed=5)
    add_kernel.launch((0,), (x_gpu, y_gpu, out, n))
    add_kernel.launch((2, 0, 1), (x_gpu, y_gpu, out, n))
    add_kernel.synchronize()
    assert np.isnan(out.get()).all()


def test_errors_before_launch(cp, add_kernel):
    n = 256
    x, _, x_gpu, y_gpu, out = _inputs(cp, n, seed=6)
    with pytest.raises(LaunchError, match="'y_ptr' of add_f32 is a host array"):
        add_kernel.launch((2,), (x_gpu, x, out, n))
    with pytest.raises(LaunchError, match="over the device's limit"):
        add_kernel.launch((1, 70000), (x_gpu, y_gpu, out, n))
    add_kernel.synchronize()
    assert np.isnan(out.get()).all()


def test_dynamic_shared_memory_above_48kb(cp):
    shared = 100 * 1024
    threads = 256
    kernel = CudaKernel(
        ROTATE_PTX,
        "rotate_f32",
        num_warps=threads // 32,
        shared=shared,
        param_kinds=["*fp32", "*fp32", "u32"],
    )
    blocks = 7
    x = np.random.default_rng(7).standard_normal(blocks * threads).astype(np.float32)
    out = cp.full(x.size, np.nan, dtype=cp.float32)
    offset = shared - 4 * threads  # the top of the 100 KB: only there with the opt-in
    kernel.launch((blocks,), (cp.asarray(x), out, offset))
    kernel.synchronize()
    expected = np.roll(x.reshape(blocks, threads), -1, axis=1).reshape(-1)
    np.testing.assert_array_equal(out.get(), expected)


def test_resource_limits_raise_out_of_resources():
    limit = device_properties().max_shared_per_block_optin
    with pytest.raises(OutOfResources, match="shared memory of rotate_f32"):
        CudaKernel(ROTATE_PTX, "rotate_f32", num_warps=4, shared=limit + 1024)
    with pytest.raises(OutOfResources, match="threads per block of add_f32"):
        CudaKernel(ADD_PTX, "add_f32", num_warps=64, shared=0)


def test_bad_ptx_is_a_launch_error():
    with pytest.raises(LaunchError, match="loading the PTX of kernel add_f32 failed"):
        CudaKernel(ADD_PTX.replace("add.f32 %f3", "add.f99 %f3"), "add_f32", num_warps=4, shared=0)
    with pytest.raises(LaunchError, match="loading the PTX of kernel missing failed"):
        CudaKernel(ADD_PTX, "missing", num_warps=4, shared=0)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_cubin_is_loaded_instead_of_ptx(cp, tmp_path):
    source = tmp_path / "add.ptx"
    source.write_text(ADD_PTX)
    arch = device_properties().arch
    subprocess.run(
        ["ptxas", f"-arch={arch}", str(source), "-o", str(tmp_path / "add.cubin")], check=True
    )
    cubin = (tmp_path / "add.cubin").read_bytes()
    kernel = CudaKernel(
        "not PTX at all", "add_f32", num_warps=4, shared=0, cubin=cubin, param_kinds=ADD_KINDS
    )
    n = 999
    x, y, x_gpu, y_gpu, out = _inputs(cp, n, seed=8)
    kernel.launch(((n + 127) // 128,), (x_gpu, y_gpu, out, n))
    kernel.synchronize()
    _check_add(x, y, out, n)


def test_device_properties_are_sane():
    props = device_properties()
    assert props.arch.startswith("sm_") and props.major >= 7
    assert props.sm_count > 0 and props.max_threads_per_block >= 1024
    assert props.max_shared_per_block_optin >= props.max_shared_per_block >= 48 * 1024
    assert props.max_grid[0] >= 2**31 - 1 and props.l2_size > 0
    assert 1e11 < props.dram_bandwidth < 2e13


def test_do_bench_times_the_gpu(cp, add_kernel):
    from tileworkbench.runtime.testing import do_bench

    n = 1 << 24
    _, _, x_gpu, y_gpu, out = _inputs(cp, n, seed=9)
    grid = ((n + 127) // 128,)
    ms = do_bench(
        lambda: add_kernel.launch(grid, (x_gpu, y_gpu, out, n)), timer="cuda", return_mode="median"
    )
    bandwidth = 3 * 4 * n / (ms * 1e-3)
    print(f"vector add 2^24 fp32: {ms * 1e3:.1f} us, {bandwidth / 1e12:.2f} TB/s")
    assert 1e10 < bandwidth < 1.5 * device_properties().dram_bandwidth


def test_warm_launch_overhead(cp, add_kernel):
    n = 1024
    _, _, x_gpu, y_gpu, out = _inputs(cp, n, seed=10)
    args = (x_gpu, y_gpu, out, n)
    samples = []
    # bursts short enough that the launch queue never fills: this times the host side only
    for _ in range(50):
        add_kernel.synchronize()
        begin = time.perf_counter()
        for _ in range(100):
            add_kernel.launch((8, 1, 1), args)
        samples.append((time.perf_counter() - begin) / 100 * 1e6)
    add_kernel.synchronize()
    per_launch_us = sorted(samples)[len(samples) // 2]
    print(f"warm CudaKernel.launch: {per_launch_us:.2f} us (median of bursts)")
    assert per_launch_us < 50  # the target is <= 8 us; this only catches gross regressions
