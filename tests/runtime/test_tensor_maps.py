"""Host descriptors and TMA tensor maps in the runtime, without a GPU: which descriptors specialize as
TMA-able (`tma_rules.host_fits`), the 128-byte parameter slot, the flat parameters of a kernel that
takes a map, and the errors for what TMA cannot take (never a device fault)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from test_launcher_args import FakeDeviceArray

from tileworkbench.errors import LaunchError
from tileworkbench.frontend import ArgSpec
from tileworkbench.frontend.descriptor_args import expand_arg, flatten_descriptor, takes_tensor_map
from tileworkbench.tma_rules import (
    box_fits,
    host_fits,
    inner_offset_aligned,
    swizzle_bytes,
    tma_box,
)
from tileworkbench.runtime import tensor_map as tensor_map_module
from tileworkbench.cuda.arguments import ParamBuffer
from tileworkbench.runtime import specialize
from tileworkbench.tools.tensor_descriptor import TensorDescriptor


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is on by default; these tests need it whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


class FakeGpuTensor(FakeDeviceArray):
    """A 2-D GPU array of fp16 at `pointer`, with row stride `row` elements."""

    def __init__(self, pointer: int, shape, row: int):
        super().__init__(pointer, shape, "<f2")
        self.__cuda_array_interface__["strides"] = (2 * row, 2)
        self.shape, self.strides, self.itemsize = shape, (2 * row, 2), 2
        self.dtype = np.dtype(np.float16)


def test_tma_rules():
    assert host_fits(0x1000, [300, 200], [200, 1], 2)  # 400-byte rows
    assert not host_fits(0x1008, [300, 200], [200, 1], 2)  # base off 16 bytes
    assert not host_fits(0x1000, [77, 45], [45, 1], 4)  # 180-byte rows
    assert not host_fits(0x1000, [2**32, 8], [8, 1], 2)  # a dimension of 2^32 elements
    # the H200's stray writes: 45 fp32 columns (180 bytes) at a stride of 48 -> pointer path
    assert not host_fits(0x1000, [77, 45], [48, 1], 4) and host_fits(0x1000, [77, 44], [48, 1], 4)
    assert box_fits((64, 64), 2) and box_fits((16, 128), 2) and not box_fits((512, 64), 2)
    assert not box_fits((16, 2), 4) and not box_fits((4, 4, 4), 4) and not box_fits((64,), 4)
    assert box_fits((64, 16), 4) and box_fits((64, 8), 4) and box_fits((8, 32), 4)
    assert [swizzle_bytes((8, c), 4) for c in (4, 8, 16, 24, 32, 64)] == [0, 32, 64, 0, 128, 128]
    assert swizzle_bytes((4, 32), 4) == 0  # fewer than 8 rows: the pattern would not repeat whole
    assert tma_box((64, 128), 2) == (64, 128) and tma_box((16, 16), 4) == (16, 64)


def test_inner_offset_alignment_rule():
    assert inner_offset_aligned(4, 4) and inner_offset_aligned(8, 2) and inner_offset_aligned(16, 1)
    assert not inner_offset_aligned(5, 4) and not inner_offset_aligned(4, 2)


def test_descriptor_key_says_whether_tma_can_take_it(monkeypatch):
    monkeypatch.setattr(specialize, "array_address", lambda base: ("fp16", base.address))

    def fits(descriptor) -> bool:
        return specialize.arg_spec("d", specialize.key_part(descriptor)).divisible_16

    good = TensorDescriptor(_Base(0x10000), [300, 200], [200, 1], [64, 64])
    assert specialize.key_part(good) == "tensordesc<fp16,64x64,zero>:16"
    padded = TensorDescriptor(_Base(0x10000), [300, 96], [104, 1], [64, 64])
    assert fits(padded) is True  # 208-byte rows
    padded.strides = [101, 1]
    assert fits(padded) is False  # 202-byte rows
    padded.strides, padded.shape = [104, 1], [300, 100]
    assert fits(padded) is False  # a 200-byte extent: a TMA store would write past it
    # a misaligned base (the H200 test's slice 4 bytes in): that descriptor keeps the pointer path
    assert fits(TensorDescriptor(_Base(0x10004), [8, 8], [8, 1], [8, 8])) is False


class _Base:
    def __init__(self, address: int):
        self.address = address


@pytest.mark.parametrize("tma, fits, count", [(True, True, 5), (False, True, 4), (True, False, 4)])
def test_flat_parameters(tma, fits, count):
    arg = ArgSpec("a", "tensordesc<fp16,64x64,zero>", fits)
    parts = expand_arg(arg, tma)
    assert len(parts) == count
    assert [p.name for p in parts][:4] == ["a", "a.shape0", "a.shape1", "a.stride0"]
    if count == 5:
        assert parts[-1] == ArgSpec("a.tensormap", "tensormap")
    assert not takes_tensor_map(ArgSpec("a", "tensordesc<fp8e5,64x64,nan>", True))
    assert takes_tensor_map(ArgSpec("a", "tensordesc<bf16,64x64,nan>", True))


def test_a_tensor_map_takes_a_128_byte_slot():
    rng = np.random.default_rng(5)
    tmap = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
    buffer = ParamBuffer(["*fp16", "i64", "tensormap", "i32"], ["a", "a.shape0", "a.tensormap", "n"],
                         "k")
    buffer.fill((FakeDeviceArray(0x2000), 300, tmap, 7))
    slots = (ctypes.c_void_p * 4).from_address(buffer.params_address)
    assert [slots[i] - slots[0] for i in range(4)] == [0, 8, 16, 144]
    assert ctypes.string_at(slots[2], 128) == tmap
    assert ctypes.c_int32.from_address(slots[3]).value == 7
    with pytest.raises(LaunchError, match="'a.tensormap' of k is a 128-byte CUtensorMap"):
        buffer.fill((FakeDeviceArray(0x2000), 300, tmap[:64], 7))


def test_tensor_map_encoding_arguments(monkeypatch):
    """What reaches cuTensorMapEncodeTiled: dims innermost first, byte strides, box, swizzle, fill."""
    calls = []

    def as_list(pointer, n, ctype):
        return list((ctype * n).from_address(ctypes.cast(pointer, ctypes.c_void_p).value))

    def fake_encode(out, data_type, rank, address, dims, strides, box, element_strides, interleave,
                    swizzle, l2, fill):
        calls.append((data_type, rank, address.value, as_list(dims, rank, ctypes.c_uint64),
                      as_list(strides, rank - 1, ctypes.c_uint64), as_list(box, rank, ctypes.c_uint32),
                      swizzle, fill))
        ctypes.memset(out, 0xAB, 128)
        return 0

    monkeypatch.setattr(tensor_map_module, "_encoder", lambda: fake_encode)
    tensor_map_module._CACHE.clear()
    desc = TensorDescriptor(FakeGpuTensor(0x40000, (300, 200), 208), [300, 200], [208, 1], [64, 64],
                            "nan")
    encoded = tensor_map_module.tensor_map(desc, "fp16", "a", "k")
    assert encoded == b"\xab" * 128
    assert calls == [(6, 2, 0x40000, [200, 300], [416], [64, 64], 3, 1)]
    assert tensor_map_module.tensor_map(desc, "fp16", "a", "k") == encoded and len(calls) == 1
    parts = flatten_descriptor(desc, lambda v: tensor_map_module.tensor_map(v, "fp16", "a", "k"))
    assert parts[1:] == [300, 200, 208, encoded]


def test_tensor_maps_refuse_what_tma_cannot_take():
    tensor_map_module._CACHE.clear()
    host = np.zeros((16, 16), np.float16)
    with pytest.raises(LaunchError, match="host array"):
        tensor_map_module.tensor_map(TensorDescriptor.from_tensor(host, [16, 16]), "fp16")
    odd = TensorDescriptor(FakeGpuTensor(0x40000, (16, 15), 15), [16, 15], [15, 1], [16, 16])
    with pytest.raises(LaunchError, match="multiples of 16 bytes"):
        tensor_map_module.tensor_map(odd, "fp16", "a", "k")


def test_tma_is_on_unless_switched_off(monkeypatch):
    from tileworkbench.backends import backend_for
    from tileworkbench.config import Config, config

    monkeypatch.delenv("TILEWORKBENCH_TMA", raising=False)
    assert Config().tma
    for off in ("0", "false", "off"):
        monkeypatch.setenv("TILEWORKBENCH_TMA", off)
        assert not Config().tma
    monkeypatch.setattr(config, "tma", False)
    assert not backend_for("sm_90a").has_tma("sm_90a")
    monkeypatch.setattr(config, "tma", True)
    assert backend_for("sm_90a").has_tma("sm_90a") and not backend_for("sm_80").has_tma("sm_80")
