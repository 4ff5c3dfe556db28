"""Host arrays staged through the GPU (backends/nvptx/staging.py, the tests' cuda target), with a
stand-in for CuPy whose "device" memory is host memory: each argument's memory is copied over and
back, and arguments that alias one memory (the same array passed twice) share one device copy, so a
kernel's write through either reaches the host (on the H200 the second copy's poison overwrote
it)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from tileworkbench.backends.nvptx.staging import StagingLauncher


class _Pointer:
    def __init__(self, buffer: np.ndarray, offset: int = 0):
        self.buffer, self.offset = buffer, offset

    def __add__(self, offset: int) -> _Pointer:
        return _Pointer(self.buffer, self.offset + offset)


class _DeviceArray:
    def __init__(self, host: np.ndarray):
        self.memory = host.copy()  # the "device" copy
        self.data = _Pointer(self.memory)

    def get(self) -> np.ndarray:
        return self.memory.copy()


def _view(shape, dtype, memptr, strides):
    return np.ndarray(shape, dtype, buffer=memptr.buffer, offset=memptr.offset, strides=strides)


@pytest.fixture
def fake_cupy(monkeypatch):
    module = types.SimpleNamespace(asarray=_DeviceArray, ndarray=_view)
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


class _CopyKernel:
    """Writes its first argument into its second (a device kernel's `out[:] = x`)."""

    num_regs = 0

    def __init__(self):
        self.seen = []

    def launch(self, grid, args, stream=None) -> None:
        self.seen = args
        args[1][...] = args[0]

    def synchronize(self, stream=None) -> None:
        pass


def test_arguments_aliasing_one_memory_share_its_device_copy(fake_cupy):
    x, out = np.arange(8, dtype=np.float32) + 1, np.full(8, np.nan, np.float32)
    kernel = _CopyKernel()
    StagingLauncher(kernel).launch((1, 1, 1), [x, out, out])
    np.testing.assert_array_equal(out, x)
    assert kernel.seen[1].base is kernel.seen[2].base  # one device memory behind both
    assert x.base is None and not np.shares_memory(kernel.seen[0], x)  # a copy went over


def test_a_strided_view_travels_with_the_memory_it_views(fake_cupy):
    whole = np.zeros(16, np.float32)
    evens = whole[::2]
    StagingLauncher(_CopyKernel()).launch((1, 1, 1), [np.arange(8, dtype=np.float32) + 1, evens])
    want = np.zeros(16, np.float32)
    want[::2] = np.arange(8) + 1
    np.testing.assert_array_equal(whole, want)


def test_read_only_arrays_are_not_copied_back(fake_cupy):
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False

    class Scribbler(_CopyKernel):
        def launch(self, grid, args, stream=None) -> None:
            args[0][...] = -1  # the device copy of a read-only array may be scratched

    StagingLauncher(Scribbler()).launch((1, 1, 1), [x, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(x, np.arange(8))
