"""Argument checks, packing (CuPy form and the driver's parameter block) and grid checks of the
CUDA launcher, on fake GPU arrays: no CuPy or GPU needed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tileworkbench.errors import LaunchError
from tileworkbench.cuda import arguments
from tileworkbench.cuda.arguments import ParamBuffer
from tileworkbench.cuda.launcher import check_grid, make_arg_packer, normalize_kind


class FakeDeviceArray:
    """Exposes __cuda_array_interface__ as CuPy, Numba and PyTorch CUDA arrays do."""

    def __init__(self, pointer: int, shape=(16,), typestr="<f4"):
        self.__cuda_array_interface__ = {
            "data": (pointer, False),
            "shape": shape,
            "typestr": typestr,
            "version": 3,
        }


class FakeTorchDevice:
    def __init__(self, index: int):
        self.index = index


class FakeCudaTensor(FakeDeviceArray):
    """Like a torch CUDA tensor: its device index is known without asking the driver."""

    def __init__(self, pointer: int, device: int):
        super().__init__(pointer)
        self.device = FakeTorchDevice(device)


class FakeHostDLPack:
    """A CPU array known only through DLPack (and __array__), like a CPU JAX array."""

    def __dlpack__(self, stream=None):
        raise AssertionError("a host array must be refused before it is exported")

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __array__(self):
        return np.zeros(4)


def _pointer(rng) -> int:
    return int(rng.integers(1, 2**47)) * 256


def test_pointers_scalars_and_widths():
    rng = np.random.default_rng(0)
    x, y = _pointer(rng), _pointer(rng)
    pack = make_arg_packer(
        ["*fp32", "*fp16", "i32", "i64", "u32", "fp32", "fp64", "i1", "fp16"],
        ["x_ptr", "y_ptr", "n", "big", "mask", "scale", "eps", "flag", "half"],
        "mixed_kernel",
    )
    n = int(rng.integers(1, 2**31 - 1))
    big = int(rng.integers(2**40, 2**62))
    scale = float(rng.standard_normal())
    packed = pack(
        (
            FakeDeviceArray(x),
            FakeDeviceArray(y, typestr="<f2"),
            n,
            big,
            2**32 - 1,
            scale,
            1e-300,
            True,
            0.5,
        )
    )
    expected_types = [
        np.uint64,
        np.uint64,
        np.int32,
        np.int64,
        np.uint32,
        np.float32,
        np.float64,
        np.bool_,
        np.float16,
    ]
    assert [type(value) for value in packed] == expected_types
    assert [int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3])] == [x, y, n, big]
    assert int(packed[4]) == 2**32 - 1
    assert packed[5] == np.float32(scale)
    assert packed[6] == 1e-300 and packed[7] and packed[8] == 0.5


def test_numpy_scalars_and_null_pointer():
    pack = make_arg_packer(["*fp32", "i32", "f32"], ["x_ptr", "n", "alpha"], "k")
    packed = pack((None, np.int64(7), np.float64(2.5)))
    assert packed == [np.uint64(0), np.int32(7), np.float32(2.5)]
    assert type(packed[1]) is np.int32 and type(packed[2]) is np.float32


def test_bf16_scalar_is_passed_as_its_bits():
    pack = make_arg_packer(["bf16"], ["alpha"], "k")
    value = float(np.random.default_rng(1).standard_normal())
    (bits,) = pack((value,))
    assert type(bits) is np.uint16
    expected = np.asarray(value, dtype=ml_dtypes.bfloat16).view(np.uint16)
    assert int(bits) == int(expected)
    assert int(pack((1.0,))[0]) == 0x3F80
    fp8 = make_arg_packer(["fp8e4nv", "fp8e5"], ["a", "b"], "k")
    assert [int(bits) for bits in fp8((1.0, -2.0))] == [0x38, 0xC0]


def test_host_numpy_array_is_refused_with_a_hint():
    pack = make_arg_packer(["*fp32", "*fp32", "i32"], ["x_ptr", "y_ptr", "n"], "add_kernel")
    host = np.random.default_rng(2).standard_normal(8).astype(np.float32)
    with pytest.raises(LaunchError) as info:
        pack((host, FakeDeviceArray(4096), 8))
    assert str(info.value) == (
        "argument 'x_ptr' of add_kernel is a host array (numpy.ndarray); "
        "move it to the GPU with cupy.asarray"
    )


def test_host_dlpack_array_and_non_arrays_are_refused():
    pack = make_arg_packer(["*fp32"], ["out_ptr"], "k")
    with pytest.raises(LaunchError, match="'out_ptr' of k is a host array"):
        pack((FakeHostDLPack(),))
    with pytest.raises(LaunchError, match="'out_ptr' of k is a pointer parameter.*builtins.int"):
        pack((12345,))


def test_torch_cpu_tensor_message():
    torch_cpu = type("Tensor", (), {"__module__": "torch", "__array__": lambda self: None})
    pack = make_arg_packer(["*fp32"], ["x_ptr"], "k")
    with pytest.raises(LaunchError, match=r"torch.Tensor on the CPU\); move it to the GPU"):
        pack((torch_cpu(),))


@pytest.mark.parametrize(
    "kind, value, fragment",
    [
        ("i32", 2**31, "has kind i32; got 2147483648 (int)"),
        ("i32", 1.5, "got 1.5 (float)"),
        ("u32", -1, "has kind u32; got -1"),
        ("i64", np.float32(3.0), "has kind i64"),
        ("fp32", "1.0x", "has kind fp32"),
        ("i8", 200, "has kind i8"),
    ],
)
def test_scalars_that_do_not_fit_are_refused(kind, value, fragment):
    pack = make_arg_packer([kind], ["s"], "scalar_kernel")
    with pytest.raises(LaunchError, match="argument 's' of scalar_kernel") as info:
        pack((value,))
    assert fragment in str(info.value)


def test_wrong_argument_count():
    pack = make_arg_packer(["*fp32", "i32"], ["x_ptr", "n"], "k")
    with pytest.raises(LaunchError, match=r"k takes 2 arguments \(x_ptr, n\); got 3"):
        pack((FakeDeviceArray(256), 1, 2))


def test_unknown_kind_and_name_mismatch():
    with pytest.raises(ValueError, match="unknown parameter kind 'f128'"):
        make_arg_packer(["f128"], ["x"], "k")
    with pytest.raises(ValueError, match="2 parameter kinds but 1 names"):
        make_arg_packer(["i32", "i32"], ["x"], "k")


def test_kind_aliases():
    assert normalize_kind("*f16") == "*fp16"
    assert normalize_kind("f32") == "fp32"
    assert normalize_kind("i32") == "i32"


def test_array_on_another_device_is_refused():
    pack = make_arg_packer(["*fp32", "*fp32"], ["x_ptr", "y_ptr"], "k", device_id=0)
    assert int(pack((FakeCudaTensor(512, 0), FakeCudaTensor(1024, 0)))[1]) == 1024
    with pytest.raises(LaunchError, match="'y_ptr' of k is on device 1.*device 0"):
        pack((FakeCudaTensor(512, 0), FakeCudaTensor(1024, 1)))


def test_device_of_a_generic_array_is_asked_of_the_driver(monkeypatch):
    monkeypatch.setattr(arguments, "_device_of_pointer", lambda pointer: 3 if pointer > 1000 else 0)
    pack = make_arg_packer(["*fp32"], ["x_ptr"], "k", device_id=0)
    assert int(pack((FakeDeviceArray(512),))[0]) == 512
    with pytest.raises(LaunchError, match="on device 3"):
        pack((FakeDeviceArray(4096),))


@pytest.mark.parametrize(
    "grid, expected",
    [
        ((7,), (7, 1, 1)),
        ((3, 5), (3, 5, 1)),
        ((2**31 - 1, 65535, 65535), (2**31 - 1, 65535, 65535)),
        ((np.int64(4), np.int32(2), 1), (4, 2, 1)),
        (9, (9, 1, 1)),
        ((0,), None),
        ((5, 0, 2), None),
    ],
)
def test_valid_grids(grid, expected):
    result = check_grid(grid, "k")
    assert result == expected
    if result is not None:
        assert all(type(value) is int for value in result)


@pytest.mark.parametrize(
    "grid, message",
    [
        ((2**31,), r"grid \(2147483648, 1, 1\) of k is over the device's limit"),
        ((1, 65536), "over the device's limit"),
        ((1, 1, 70000), "over the device's limit"),
        ((-1,), "negative dimension"),
        ((0, -2), "negative dimension"),
        ((2.0,), "must hold integers"),
        ((1, 2, 3, 4), "1 to 3 dimensions"),
        ((), "1 to 3 dimensions"),
    ],
)
def test_invalid_grids(grid, message):
    with pytest.raises(LaunchError, match=message):
        check_grid(grid, "k")


def test_grid_limits_of_the_device_are_used():
    assert check_grid((100, 1, 1), "k", max_grid=(128, 8, 8)) == (100, 1, 1)
    with pytest.raises(LaunchError, match=r"limit \(128, 8, 8\)"):
        check_grid((129,), "k", max_grid=(128, 8, 8))


def test_param_buffer_slots_hold_the_values():
    import ctypes

    rng = np.random.default_rng(11)
    x = _pointer(rng)
    n = int(rng.integers(-(2**31), 2**31 - 1))
    scale = float(rng.standard_normal())
    kinds = ["*fp32", "i32", "fp32", "i1", "u64", "fp16", "bf16", "fp64", "i8"]
    buffer = ParamBuffer(kinds, [f"p{i}" for i in range(len(kinds))], "k")
    buffer.fill((FakeDeviceArray(x), n, scale, True, 2**64 - 1, 0.5, 1.0, scale, -7))
    slots = (ctypes.c_void_p * len(kinds)).from_address(buffer.params_address)
    assert [slots[i] - slots[0] for i in range(len(kinds))] == [8 * i for i in range(len(kinds))]

    def read(index, ctype):
        return ctype.from_address(slots[index]).value

    assert read(0, ctypes.c_uint64) == x and read(1, ctypes.c_int32) == n
    assert read(2, ctypes.c_float) == pytest.approx(scale, rel=2**-23)
    assert read(3, ctypes.c_bool) is True and read(4, ctypes.c_uint64) == 2**64 - 1
    assert read(5, ctypes.c_uint16) == 0x3800  # 0.5 in IEEE half
    assert read(6, ctypes.c_uint16) == 0x3F80  # 1.0 in bfloat16
    assert read(7, ctypes.c_double) == scale and read(8, ctypes.c_int8) == -7
    # refilled in place: the same addresses see the next call's values
    buffer.fill((None, 5, 0.0, False, 0, 0.0, 0.0, 0.0, 0))
    assert read(0, ctypes.c_uint64) == 0 and read(1, ctypes.c_int32) == 5


@pytest.mark.parametrize(
    "args, message",
    [
        ((np.ones(4, np.float32), 1, 1.0), "'x_ptr' of add_kernel is a host array"),
        ((None, 2**31, 1.0), "'n' of add_kernel has kind i32; got 2147483648"),
        ((None, 1.5, 1.0), "'n' of add_kernel has kind i32; got 1.5"),
        ((None, 1, "one"), "'alpha' of add_kernel has kind fp32; got 'one'"),
        ((None, 1, 1e39), "'alpha' of add_kernel has kind fp32; got 1e\\+39: float too large"),
        ((None, 1), r"add_kernel takes 3 arguments \(x_ptr, n, alpha\); got 2"),
    ],
)
def test_param_buffer_errors_name_the_argument(args, message):
    buffer = ParamBuffer(["*fp32", "i32", "fp32"], ["x_ptr", "n", "alpha"], "add_kernel")
    with pytest.raises(LaunchError, match=message):
        buffer.fill(args)


def test_param_buffer_without_parameters():
    buffer = ParamBuffer([], [], "k")
    buffer.fill(())
    assert buffer.params_address == 0
