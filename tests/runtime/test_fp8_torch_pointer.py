"""The device address of a torch CUDA tensor whose dtype has no `__cuda_array_interface__` (torch's
fp8 types raise there, and CuPy's DLPack refuses them: "Unsupported dtype. dtype code: 10") comes
from `data_ptr()`: tutorial 10's fp8 host descriptors on the TMA path failed on the H200 without it.
A stand-in object plays the tensor (no GPU here)."""

from __future__ import annotations

from types import SimpleNamespace

from tileworkbench.cuda.arguments import pointer_value


class Float8CudaTensor:
    is_cuda = True
    device = SimpleNamespace(index=0)

    @property
    def __cuda_array_interface__(self):
        raise TypeError("float8_e4m3fn has no __cuda_array_interface__")  # as torch raises

    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("DLPack must not be reached")

    def data_ptr(self) -> int:
        return 0x7F00_0000_1000


def test_fp8_cuda_tensor_address_comes_from_data_ptr():
    assert pointer_value(Float8CudaTensor(), "a_desc", "kernel", device_id=0) == 0x7F00_0000_1000
