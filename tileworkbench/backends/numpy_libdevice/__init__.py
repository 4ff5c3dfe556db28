"""libdevice (`__nv_*`) in NumPy, shared by the backends that run device-library calls on the host:
the interpreter evaluates `tt.extern_elementwise` with it, and the cpu target calls back into it for
the functions the host has no native version of. Names no backend (tests/test_layers.py)."""

from .calls import extern_function
from .functions import lookup

__all__ = ["extern_function", "lookup"]
