"""Debug mode through the real launcher, on every target (`target`: the interpreter, the cpu target
(the GPU's checks compiled for the host, their record in host memory), and marked `gpu` the GPU with
CuPy arrays): `debug=True`, `@jit(debug=True)` and TILEWORKBENCH_DEBUG=1 make a bad load, store
or atomic raise the interpreter's error (kernel, line, argument, element offset, program id), a failed
device_assert raise with its message and line, and masked kernels in bounds run cleanly."""

from __future__ import annotations


import numpy as np
import pytest

from debug_kernels import (histogram_kernel, masked_add_kernel, positive_kernel, rows_kernel,  # noqa: E402
                           shifted_copy_kernel, where)

import tileworkbench as tw  # noqa: E402
from tileworkbench.config import config  # noqa: E402
from tileworkbench.errors import InterpreterError, OutOfBoundsError  # noqa: E402


RNG = np.random.default_rng(1414)
BLOCK = 32


def randn(n: int) -> np.ndarray:
    return RNG.standard_normal(n).astype(np.float32)


def first_line(info) -> str:
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("shift, offset, pid", [(1, 4 * BLOCK, (3, 0, 0)), (-1, -1, (0, 0, 0))])
def test_out_of_bounds_load(target, shift, offset, pid):
    x, out = target.put(randn(4 * BLOCK)), target.put(np.full(4 * BLOCK, np.nan, np.float32))
    with pytest.raises(OutOfBoundsError) as info:
        shifted_copy_kernel[(4,)](x, out, shift, BLOCK=BLOCK, debug=True)
    message = str(info.value)
    assert first_line(info).startswith("out-of-bounds load in kernel 'shifted_copy_kernel' at ")
    assert where("BAD LOAD") in first_line(info)
    assert f"argument 'x_ptr' (float32[{4 * BLOCK}]) accessed at element offset {offset} " in message
    assert f"program id {pid}" in message


def test_out_of_bounds_store_never_writes(target):
    x = randn(4 * BLOCK)
    memory = target.put(np.full(4 * BLOCK, np.nan, np.float32))
    out = memory[: 4 * BLOCK - 1]
    with pytest.raises(OutOfBoundsError) as info:
        shifted_copy_kernel[(4,)](target.put(x), out, 0, BLOCK=BLOCK, debug=True)
    assert where("BAD STORE") in first_line(info)
    assert f"argument 'out_ptr' (float32[{4 * BLOCK - 1}]) accessed at element offset {4 * BLOCK - 1} " \
        in str(info.value) and "program id (3, 0, 0)" in str(info.value)
    host = target.get(memory)
    assert np.isnan(host[-1])  # the element past `out` was not written
    np.testing.assert_array_equal(host[: 3 * BLOCK], x[: 3 * BLOCK])  # the good programs ran


def test_out_of_bounds_atomic(target):
    bins, n = 16, 4 * BLOCK - 9
    idx = RNG.integers(0, bins, n).astype(np.int32)
    idx[2 * BLOCK + 3] = bins + 5
    with pytest.raises(OutOfBoundsError) as info:
        histogram_kernel[(4,)](target.put(idx), target.put(np.zeros(bins, np.int32)), n, BLOCK=BLOCK,
                               debug=True)
    assert where("BAD ATOMIC") in first_line(info)
    assert f"argument 'counts_ptr' (int32[{bins}]) accessed at element offset {bins + 5} " in str(info.value)
    assert "program id (2, 0, 0)" in str(info.value)


def test_two_dimensional_grid(target):
    rows, cols = 5, 48
    x, out = target.put(randn(rows * cols)), target.put(np.full(rows * cols - 1, np.nan, np.float32))
    with pytest.raises(OutOfBoundsError) as info:
        rows_kernel[(2, rows)](x, out, cols, BLOCK=BLOCK, debug=True)
    assert where("BAD ROW STORE") in first_line(info)
    assert f"element offset {rows * cols - 1} " in str(info.value)
    assert f"program id (1, {rows - 1}, 0)" in str(info.value)


def test_masked_kernels_in_bounds_pass_and_the_kernel_recovers(target):
    n = 4 * BLOCK - 7
    x, y = randn(n), randn(n)
    out = target.put(np.full(n, np.nan, np.float32))
    masked_add_kernel[(4,)](target.put(x), target.put(y), out, n, BLOCK=BLOCK, debug=True)
    np.testing.assert_allclose(target.get(out), x.astype(np.float64) + y, rtol=1e-6)
    idx = RNG.integers(0, 8, n).astype(np.int32)
    idx[5] = 9
    counts = target.put(np.zeros(8, np.int32))
    with pytest.raises(OutOfBoundsError):
        histogram_kernel[(4,)](target.put(idx), counts, n, BLOCK=BLOCK, debug=True)
    idx[5] = 7
    counts = target.put(np.zeros(8, np.int32))
    histogram_kernel[(4,)](target.put(idx), counts, n, BLOCK=BLOCK, debug=True)  # no stale error
    np.testing.assert_array_equal(target.get(counts), np.bincount(idx, minlength=8))


def test_device_assert(target):
    x = np.abs(randn(4 * BLOCK)) + 0.5
    positive_kernel[(4,)](target.put(x), BLOCK=BLOCK, debug=True)
    x[2 * BLOCK + 9] = -3.0
    positive_kernel[(4,)](target.put(x), BLOCK=BLOCK)  # compiled out without debug (as Triton)
    with pytest.raises(InterpreterError) as info:
        positive_kernel[(4,)](target.put(x), BLOCK=BLOCK, debug=True)
    assert first_line(info).startswith("device_assert failed: x must be positive in kernel 'positive_kernel'")
    assert where("ASSERT") in first_line(info)
    assert "program id (2, 0, 0)" in str(info.value) and "failing index (9,)" in str(info.value)


def test_misaligned_load(target):
    from debug_kernels import misaligned_kernel

    data = randn(BLOCK + 1)
    raw, out = target.put(data.view(np.uint8)), target.put(np.full(BLOCK, np.nan, np.float32))
    misaligned_kernel[(1,)](raw, out, 4, BLOCK=BLOCK, debug=True)
    np.testing.assert_array_equal(target.get(out), data[1:])
    with pytest.raises(OutOfBoundsError) as info:
        misaligned_kernel[(1,)](raw, out, 2, BLOCK=BLOCK, debug=True)
    assert first_line(info).startswith("misaligned load in kernel 'misaligned_kernel' at ")
    assert where("MISALIGNED LOAD") in first_line(info)
    assert "not a multiple of the float32 element size 4" in str(info.value)


def test_decorator_and_environment_turn_debug_on(target, monkeypatch):
    x, out = target.put(randn(2 * BLOCK)), target.put(np.full(2 * BLOCK, np.nan, np.float32))
    decorated = tw.jit(debug=True)(shifted_copy_kernel.fn)
    with pytest.raises(OutOfBoundsError, match="element offset 64 "):
        decorated[(2,)](x, out, 1, BLOCK=BLOCK)
    for _ in range(2):  # in bounds and without debug: the warm path files the kernel
        shifted_copy_kernel[(2,)](x, out, 0, BLOCK=BLOCK)
    monkeypatch.setattr(config, "debug", True)  # TILEWORKBENCH_DEBUG=1
    with pytest.raises(OutOfBoundsError, match="element offset 64 "):
        shifted_copy_kernel[(2,)](x, out, 1, BLOCK=BLOCK)


# -- the launcher's debug path without a GPU: CudaKernel replaced by the CPU emulator ------------------
class _HostBuffer(np.ndarray):
    """The error buffer in host memory, with CuPy's `get` and `device`."""

    def get(self) -> np.ndarray:
        return np.array(self)

    @property
    def device(self):
        return self  # its `synchronize` has nothing to wait for

    def synchronize(self) -> None:
        pass


class _EmulatedCuda:
    """Stands in for launcher.CudaKernel: runs the kernel's debug-mode lowering on the CPU emulator with
    exactly the arguments the JIT passes (its own, then the hidden ranges and the error buffer)."""

    launches: list = []

    def __init__(self, ptx, name, *, num_warps, shared, cubin, param_kinds, param_names):
        self.param_kinds, self.param_names = param_kinds, param_names
        self.num_regs = None
        self.emulator = None
        self.synchronized = 0

    def launch(self, grid, args, stream=None):
        from cpu_emulator import _Block

        assert len(args) == len(self.param_kinds)
        values = [a.ctypes.data if isinstance(a, np.ndarray) else int(a) for a in args]
        grid = tuple(grid) + (1,) * (3 - len(grid))
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    self.emulator._program(_Block(self.emulator.threads, (x, y, z), grid), values)

    def synchronize(self, stream=None):
        self.synchronized += 1

    def fast_launch_ok(self):
        return False


def test_launcher_passes_hidden_arguments_and_raises_the_record(monkeypatch):
    from cpu_emulator import Emulator

    from tileworkbench.frontend import ArgSpec
    from tileworkbench.cuda import launcher
    from tileworkbench.runtime import binder, debug_checks

    monkeypatch.setattr(launcher, "CudaKernel", _EmulatedCuda)
    def host_buffer(checks, on_host=False):
        if checks._buffer is None:
            checks._buffer = np.zeros(checks.words, np.uint64).view(_HostBuffer)
        return checks._buffer

    monkeypatch.setattr(debug_checks.DebugChecks, "buffer", host_buffer)
    specs = [ArgSpec("x_ptr", "*fp32", True, False), ArgSpec("out_ptr", "*fp32", True, False),
             ArgSpec("shift", "i32", False, False)]
    compiled = tw.compile(shifted_copy_kernel, signature=specs, constexprs={"BLOCK": BLOCK}, target="sm_90",
                          num_warps=1, use_cache=False, debug=True)
    bound = binder.BoundKernel(compiled, specs, [])
    assert bound.cuda.param_kinds[3:] == ["u64"] * 4 + ["*u64"]
    assert bound.cuda.param_names[3:] == ["x_ptr.first_byte", "x_ptr.end_byte", "out_ptr.first_byte",
                                          "out_ptr.end_byte", "debug.error_buffer"]
    bound.cuda.emulator = Emulator.from_func(compiled.ir, num_warps=1, debug=True)
    x = randn(2 * BLOCK)
    memory = np.full(2 * BLOCK + 1, np.nan, np.float32)
    out = memory[1:]  # a view: its range starts past the allocation's first element
    bound.launch((2, 1, 1), {"x_ptr": x, "out_ptr": out, "shift": 0})
    np.testing.assert_array_equal(out, x)
    backwards = memory[::-1][:-1]  # a negative stride: its bytes lie below its data pointer, and the
    # kernel runs upwards: every lane but the first is out of bounds, and one of them is reported
    with pytest.raises(OutOfBoundsError, match="'out_ptr' .* element offset ([1-9]|[1-5][0-9]|6[0-3]) "):
        bound.launch((2, 1, 1), {"x_ptr": x, "out_ptr": backwards, "shift": 0})
    assert backwards[0] == x[0]
    with pytest.raises(OutOfBoundsError) as info:
        bound.launch((2, 1, 1), {"x_ptr": x, "out_ptr": out, "shift": 1})
    assert where("BAD LOAD") in first_line(info) and "element offset 64 " in str(info.value)
    assert bound.cuda.synchronized == 3 and not bound.checks._buffer.any()  # reset after reporting
    bound.launch((2, 1, 1), {"x_ptr": x, "out_ptr": out, "shift": 0})  # and the next launch is clean


def test_array_byte_range_follows_strides():
    from tileworkbench.runtime.debug_checks import array_byte_range

    base = np.zeros((4, 6), np.float32)
    start = base.ctypes.data
    assert array_byte_range(base) == (start, start + base.nbytes)
    assert array_byte_range(base[:, ::-2]) == (start + 4, start + 3 * 24 + 5 * 4 + 4)
    assert array_byte_range(base[::-1]) == (start, start + base.nbytes)
    assert array_byte_range(base[:0]) == (start, start)


def test_an_unchecked_access_is_noted_when_the_kernel_loads(monkeypatch):
    from debug_kernels import int_pointer_kernel

    from tileworkbench.runtime.debug_checks import DebugChecks, DebugModeWarning

    compiled = tw.compile(int_pointer_kernel, signature={"x_ptr": "*fp32:16", "out_ptr": "*fp32:16"},
                          constexprs={"BLOCK": BLOCK}, target="sm_90", use_cache=False, debug=True)
    with pytest.warns(DebugModeWarning, match="UNCHECKED LOAD|load not bounds-checked"):
        DebugChecks(compiled.metadata.debug_checks, compiled.name, ["x_ptr", "out_ptr"])


@pytest.mark.gpu
def test_torch_tensors_on_a_torch_stream(target):
    """The launch goes to torch's current stream; debug mode waits on that stream before reading."""
    if target != "cuda":
        pytest.skip("torch CUDA tensors need the GPU target")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA")
    x = torch.randn(2 * BLOCK, device="cuda")
    out = torch.full((2 * BLOCK,), float("nan"), device="cuda")
    with torch.cuda.stream(torch.cuda.Stream()):
        torch.cuda._sleep(10_000_000)  # keeps the stream busy, so reading too early would miss the record
        with pytest.raises(OutOfBoundsError, match="element offset 64 "):
            shifted_copy_kernel[(2,)](x, out, 1, BLOCK=BLOCK, debug=True)
        shifted_copy_kernel[(2,)](x, out, 0, BLOCK=BLOCK, debug=True)
    torch.testing.assert_close(out, x)
