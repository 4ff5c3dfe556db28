"""Tile IR types as LLVM IR types: `i1`..`i64` (signedness lives in the ops), `half`, `bfloat`, `float`,
`double`, fp8 as `i8` bits, pointers as `ptr addrspace(1)`; `i1` is stored in memory as `i8`."""

from __future__ import annotations

import struct

from llvmlite import ir

from ...dtypes import TABLE as DTYPES
from ...ir.types import PointerType, ScalarType, element_type


class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite.ir lacks; constants print in LLVM's `0xR` hex form."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value) -> str:
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return f"0xR{rounded & 0xFFFF:04X}"


BFloatType._create_instance()


I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, BF16, F32, F64 = ir.HalfType(), BFloatType(), ir.FloatType(), ir.DoubleType()
GLOBAL_PTR = ir.PointerType(addrspace=1)
SHARED_PTR = ir.PointerType(addrspace=3)
GENERIC_PTR = ir.PointerType()

# the llvmlite types dtypes.TABLE's `llvm` column names, by their printed names
_BY_LLVM_NAME = {str(t): t for t in (F16, BF16, F32, F64, I8)}
# Rows of the table that the interpreter runs but the LLVM lowering (NVPTX and cpu) does not:
# AMD's fnuz fp8 formats, and Triton's fp8e4b15 (which Triton converts in software before sm_90
# and refuses from sm_90 on)
NOT_LOWERED = {
    "f8e4b8": "Triton has it on AMD CDNA3 only",
    "f8e5b16": "Triton has it on AMD CDNA3 only",
    "f8e4b15": "Triton emulates it before sm_90 and refuses it from sm_90 on",
}
_FLOATS = {
    row.ir: _BY_LLVM_NAME[row.llvm] for row in DTYPES if row.is_float and row.ir not in NOT_LOWERED
}


def llvm_type(t) -> ir.Type:
    """The register type of a Tile IR scalar or pointer type (of a tensor's element, for tensors)."""
    t = element_type(t)
    if isinstance(t, PointerType):
        return GLOBAL_PTR
    if t.is_int:
        return ir.IntType(t.bitwidth)
    if t.name not in _FLOATS:  # see NOT_LOWERED
        from ...errors import TileTypeError

        raise TileTypeError(
            f"{t.name} is not supported on NVIDIA GPUs ({NOT_LOWERED[t.name]})",
            hint="use tl.float8e4nv or tl.float8e5, or run in the interpreter",
        )
    return _FLOATS[t.name]


def memory_type(t) -> ir.Type:
    """The type a value has in memory: registers' type, except `i1` which is a byte."""
    t = element_type(t)
    if isinstance(t, ScalarType) and t.is_bool:
        return I8
    return llvm_type(t)


def byte_size(t) -> int:
    t = element_type(t)
    if isinstance(t, PointerType):
        return 8
    return max(1, t.bitwidth // 8)


def is_fp8(t) -> bool:
    t = element_type(t)
    return isinstance(t, ScalarType) and t.name in ("f8e4nv", "f8e5")
