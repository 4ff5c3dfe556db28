"""Host tensor descriptors as TMA tensor maps: the 128-byte `CUtensorMap` that `cuTensorMapEncodeTiled`
(libcuda, through ctypes) makes from a descriptor's base, shape, strides and block, for kernels that
copy its tiles with `cp.async.bulk.tensor` (sm_90+, backends/llvm/lowering/tma.py).

Dimensions go innermost first, strides in bytes without the innermost (1 element); the box is the block
shape, its rows cut to the swizzle's width where the kernel copies a block as several boxes, and the
swizzle is the one the kernel's shared tile has (both `tma_rules.tma_box`); positions outside the
tensor read as zeros, or NaN for padding "nan". Maps are cached per (address, geometry).
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

from ..dtypes import tma_element_code
from ..errors import LaunchError
from ..frontend.specialize import parse_type
from ..tma_rules import host_fits, tma_box
from ..cuda.arguments import pointer_value

TENSOR_MAP_BYTES = 128
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_NONE / 32B / 64B / 128B
_L2_PROMOTION_128B = 2
_OOB_FILL = {"zero": 0, "nan": 1}  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE / NAN_REQUEST_ZERO_FMA
_CACHE: dict[tuple, bytes] = {}
_CACHE_LIMIT = 1024


def element_bytes(kind: str) -> int:
    """Bytes per element of a dtype name ("fp16" -> 2)."""
    return max(1, parse_type(kind).primitive_bitwidth // 8)


def descriptor_fits(kind: str, address: int, value: Any) -> bool:
    """Whether a host descriptor over an array of `kind` at `address` passes TMA's rules."""
    return host_fits(
        address, [int(s) for s in value.shape], [int(s) for s in value.strides], element_bytes(kind)
    )


def tensor_map(value: Any, kind: str, name: str = "desc", kernel: str = "kernel") -> bytes:
    """The encoded CUtensorMap of host descriptor `value` whose base holds `kind` elements.

    Raises:
        LaunchError: the base is not a GPU array, the tensor breaks TMA's rules, or the driver refuses.
    """
    address = pointer_value(value.base, name, kernel)
    shape = tuple(int(s) for s in value.shape)
    strides = tuple(int(s) for s in value.strides)
    block = tuple(int(b) for b in value.block_shape)
    padding = getattr(value, "padding", "zero")
    key = (address, shape, strides, block, padding, kind)
    encoded = _CACHE.get(key)
    if encoded is None:
        if not host_fits(address, shape, strides, element_bytes(kind)):
            raise LaunchError(
                f"argument {name!r} of {kernel}: TMA cannot take this descriptor (base "
                f"{address:#x}, shape {list(shape)}, strides {list(strides)}): the base "
                "every stride but the last and the innermost extent must be "
                "multiples of 16 bytes"
            )
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        encoded = _CACHE[key] = encode_tiled(address, shape, strides, block, kind, padding)
    return encoded


def encode_tiled(address: int, shape, strides, block, kind: str, padding: str) -> bytes:
    """`cuTensorMapEncodeTiled` for a row-major view (`shape`, `strides` in elements, outermost first)."""
    nbytes = element_bytes(kind)
    rank = len(shape)
    dims = (ctypes.c_uint64 * rank)(*reversed(shape))
    byte_strides = (ctypes.c_uint64 * max(rank - 1, 1))(
        *[s * nbytes for s in reversed(strides[:-1])]
    )
    inner, swizzle = tma_box(block, nbytes)
    box = (ctypes.c_uint32 * rank)(inner, *reversed(block[:-1]))
    element_strides = (ctypes.c_uint32 * rank)(*([1] * rank))
    out = (ctypes.c_uint8 * TENSOR_MAP_BYTES)()
    data_type = tma_element_code(kind, in_kernel=False)  # CUtensorMapDataType (dtypes.TABLE)
    result = _encoder()(
        out,
        data_type,
        rank,
        ctypes.c_void_p(address),
        dims,
        byte_strides,
        box,
        element_strides,
        0,
        _SWIZZLE[swizzle],
        _L2_PROMOTION_128B,
        _OOB_FILL[padding],
    )
    if result != 0:
        raise LaunchError(
            f"cuTensorMapEncodeTiled refused the descriptor (CUresult {result}): {kind} "
            f"shape {list(shape)}, strides {list(strides)}, block {list(block)}, "
            f"base {address:#x}"
        )
    return bytes(out)


@cache
def _encoder():
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        raise LaunchError(f"TMA tensor maps need the CUDA driver (libcuda.so.1): {error}") from None
    encode = libcuda.cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    encode.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_uint32,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
    ]
    return encode
