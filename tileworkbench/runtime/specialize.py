"""What a launch specializes on, written once: the table both launch paths read.

A kernel is compiled once per specialization of its runtime arguments: each argument's kind
("*fp32", "i32", "fp32", a tensor descriptor's type), whether it is a multiple of 16 (a 16-byte
aligned address, or an integer; a descriptor: whether TMA can take it), for an integer not a multiple
of 16 whether it is one of 8 or 4 (`frontend.specialize.SMALL_DIVISORS`), and whether it is the
integer 1. `SPECIALIZE` maps an argument's type to the function that gives its key part, an interned string
in `frontend.specialize.key_text`'s spelling ("*fp32:16", "i32:1", ...), and the value a launch
packs (an array's device address, a scalar itself). Arrays' parts end in the family the warm
launcher may take them as (`@torch`: torch's stream, `@cupy`: CuPy's stream) or in `@full`: arrays
only the full launch path takes (host arrays, CPU tensors, any other array type), whose key no warm
entry is filed under. A `None` argument is the part "None"; a constexpr is two parts, its value and
its class (1 and True are equal but specialize apart).

The full launch path (`JITFunction._run`) builds its key with `key_part`, the generated warm
launcher (runtime/binder.py) with the same table and these interned strings, inlining the two
commonest kinds; so the two keys are equal for every call the warm path takes. Here too: the one
reader of an array's dtype and address (`array_address`), the grid normalizer, and the check that
the globals a kernel read are unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..cuda.launcher import LAUNCH_REFUSALS  # noqa: F401  (what a warm launch refuses with)
from ..dtypes import BY_ARRAY_NAME
from ..dtypes import TABLE as DTYPES
from ..errors import ArgumentOverflowError, LaunchError
from ..frontend.descriptor_args import descriptor_type, is_host_descriptor
from ..frontend.specialize import ArgSpec, key_text, small_divisor

# Options Triton's CUDA/HIP backends take as launch keywords; accepted and ignored here (one CTA per
# program, no AMD matrix-instruction choice), so Triton code passes them unchanged. (`maxnreg`,
# `enable_reflect_ftz` and `arch` are compile options here: `run`'s keywords.)
BACKEND_OPTIONS = frozenset(
    {
        "num_ctas",
        "matrix_instr_nonkdim",
        "waves_per_eu",
        "kpack",
        "allow_flush_denorm",
        "launch_cooperative_grid",
        "launch_pdl",
        "sanitize_overflow",
    }
)

# What making a warm key can raise, each sending the call to the full path (which explains, or
# compiles): KeyError, a key not filed yet or an argument type not in `SPECIALIZE` yet; TypeError,
# an unhashable constexpr; LaunchError, an argument no kernel takes (a list, an integer over 64
# bits).
KEY_MISSES = (KeyError, TypeError, LaunchError)

# array dtype names (NumPy, ml_dtypes, torch, CuPy) and tl dtypes' own names (a TensorWrapper's
# dtype)
_DTYPE_NAMES = {
    **{name: row.kind for name, row in BY_ARRAY_NAME.items()},
    **{row.triton: row.kind for row in DTYPES},
    "fp8e4b15": "fp8e4b15",
}
_NAME_CACHE: dict = {}


def dtype_name(dtype) -> str:
    """The Triton name of a NumPy, CuPy, ml_dtypes or torch dtype ("float32" -> "fp32")."""
    try:
        return _NAME_CACHE[dtype]
    except (KeyError, TypeError):  # not seen yet, or a dtype that cannot be a dict key
        pass
    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPE_NAMES:
        raise LaunchError(f"arrays of dtype {dtype} cannot be passed to a kernel")
    try:
        _NAME_CACHE[dtype] = _DTYPE_NAMES[name]
    except TypeError:
        pass
    return _DTYPE_NAMES[name]


# -- the key parts ---------------------------------------------------------------------------------
def _part(
    kind: str,
    divisible_16: bool = False,
    equal_1: bool = False,
    family: str = "",
    divisible_by: int = 1,
) -> str:
    # interned: a string caches its hash, so a flat tuple of them hashes cheaply at every launch
    return sys.intern(key_text(kind, divisible_16, equal_1, divisible_by) + family)


I32, I32_16, I32_ONE = _part("i32"), _part("i32", True), _part("i32", False, True)
I32_8, I32_4 = _part("i32", divisible_by=8), _part("i32", divisible_by=4)
I1, FP32, NONE = _part("i1"), _part("fp32"), sys.intern("None")
TORCH, CUPY, FULL = "@torch", "@cupy", "@full"  # array families (see the module docstring)


class _ArrayKinds(dict):
    """dtype -> (part of a 16-byte aligned array, part of an unaligned one), for one family; indexed
    with `address & 15 != 0`. Filled on first sight of each dtype."""

    def __init__(self, family: str):
        super().__init__()
        self.family = family

    def __missing__(self, dtype) -> tuple[str, str]:
        kind = "*" + dtype_name(dtype)
        value = self[dtype] = (
            _part(kind, True, family=self.family),
            _part(kind, family=self.family),
        )
        return value


TORCH_KINDS, CUPY_KINDS, FULL_KINDS = _ArrayKinds(TORCH), _ArrayKinds(CUPY), _ArrayKinds(FULL)


def is_full_only(part) -> bool:
    """Whether key part `part` is an array only the full launch path takes."""
    return type(part) is str and part.endswith(FULL)


def warm_key(key: tuple) -> bool:
    """Whether a warm entry may be filed under `key`: it holds no array only the full path takes."""
    return not any(is_full_only(part) for part in key)


def without_alignment(part: str) -> str:
    """`part` for a parameter in `do_not_specialize_on_alignment` (its multiples of 8 and 4 too)."""
    return part.replace(":16", "").replace(":8", "").replace(":4", "")


def without_specialization(part: str) -> str:
    """`part` for a parameter in `do_not_specialize`."""
    return without_alignment(part).replace(":1", "")


def arg_spec(name: str, part: str) -> ArgSpec:
    """The compiler's view of runtime parameter `name` launched with key part `part`."""
    return ArgSpec.from_key(name, part.partition("@")[0])


# -- reading arrays: the one reader of an array's dtype and address --------------------------------
def _read_torch(value) -> tuple[Any, int]:
    return value.dtype, value.data_ptr()


def _read_cupy(value) -> tuple[Any, int]:
    return value.dtype, value.data.ptr


def _read_numpy(value) -> tuple[Any, int]:
    return value.dtype, value.ctypes.data


def _read_interface(value) -> tuple[Any, int]:
    interface = getattr(value, "__cuda_array_interface__", None) or value.__array_interface__
    return np.dtype(interface["typestr"]), interface["data"][0]


_READERS: dict[type, Callable | None] = {np.ndarray: _read_numpy}


def _reader_for(kind: type) -> Callable | None:
    """How to read (dtype, address) from arrays of this type; None where it is no array type."""
    module = kind.__module__.split(".")[0]
    if module == "cupy" and hasattr(kind, "data"):
        return _read_cupy
    if (module == "torch" and hasattr(kind, "data_ptr")) or getattr(
        kind, "__tile_tensor_wrapper__", False
    ):
        return _read_torch
    if hasattr(kind, "__cuda_array_interface__") or hasattr(kind, "__array_interface__"):
        return _read_interface
    return None


def array_address(value) -> tuple[str, int] | None:
    """(dtype name, data address) of an array argument, or None if `value` is not an array. A host
    array's address too: whether a launch may take it is the launch's question."""
    kind = type(value)
    try:
        reader = _READERS[kind]
    except KeyError:
        reader = _READERS[kind] = _reader_for(kind)
    if reader is None:
        return None
    dtype, address = reader(value)
    return dtype_name(dtype), address


# -- the table: type -> (value -> (key part, value to pack)) ---------------------------------------
def _int(value):
    if -0x80000000 <= value <= 0x7FFFFFFF:
        return (
            I32_ONE
            if value == 1
            else I32_16
            if value & 15 == 0
            else I32_8
            if value & 7 == 0
            else I32_4
            if value & 3 == 0
            else I32
        ), value
    if not -(2**63) <= value < 2**64:
        raise ArgumentOverflowError(f"the integer {value} fits in no 64-bit kind (i64 or u64)")
    small = 1 if value % 16 == 0 else small_divisor(value)
    return _part("u64" if value >= 2**63 else "i64", value % 16 == 0, value == 1, "", small), value


def _bool(value):
    return I1, value


def _float(value):
    return FP32, value


def _none(value):
    return NONE, None


def _torch(value):
    """A torch tensor: the warm launcher's `@torch` where it is on the GPU (its inlined branch is
    this function written out), else the full path's (a CPU tensor: the interpreter, or an
    error)."""
    address = value.data_ptr()
    kinds = TORCH_KINDS if value.is_cuda else FULL_KINDS
    return kinds[value.dtype][address & 15 != 0], address


def _cupy(value):
    address = value.data.ptr
    return CUPY_KINDS[value.dtype][address & 15 != 0], address


def _full_array(reader: Callable) -> Callable:
    """The specializer of an array type only the full path launches, reading it with `reader`."""

    def specialize(value):
        dtype, address = reader(value)
        return FULL_KINDS[dtype][address & 15 != 0], address

    return specialize


def _numpy_scalar(value):
    return _part(dtype_name(value.dtype)), value


def _descriptor(value):
    """A host TensorDescriptor specializes on its dtype, block shape and padding, and on whether TMA
    can take it (a 16-byte aligned base and strides, `tensor_map.descriptor_fits`)."""
    from .tensor_map import descriptor_fits

    base = array_address(value.base)
    if base is None:
        raise LaunchError(
            f"a TensorDescriptor's base must be an array, got {type(value.base).__name__}"
        )
    padding = getattr(value, "padding", "zero")
    # host memory never goes to TMA (a NumPy base is staged to the GPU by tests' launchers)
    fits = not isinstance(value.base, np.ndarray) and descriptor_fits(base[0], base[1], value)
    return _part(descriptor_type(base[0], value.block_shape, padding), fits), value


def _scalar_part(scalar_type: type) -> Callable:
    part = _part(dtype_name(np.dtype(scalar_type)))
    return lambda value: (part, value)


SPECIALIZE: dict[type, Callable] = {int: _int, bool: _bool, float: _float, type(None): _none}
for _t in (
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
):
    SPECIALIZE[_t] = _scalar_part(_t)
SPECIALIZE_TORCH = _torch  # for stand-ins of torch tensors (tests, bench/warm_launch_host.py)


def _first_sight(value) -> Callable:
    """The specializer of `value`'s type, found and added to `SPECIALIZE` on its first launch: a
    subclass of a listed type takes its base's (torch's Parameter, an IntEnum)."""
    kind = type(value)
    for base in kind.__mro__[1:]:
        if base in SPECIALIZE and base is not object:
            return SPECIALIZE.setdefault(kind, SPECIALIZE[base])
    reader = _READERS.get(kind) or _reader_for(kind)
    if isinstance(value, np.generic):
        found = _numpy_scalar
    elif reader is _read_torch and not getattr(kind, "__tile_tensor_wrapper__", False):
        found = _torch
    elif reader is _read_cupy:
        found = _cupy
    elif reader is not None:
        found = _full_array(reader)
    elif isinstance(value, int):
        found = _int
    elif is_host_descriptor(value):
        found = _descriptor
    else:
        raise LaunchError(
            f"cannot pass a {kind.__name__} to a kernel: expected an array, a number or "
            "a tl.constexpr parameter"
        )
    return SPECIALIZE.setdefault(kind, found)


def specialize(value) -> tuple[str, Any]:
    """(key part, value to pack) of one runtime argument.

    Raises:
        LaunchError: no kernel takes such a value (ArgumentOverflowError for an integer over 64
        bits).
    """
    try:
        return SPECIALIZE[value.__class__](value)
    except KeyError:
        return _first_sight(value)(value)


def key_part(value) -> str:
    """The key part of one runtime argument (`specialize`'s first half)."""
    return specialize(value)[0]


def constexpr_parts(value) -> tuple:
    """A constexpr's two key parts: its value (its repr where it cannot be hashed) and its class."""
    try:
        hash(value)
    except TypeError:
        return repr(value), value.__class__
    return value, value.__class__


# -- grids and globals -----------------------------------------------------------------------------
def normalize_grid(grid, named: dict | None) -> tuple[int, int, int]:
    """A launch's grid as three ints: `grid` is an int, a tuple of 1 to 3, or a callable given the
    arguments by name (`named`) that returns one.

    Raises:
        LaunchError: the grid has no or more than 3 dimensions.
    """
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int:
        return (grid[0], 1, 1)  # the common case
    if callable(grid):
        grid = grid(named)
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"a grid has 1 to 3 dimensions, got {grid}")
    return grid + (1,) * (3 - len(grid))


_MISSING = object()


def globals_unchanged(used_globals) -> bool:
    """Whether every (scope, name, value) a kernel read at compile time still holds: a changed
    global makes the launch compile again."""
    for scope, name, value in used_globals:
        if scope.get(name, _MISSING) is not value:
            return False
    return True
