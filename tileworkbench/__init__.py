"""tileworkbench: a tile-language GPU compiler in Python (Triton's language) inside a Jupyter workbench.

import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import language  # noqa: F401
from .errors import (  # noqa: F401
    ArgumentBindingError,
    CompilationError,
    CompileTimeAssertionFailure,
    DeviceAssertionError,
    InterpreterError,
    LaunchError,
    OutOfBoundsError,
    OutOfResources,
    TileTypeError,
    TileworkbenchError,
    TritonError,
)
from .language.core import constexpr  # noqa: F401
from .runtime.autotuner import Config, autotune, heuristics  # noqa: F401
from .runtime.config_sets import attention_configs, matmul_configs  # noqa: F401
from .runtime.compiler import CompiledKernel, compile  # noqa: F401
from .runtime.jit import JITFunction, jit  # noqa: F401
from .runtime.allocation import set_allocator  # noqa: F401
from . import runtime  # noqa: F401
from .runtime import testing  # noqa: F401


def cdiv(x: int, y: int) -> int:
    """ceil(x / y) for positive integers (Triton's `triton.cdiv`)."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (Triton's `triton.next_power_of_2`)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def reinterpret(array, dtype):
    """View `array` (NumPy, CuPy or torch) as another dtype of the same width, sharing its memory.

    `dtype` is a tl dtype (tl.float8e5), a NumPy dtype or a name ("bf16")."""
    import numpy as np

    from .language.core import dtype as tl_dtype

    name = dtype.name if isinstance(dtype, tl_dtype) else str(dtype)
    if hasattr(array, "view") and hasattr(array, "data_ptr") and not isinstance(array, np.ndarray):
        import torch  # torch tensors: view with torch's dtype of the same width

        from .runtime.tensor_wrapper import TensorWrapper

        if isinstance(array, TensorWrapper):
            array = array.base
        row = _dtype_row(name)
        torch_name = row.torch if row is not None and row.torch else name  # dtypes.TABLE's torch
        if not hasattr(
            torch, torch_name
        ):  # no torch dtype: a wrapper, as Triton's reinterpret gives
            return TensorWrapper(array, tl_dtype(name))
        return array.view(getattr(torch, torch_name))
    from .dtypes import numpy_dtype_of

    np_dtype = numpy_dtype_of(name)
    if np.dtype(array.dtype).itemsize != np_dtype.itemsize:
        raise ValueError(f"cannot reinterpret {array.dtype} as {name}: element sizes differ")
    return array.view(np_dtype)


def _dtype_row(name: str):
    from .dtypes import lookup

    return lookup(name)


def load_ipython_extension(ipython) -> None:
    """`%load_ext tileworkbench`: registers the `%%tilekernel` cell magic."""
    from .workbench.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .workbench.magic import unload_ipython_extension as unload

    unload(ipython)


def inspect(kernel, *args, **kwargs):
    """The workbench report (stages, passes, resources) of a compiled or launched kernel."""
    from .workbench.build import inspect as build_inspect

    return build_inspect(kernel, *args, **kwargs)


def roofline(items, **kwargs):
    """Place kernels (reports or launch records) on one roofline plot."""
    from .workbench import roofline as roofline_module

    return roofline_module.roofline(items, **kwargs)
