"""Tile IR types: scalars, pointers and tensors, printed as MLIR (`f32`, `!tt.ptr<f16>`, `tensor<128xi32>`).

Integer types carry their signedness (`i32` vs `u32`), unlike MLIR's signless integers: the backends then
know how to extend, divide and compare without a side table. `i1` is the boolean type.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import TABLE as _DTYPES

# IR scalar type name -> bits, from the dtype table
INT_BITS = {row.ir: row.bits for row in _DTYPES if not row.is_float}
FLOAT_BITS = {row.ir: row.bits for row in _DTYPES if row.is_float}


@dataclass(frozen=True)
class ScalarType:
    """An element type: `i1`, `i8`..`i64`, `u8`..`u64`, `f8e4nv`, `f8e5`, `f16`, `bf16`, `f32`, `f64`."""

    name: str

    def __post_init__(self):
        if self.name not in INT_BITS and self.name not in FLOAT_BITS:
            raise ValueError(f"unknown scalar type {self.name!r}")

    @property
    def bitwidth(self) -> int:
        return INT_BITS.get(self.name) or FLOAT_BITS[self.name]

    @property
    def is_int(self) -> bool:
        return self.name in INT_BITS

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_BITS

    @property
    def is_signed(self) -> bool:
        return self.name.startswith("i") and self.name != "i1"

    @property
    def is_bool(self) -> bool:
        return self.name == "i1"

    @property
    def scalar(self) -> ScalarType:
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType:
    """A global-memory pointer to `pointee`, printed `!tt.ptr<f32>`."""

    pointee: ScalarType

    @property
    def scalar(self) -> PointerType:
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def is_int(self) -> bool:
        return False

    @property
    def is_float(self) -> bool:
        return False

    @property
    def bitwidth(self) -> int:
        return 64

    def __str__(self) -> str:
        return f"!tt.ptr<{self.pointee}>"


@dataclass(frozen=True)
class TensorType:
    """A tile: a power-of-two shaped block of scalars or pointers. `encoding` is set by the GPU passes."""

    shape: tuple[int, ...]
    element: ScalarType | PointerType
    encoding: object | None = None

    @property
    def scalar(self) -> ScalarType | PointerType:
        return self.element

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_element(self, element: ScalarType | PointerType) -> TensorType:
        return TensorType(self.shape, element, self.encoding)

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        enc = f", {self.encoding}" if self.encoding is not None else ""
        return f"tensor<{dims}x{self.element}{enc}>"


@dataclass(frozen=True)
class MemDescType:
    """A tile in shared memory (`!ttg.memdesc`), made by the GPU passes: `shape` may have a leading
    ring dimension (one slot per pipeline stage); `encoding` is a `#shared` layout."""

    shape: tuple[int, ...]
    element: ScalarType
    encoding: object | None = None

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        enc = f", {self.encoding}" if self.encoding is not None else ""
        return f"!ttg.memdesc<{dims}x{self.element}{enc}, mutable>"


@dataclass(frozen=True)
class TensorDescType:
    """A tensor descriptor (`!tt.tensordesc<tensor<64x64xf16>>`): a global tensor's base, shape and
    strides with the block that its loads and stores move. Target-neutral: passes/descriptors.py
    turns it into a TMA tensor map or pointer tiles."""

    block: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def __str__(self) -> str:
        return f"!tt.tensordesc<{self.block}>"


Type = ScalarType | PointerType | TensorType | MemDescType | TensorDescType

i1, i8, i16, i32, i64 = (ScalarType(n) for n in ("i1", "i8", "i16", "i32", "i64"))
u8, u16, u32, u64 = (ScalarType(n) for n in ("u8", "u16", "u32", "u64"))
f16, bf16, f32, f64 = (ScalarType(n) for n in ("f16", "bf16", "f32", "f64"))
f8e4nv, f8e5 = ScalarType("f8e4nv"), ScalarType("f8e5")
f8e4b8, f8e5b16 = ScalarType("f8e4b8"), ScalarType("f8e5b16")


def element_type(t: Type) -> ScalarType | PointerType:
    """The scalar (or pointer) type of `t`, or `t` itself when it is not a tensor."""
    return t.element if isinstance(t, TensorType) else t


def with_element(t: Type, element: ScalarType | PointerType) -> Type:
    """`t` with its element replaced: a tensor stays a tensor of the same shape."""
    return t.with_element(element) if isinstance(t, TensorType) else element


def shape_of(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, TensorType) else ()
