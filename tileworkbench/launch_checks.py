"""The host-side checks every compiled backend's launch makes before it touches a device: the grid
(`check_grid`) and the scalar arguments (`scalar_converter`: a Python or NumPy value to the NumPy
scalar a parameter of that kind takes, or a `LaunchError` naming the argument and kernel).

Below both the backends and the runtime (it imports only `dtypes` and `errors`), so the GPU's
launcher (`cuda/launcher.py`, `cuda/arguments.py`) and the cpu backend's
(`backends/cpu/launch.py`) check a launch the same way without the cpu backend importing the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tileworkbench.dtypes import TABLE as DTYPES
from tileworkbench.errors import LaunchError

# CUDA's grid limits for compute capability >= 3.0 (the device's own values are used when known)
DEFAULT_MAX_GRID = (2**31 - 1, 65535, 65535)


def check_grid(
    grid: Sequence[int], kernel_name: str = "kernel", max_grid: Sequence[int] = DEFAULT_MAX_GRID
) -> tuple[int, int, int] | None:
    """The grid as a 3-tuple of ints, or None when a dimension is 0 (launch nothing, as Triton does).

    Raises:
        LaunchError: a dimension is negative, not an integer, or over the device's limit.
    """
    if (
        type(grid) is tuple and len(grid) == 3
    ):  # the JIT's own form: checked without unpacking twice
        gx, gy, gz = grid
        if (
            type(gx) is int
            and type(gy) is int
            and type(gz) is int
            and 0 < gx <= max_grid[0]
            and 0 < gy <= max_grid[1]
            and 0 < gz <= max_grid[2]
        ):
            return grid
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    size = len(grid)
    if size == 3:
        gx, gy, gz = grid
    elif size == 1:
        gx, gy, gz = grid[0], 1, 1
    elif size == 2:
        gx, gy, gz = grid[0], grid[1], 1
    else:
        raise LaunchError(f"grid of {kernel_name} must have 1 to 3 dimensions; got {tuple(grid)}")
    if type(gx) is not int or type(gy) is not int or type(gz) is not int:
        gx, gy, gz = (_grid_int(value, grid, kernel_name) for value in (gx, gy, gz))
    if 0 < gx <= max_grid[0] and 0 < gy <= max_grid[1] and 0 < gz <= max_grid[2]:
        return (gx, gy, gz)
    if min(gx, gy, gz) < 0:
        raise LaunchError(f"grid of {kernel_name} has a negative dimension: {(gx, gy, gz)}")
    if min(gx, gy, gz) == 0:
        return None
    raise LaunchError(
        f"grid {(gx, gy, gz)} of {kernel_name} is over the device's limit "
        f"{tuple(max_grid)}; make the blocks larger or loop inside the kernel"
    )


def _grid_int(value: object, grid: Sequence[object], kernel_name: str) -> int:
    try:
        return int(value.__index__())  # numpy ints yes, floats no
    except (AttributeError, TypeError):
        raise LaunchError(f"grid of {kernel_name} must hold integers; got {tuple(grid)}") from None


# kind -> NumPy scalar type, for the kinds NumPy has natively (from the one dtype table)
_SCALAR_TYPES: dict[str, type] = {
    row.kind: row.numpy_dtype.type for row in DTYPES if row.numpy == row.raw_numpy
}


def scalar_converter(kind: str, name: str, kernel: str) -> Callable:
    """The converter of scalar argument `name` (of `kind`, a parameter kind such as `i32`, `fp16`)
    of `kernel`: value -> the NumPy scalar (or, for the kinds NumPy lacks, its bits) to pack.

    Raises:
        ValueError: `kind` is no scalar kind.
        LaunchError: a kind that cannot be passed as a scalar (its bits are no NumPy value's).
    """
    if kind in _BIT_KINDS:
        return _bits_converter(kind, name, kernel)
    scalar_type = _SCALAR_TYPES.get(kind)
    if scalar_type is None:
        raise ValueError(f"unknown parameter kind {kind!r} for argument {name!r} of {kernel}")
    if kind.startswith("fp"):
        return _float_converter(scalar_type, kind, name, kernel)
    return _int_converter(scalar_type, kind, name, kernel)


def _int_converter(scalar_type: type, kind: str, name: str, kernel: str) -> Callable:
    def convert(value):
        # a float for an integer parameter would be truncated silently by NumPy; refuse it
        if type(value) is not int and not isinstance(value, (int, np.integer, np.bool_)):
            raise _scalar_error(value, kind, name, kernel)
        try:
            return scalar_type(value)
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, kind, name, kernel) from None

    return convert


def _float_converter(scalar_type: type, kind: str, name: str, kernel: str) -> Callable:
    def convert(value):
        try:
            with np.errstate(over="ignore"):  # a too-large value is reported by the caller
                return scalar_type(value)
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, kind, name, kernel) from None

    return convert


# scalar kinds NumPy has no type for: passed as the bits of their ml_dtypes value
_BIT_KINDS = {
    row.kind: (row.numpy, np.dtype(row.raw_numpy).type)
    for row in DTYPES
    if row.numpy != row.raw_numpy
}


def _bits_converter(kind: str, name: str, kernel: str) -> Callable:
    import ml_dtypes

    from tileworkbench.dtypes import HELD_AS

    type_name, bits_type = _BIT_KINDS[kind]
    if type_name in HELD_AS:  # its bits are not those of any NumPy value
        raise LaunchError(
            f"argument {name!r} of {kernel}: a {kind} scalar cannot be passed; pass a "
            "float32 and convert it in the kernel"
        )
    scalar_type = getattr(ml_dtypes, type_name)

    def convert(value):
        # CuPy only packs bfloat16 scalars with recent NumPy, and fp8 not at all: send the bits
        try:
            return np.asarray(value, dtype=scalar_type).view(bits_type)[()]
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, kind, name, kernel) from None

    return convert


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _scalar_error(value: object, kind: str, name: str, kernel: str) -> LaunchError:
    return LaunchError(
        f"argument {name!r} of {kernel} has kind {kind}; got {value!r} ({type(value).__name__})"
    )
