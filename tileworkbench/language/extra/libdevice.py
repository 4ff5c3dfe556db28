"""CUDA libdevice functions by their common names (`libdevice.tanh(x)`), as `tl.extra.libdevice` in Triton.

Each call becomes a `tt.extern_elementwise` of the `__nv_<name>f` (fp32) or `__nv_<name>` (fp64) symbol;
fp16/bf16 inputs are computed in fp32. The interpreter has a NumPy version of each.
"""

from __future__ import annotations

from ..core import builtin

# name -> number of arguments. Predicates (isnan, isinf, signbit, finitef) return int1.
FUNCTIONS = {
    "tanh": 1, "sinh": 1, "cosh": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "asinh": 1, "acosh": 1,
    "atanh": 1, "exp": 1, "exp2": 1, "exp10": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1,
    "sqrt": 1, "rsqrt": 1, "cbrt": 1, "erf": 1, "erfc": 1, "erfinv": 1, "lgamma": 1, "tgamma": 1,
    "sin": 1, "cos": 1, "floor": 1, "ceil": 1, "trunc": 1, "round": 1, "rint": 1, "nearbyint": 1,
    "fabs": 1, "abs": 1, "isnan": 1, "isinf": 1, "signbit": 1, "finitef": 1, "isfinited": 1,
    "pow": 2, "atan2": 2, "fmod": 2, "hypot": 2, "fmin": 2, "fmax": 2, "copysign": 2, "remainder": 2,
    "nextafter": 2, "fdim": 2, "div_rn": 2, "fast_expf": 1, "fast_logf": 1, "fast_powf": 2,
    "fma": 3,
}
PREDICATES = ("isnan", "isinf", "signbit", "finitef", "isfinited")


def _make(name: str):
    def fn(*args):
        pass

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"libdevice `__nv_{name}` element by element ({FUNCTIONS[name]} argument(s))."
    stub = builtin(fn)
    stub.__tile_builtin__ = f"libdevice.{name}"
    from ..core import BUILTINS

    BUILTINS[stub] = f"libdevice.{name}"
    return stub


for _name in FUNCTIONS:
    globals()[_name] = _make(_name)
