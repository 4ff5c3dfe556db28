"""The language's data model: dtypes with Triton's names and predicates, `constexpr`, block types and the
`tensor` handle that the frontend passes around while it lowers a kernel.

Nothing here builds IR: the frontend gives these objects their meaning (see frontend/semantics.py).
"""

from __future__ import annotations

from typing import Any, Callable

from ..dtypes import BY_ARRAY_NAME, HELD_AS
from ..dtypes import TABLE as DTYPES
from ..errors import CompilationError

# Triton dtype name -> Tile IR scalar type name.
_IR_NAMES = {row.triton: row.ir for row in DTYPES}
# Other names of a dtype -> Triton's: the short signature kinds ("i32", "fp16"), the `tl.`
# attribute names ("float16", "float8e4nv"), the NumPy/ml_dtypes names of the types NumPy has
# ("bool", "bfloat16", "float8_e4m3fn"), the IR's float spellings ("f32"), torch's "half"/"float"/
# "double" and one more spelling of e4m3fn
_ALIASES = {
    **{row.kind: row.triton for row in DTYPES},
    **{row.language: row.triton for row in DTYPES if row.language},
    **{row.numpy: row.triton for row in DTYPES if row.numpy not in HELD_AS},
    **{row.ir: row.triton for row in DTYPES if row.ir in ("f16", "f32", "f64")},
    **{name: BY_ARRAY_NAME[name].triton for name in ("half", "float", "double")},
    "float8e4m3fn": "fp8e4nv",
}


class dtype:
    """A scalar element type (`tl.float32`, `tl.int8`, ...). `tl.dtype("fp32")` names one by Triton's name."""

    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = (
        "fp8e4b15",
        "fp8e4nv",
        "fp8e4b8",
        "fp8e5",
        "fp8e5b16",
        "fp16",
        "bf16",
        "fp32",
        "fp64",
    )
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    OTHER_TYPES = ("void",)

    class SIGNEDNESS:
        SIGNED = 0
        UNSIGNED = 1

    class KIND:
        BOOLEANISH = 0
        INTEGRAL = 1
        FLOATING = 2

    def __init__(self, name: str):
        name = _ALIASES.get(name, name)
        if name not in _IR_NAMES and name != "void":
            raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(_IR_NAMES)}")
        self.name = name

    # -- predicates (Triton's) ----------------------------------------------------------------------
    def is_fp8(self) -> bool:
        return self.name.startswith("fp8")

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e4b8(self) -> bool:
        return self.name == "fp8e4b8"

    def is_fp8e5b16(self) -> bool:
        return self.name == "fp8e5b16"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_floating(self) -> bool:
        return self.name in self.FP_TYPES

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_int(self) -> bool:
        return self.name in self.SINT_TYPES or self.name in self.UINT_TYPES

    def is_int1(self) -> bool:
        return self.name == "int1"

    is_bool = is_int1

    def is_int_signed(self) -> bool:
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self) -> bool:
        return self.name in self.UINT_TYPES

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_void(self) -> bool:
        return self.name == "void"

    def kind(self) -> int:
        if self.is_int1():
            return dtype.KIND.BOOLEANISH
        return dtype.KIND.INTEGRAL if self.is_int() else dtype.KIND.FLOATING

    @property
    def int_signedness(self) -> int:
        return dtype.SIGNEDNESS.SIGNED if self.is_int_signed() else dtype.SIGNEDNESS.UNSIGNED

    @property
    def primitive_bitwidth(self) -> int:
        if self.name == "int1":
            return 1
        digits = "".join(c for c in self.name if c.isdigit())
        return 8 if self.is_fp8() else int(digits)

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self) -> int:
        return _FLOAT_FORMATS[self.name][0]

    @property
    def exponent_bias(self) -> int:
        """The IEEE-style exponent bias of a float type (Triton's `dtype.exponent_bias`)."""
        if not self.is_floating():
            raise AttributeError(f"{self!r} is not a floating-point type and has no exponent_bias")
        return _FLOAT_FORMATS[self.name][1]

    def is_int8(self) -> bool:
        return self.name == "int8"

    def is_int16(self) -> bool:
        return self.name == "int16"

    def is_int32(self) -> bool:
        return self.name == "int32"

    def is_int64(self) -> bool:
        return self.name == "int64"

    def is_uint8(self) -> bool:
        return self.name == "uint8"

    def is_uint16(self) -> bool:
        return self.name == "uint16"

    def is_uint32(self) -> bool:
        return self.name == "uint32"

    def is_uint64(self) -> bool:
        return self.name == "uint64"

    def get_int_max_value(self) -> int:
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.is_int_unsigned():
            return 2**self.int_bitwidth - 1
        raise TypeError(f"{self!r} is not an integer type")

    def get_int_min_value(self) -> int:
        if self.is_int_signed():
            return -(2 ** (self.int_bitwidth - 1))
        if self.is_int_unsigned():
            return 0
        raise TypeError(f"{self!r} is not an integer type")

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        return _ALIASES.get(type_str, type_str) in _IR_NAMES

    def is_const(self) -> bool:
        return False

    @property
    def cache_key_part(self) -> str:
        return self.name

    def codegen_name(self) -> str:
        return self.name

    @property
    def scalar(self) -> dtype:
        return self

    @property
    def ir_name(self) -> str:
        return _IR_NAMES[self.name]

    def to_ir(self):
        from ..ir.types import ScalarType

        return ScalarType(self.ir_name)

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = dtype(other)
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"triton.language.{_PUBLIC_NAMES.get(self.name, self.name)}"

    def __str__(self) -> str:
        return self.name


class pointer_type(dtype):
    """A pointer to `element_ty` in global memory (`tl.pointer_type(tl.float32)`)."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{element_ty}>"

    def is_ptr(self) -> bool:
        return True

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def kind(self) -> int:
        return -1

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    def to_ir(self):
        from ..ir.types import PointerType

        return PointerType(self.element_ty.to_ir())

    def __eq__(self, other) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty))

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}>"

    def __str__(self) -> str:
        return f"pointer<{self.element_ty}>"


class block_type(dtype):
    """The type of a tile: an element type and a shape."""

    def __init__(self, element_ty: dtype, shape: tuple[int, ...]):
        self.element_ty = element_ty
        self.shape = tuple(int(s) for s in shape)
        self.name = f"<{self.shape}, {element_ty}>"

    def is_block(self) -> bool:
        return True

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def to_ir(self):
        from ..ir.types import TensorType

        return TensorType(self.shape, self.element_ty.to_ir())

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, block_type)
            and other.shape == self.shape
            and other.element_ty == self.element_ty
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.element_ty))

    def __repr__(self) -> str:
        return f"block_type({self.element_ty!r}, {list(self.shape)})"


# float type -> (mantissa bits, exponent bias); the b15/b8/b16 fp8 types are Triton's (ml_dtypes'
# e4m3b11fnuz, e4m3fnuz, e5m2fnuz)
_FLOAT_FORMATS = {
    row.triton: (row.mantissa, row.bias) for row in DTYPES if row.mantissa is not None
}
_PUBLIC_NAMES = {row.triton: row.language or row.triton for row in DTYPES}

int1 = dtype("int1")
int8, int16, int32, int64 = (dtype(f"int{n}") for n in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (dtype(f"uint{n}") for n in (8, 16, 32, 64))
float8e4nv, float8e5 = dtype("fp8e4nv"), dtype("fp8e5")
float8e4b15, float8e4b8, float8e5b16 = dtype("fp8e4b15"), dtype("fp8e4b8"), dtype("fp8e5b16")
float16, bfloat16, float32, float64 = dtype("fp16"), dtype("bf16"), dtype("fp32"), dtype("fp64")
void = dtype("void")
pi32_t = pointer_type(int32)


def dtype_from_ir(ir_type) -> dtype:
    """The language type of a Tile IR type (scalar, pointer or tensor)."""
    from ..ir.types import PointerType, TensorType

    if isinstance(ir_type, TensorType):
        return block_type(dtype_from_ir(ir_type.element), ir_type.shape)
    if isinstance(ir_type, PointerType):
        return pointer_type(dtype_from_ir(ir_type.pointee))
    return dtype(next(k for k, v in _IR_NAMES.items() if v == ir_type.name))


class constexpr:
    """A compile-time constant. As an annotation (`BLOCK: tl.constexpr`) it marks a kernel parameter whose
    value is baked into the compiled code; `tl.constexpr(42)` as a global makes a constant kernels can read."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self) -> int:
        return self.value.__index__()

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other) -> bool:
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    @property
    def type(self) -> constexpr_type:
        return constexpr_type(self.value)


class constexpr_type:
    """The type of a compile-time constant: `tl.constexpr(5).type == constexpr_type(5)` (Triton's)."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other) -> bool:
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("constexpr_type", repr(self.value)))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


class const:
    """`ptr: tl.const` marks a pointer parameter as read-only data (Triton's annotation): a tl.store
    through it (or a pointer computed from it) is a compile error."""


class tensor:
    """A value inside a kernel being compiled: an SSA `handle` of the Tile IR and its language `type`
    (a scalar dtype, a pointer_type or a block_type). Operators and methods are lowered by the frontend."""

    def __init__(self, handle, type: dtype):
        self.handle = handle
        self.type = type

    @property
    def dtype(self) -> dtype:
        return self.type.scalar

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape if self.type.is_block() else ()

    @property
    def numel(self) -> int:
        return self.type.numel if self.type.is_block() else 1

    def __repr__(self) -> str:
        return f"tensor({self.type!r})"

    def __bool__(self):
        raise CompilationError(
            "a tensor has no Python truth value at compile time: use it in `if` or `while` directly "
            "(compiled as a runtime branch), or make the value a tl.constexpr"
        )


class range:
    """`tl.range(start, end, step, num_stages=None, loop_unroll_factor=None, ...)`: a runtime loop whose
    options tune software pipelining; iterate it in a `for` statement inside a kernel.

    `warp_specialize=True` gives the program a producer warp group that issues the loop's TMA copies
    while the kernel's warps compute (on sm_90a, for a loop whose descriptor loads feed `tl.dot`;
    elsewhere the loop runs as it would without it, and the `tile-gpu` IR says why:
    passes/warp_specialize.py). `disable_licm` reaches LLVM as loop metadata. Triton's other knobs
    are accepted and change nothing here: `disallow_acc_multi_buffer` and `flatten` (nested loops
    are not flattened)."""

    def __init__(
        self,
        arg1,
        arg2=None,
        step=None,
        num_stages=None,
        loop_unroll_factor=None,
        disallow_acc_multi_buffer=False,
        flatten=False,
        warp_specialize=False,
        disable_licm=False,
    ):
        self.start, self.end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = 1 if step is None else step
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor
        self.disallow_acc_multi_buffer = disallow_acc_multi_buffer
        self.flatten = flatten
        self.warp_specialize = warp_specialize
        self.disable_licm = disable_licm


class static_range:
    """`tl.static_range(start, end, step)`: a loop unrolled at compile time; bounds must be constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        self.start, self.end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = 1 if step is None else step


# -- builtins: stubs whose lowering the frontend registers (frontend/semantics.py) ------------------
BUILTINS: dict[Callable, str] = {}


def builtin(fn: Callable) -> Callable:
    """Mark `fn` as a language builtin. Called outside a kernel it raises; inside, the frontend lowers it."""

    def stub(*args, **kwargs):
        raise RuntimeError(
            f"tl.{fn.__name__} can only be called inside a @jit kernel (it is compiled, not run by Python)"
        )

    stub.__name__ = fn.__name__
    stub.__qualname__ = fn.__qualname__
    stub.__doc__ = fn.__doc__
    stub.__wrapped__ = fn
    stub.__tile_builtin__ = fn.__name__
    BUILTINS[stub] = fn.__name__
    return stub


def language_function(fn: Callable) -> Callable:
    """Mark a function written in the tile language itself (e.g. `tl.softmax`, Philox): the frontend
    inlines its source like a `@jit` callee."""
    fn.__tile_language_function__ = True
    return fn
