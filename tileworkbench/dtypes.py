"""The one dtype table: a row per element type with its name in Triton, in Tile IR, in NumPy/ml_dtypes
and torch, its width and its LLVM type. Every other dtype mapping in the package is derived from it
(language names, argument kinds, NumPy dtypes of the interpreter, LLVM types of the lowerings).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class DType:
    """One element type.

    Attributes:
        triton: Triton's name (`tl.dtype(...).name`, signature kinds): "fp32", "int32", "bf16".
        kind: the short signature spelling ("fp32", "i32", "u8", "i1").
        ir: the Tile IR scalar type name ("f32", "i32", "bf16").
        numpy: the NumPy or ml_dtypes dtype name ("float32", "bfloat16", "float8_e4m3fn").
        raw_numpy: a NumPy dtype of the same width that CuPy and torch-to-NumPy views can carry.
        torch: torch's dtype name, or "" where torch has none.
        bits: the width in bits.
        llvm: the LLVM register type ("float", "bfloat", "i8" for fp8 bits).
        slot: the `struct` code of a kernel parameter of this type in an 8-byte slot.
        tma: CUDA's `CUtensorMapDataType` of host tensor maps (runtime/tensor_map.py), or None: the
            unsigned type of its width (bytes are copied as they are; float codes matter for the
            NaN fill only).
        tensormap: PTX's `tensormap.replace ... .elemtype` code of tensor maps built in the kernel
            (passes/descriptors.py), or None as for `tma`.
        language: the `tl.` attribute a kernel names it by, where it differs from `triton`
            ("float16" for fp16, "float8e4nv"); "" where it is `triton` itself.
        mantissa, bias: a float's explicit mantissa bits and exponent bias (`fp_mantissa_width`,
            `exponent_bias`), None for integers.
        mma: PTX's name of it as a tensor-core (mma/wgmma) operand ("f16", "tf32" for fp32, "s8",
            "e4m3"), "" where the lowering takes it as no such operand.
    """

    triton: str
    kind: str
    ir: str
    numpy: str
    raw_numpy: str
    torch: str
    bits: int
    llvm: str
    slot: str
    tma: int | None = None
    tensormap: int | None = None
    language: str = ""
    mantissa: int | None = None
    bias: int | None = None
    mma: str = ""

    @cached_property
    def numpy_dtype(self):
        import numpy as np

        if self.numpy.startswith(("bfloat", "float8")):
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, HELD_AS.get(self.numpy, self.numpy)))
        return np.dtype(self.numpy)

    @property
    def is_float(self) -> bool:
        return self.ir.startswith(("f", "bf"))


# Formats no NumPy or ml_dtypes type has, and the type that holds their bits: fp8e4b15 arrays are
# viewed as float8_e4m3fn and the interpreter scales their values (backends/interpreter/dtypes.py).
HELD_AS = {"float8_e4b15": "float8_e4m3fn"}

TABLE: tuple[DType, ...] = (
    DType("int1", "i1", "i1", "bool", "bool", "bool", 1, "i1", "?7x"),
    DType("int8", "i8", "i8", "int8", "int8", "int8", 8, "i8", "b7x", mma="s8"),
    DType("int16", "i16", "i16", "int16", "int16", "int16", 16, "i16", "h6x"),
    DType("int32", "i32", "i32", "int32", "int32", "int32", 32, "i32", "i4x", tma=3),
    DType("int64", "i64", "i64", "int64", "int64", "int64", 64, "i64", "q", tma=5),
    DType("uint8", "u8", "u8", "uint8", "uint8", "uint8", 8, "i8", "B7x", tma=0, tensormap=0),
    DType(
        "uint16", "u16", "u16", "uint16", "uint16", "uint16", 16, "i16", "H6x", tma=1, tensormap=1
    ),
    DType(
        "uint32", "u32", "u32", "uint32", "uint32", "uint32", 32, "i32", "I4x", tma=2, tensormap=2
    ),
    DType("uint64", "u64", "u64", "uint64", "uint64", "uint64", 64, "i64", "Q", tma=4, tensormap=4),
    # Triton's fp8e4b15: e4m3fn's bits with exponent bias 15 (see HELD_AS)
    DType(
        "fp8e4b15",
        "fp8e4b15",
        "f8e4b15",
        "float8_e4b15",
        "uint8",
        "",
        8,
        "i8",
        "B7x",
        language="float8e4b15",
        mantissa=3,
        bias=15,
    ),
    DType(
        "fp8e4nv",
        "fp8e4nv",
        "f8e4nv",
        "float8_e4m3fn",
        "uint8",
        "float8_e4m3fn",
        8,
        "i8",
        "B7x",
        language="float8e4nv",
        mantissa=3,
        bias=7,
        mma="e4m3",
    ),
    DType(
        "fp8e5",
        "fp8e5",
        "f8e5",
        "float8_e5m2",
        "uint8",
        "float8_e5m2",
        8,
        "i8",
        "B7x",
        language="float8e5",
        mantissa=2,
        bias=15,
        mma="e5m2",
    ),
    # AMD's fnuz fp8 formats (Triton's fp8e4b8, fp8e5b16): the interpreter runs them, NVPTX refuses them
    DType(
        "fp8e4b8",
        "fp8e4b8",
        "f8e4b8",
        "float8_e4m3fnuz",
        "uint8",
        "float8_e4m3fnuz",
        8,
        "i8",
        "B7x",
        language="float8e4b8",
        mantissa=3,
        bias=8,
    ),
    DType(
        "fp8e5b16",
        "fp8e5b16",
        "f8e5b16",
        "float8_e5m2fnuz",
        "uint8",
        "float8_e5m2fnuz",
        8,
        "i8",
        "B7x",
        language="float8e5b16",
        mantissa=2,
        bias=16,
    ),
    DType(
        "fp16",
        "fp16",
        "f16",
        "float16",
        "float16",
        "float16",
        16,
        "half",
        "e6x",
        tma=6,
        tensormap=6,
        language="float16",
        mantissa=10,
        bias=15,
        mma="f16",
    ),
    DType(
        "bf16",
        "bf16",
        "bf16",
        "bfloat16",
        "uint16",
        "bfloat16",
        16,
        "bfloat",
        "H6x",
        tma=9,
        tensormap=10,
        language="bfloat16",
        mantissa=7,
        bias=127,
        mma="bf16",
    ),
    DType(
        "fp32",
        "fp32",
        "f32",
        "float32",
        "float32",
        "float32",
        32,
        "float",
        "f4x",
        tma=7,
        tensormap=7,
        language="float32",
        mantissa=23,
        bias=127,
        mma="tf32",
    ),
    DType(
        "fp64",
        "fp64",
        "f64",
        "float64",
        "float64",
        "float64",
        64,
        "double",
        "d",
        tma=8,
        tensormap=9,
        language="float64",
        mantissa=52,
        bias=1023,
    ),
)

BY_TRITON = {row.triton: row for row in TABLE}
BY_KIND = {row.kind: row for row in TABLE}
BY_IR = {row.ir: row for row in TABLE}
# NumPy, ml_dtypes, torch and CuPy dtype names (and torch's "half"/"float"/"double") -> row
BY_ARRAY_NAME = {
    **{row.numpy: row for row in TABLE},
    **{row.torch: row for row in TABLE if row.torch},
    "half": BY_TRITON["fp16"],
    "float": BY_TRITON["fp32"],
    "double": BY_TRITON["fp64"],
}


def by_torch_name(name: str) -> DType | None:
    return BY_ARRAY_NAME.get(name)


def lookup(name: str) -> DType | None:
    """The row for any of a dtype's names: Triton's, the signature kind, the IR's, NumPy's, torch's."""
    return BY_TRITON.get(name) or BY_KIND.get(name) or BY_IR.get(name) or BY_ARRAY_NAME.get(name)


def memory_dtype(pointee):
    """The NumPy dtype a pointer to `pointee` (an IR scalar type) reads from memory: i1 is stored as
    one byte (0 or 1). The interpreter's loads and the debug-mode messages of compiled launches."""
    if pointee.name == "i1":
        import numpy as np

        return np.dtype(np.uint8)
    return BY_IR[pointee.name].numpy_dtype


def numpy_dtype_of(name: str):
    """The NumPy dtype of any of a dtype's names (`lookup`), else NumPy's own reading of `name`."""
    row = lookup(name)
    if row is not None:
        return row.numpy_dtype
    import numpy as np

    return np.dtype(name)


def tma_element_code(name: str, *, in_kernel: bool) -> int:
    """The TMA element type code of dtype `name` ("fp16", "int32", ...): the `tensormap` column for
    a map built in the kernel, else `tma` (the host's); the unsigned type of the same width where
    the row has none."""
    row = lookup(name)
    if row is None:
        raise KeyError(f"no dtype named {name!r}")
    code = row.tensormap if in_kernel else row.tma
    if code is None:
        same_width = BY_KIND[f"u{max(8, row.bits)}"]
        code = same_width.tensormap if in_kernel else same_width.tma
    return code


# LLVM float type name ("half", "bfloat", "float", "double") -> its row (integer types and fp8's
# bytes are "iN", which names no one row)
BY_LLVM_FLOAT = {row.llvm: row for row in TABLE if not row.llvm.startswith("i")}
# LLVM float type name -> bits (integer types carry theirs)
LLVM_FLOAT_BITS = {name: row.bits for name, row in BY_LLVM_FLOAT.items()}
