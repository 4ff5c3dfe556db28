"""The float `tl.extra.libdevice` functions (those with fp32 and fp64 versions), called from a real
kernel in fp32 and fp64, resolve to interpreter implementations that match float64 NumPy references.
The integer, conversion, rounding-mode and Bessel functions: tests/frontend/test_libdevice_more.py."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

import tileworkbench as tw
from tileworkbench.backends.interpreter import run
from tileworkbench.language.extra.libdevice import FUNCTIONS

RNG = np.random.default_rng(8)
BLOCK = 32


def _erfinv(x):
    # invert math.erf by bisection: an independent reference for the interpreter's Newton iteration
    def one(v):
        lo, hi = -6.0, 6.0
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2

    return np.vectorize(one)(x)


REFERENCES = {
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": lambda x: np.arccosh(x + 1),
    "atanh": np.arctanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: 10.0**x,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "erf": np.vectorize(math.erf),
    "erfc": np.vectorize(math.erfc),
    "erfinv": _erfinv,
    "lgamma": np.vectorize(math.lgamma),
    "tgamma": np.vectorize(math.gamma),
    "sin": np.sin,
    "cos": np.cos,
    "floor": lambda x: np.floor(x * 10),
    "ceil": lambda x: np.ceil(x * 10),
    "trunc": lambda x: np.trunc(x * 10),
    "round": lambda x: np.floor(x * 10 + 0.5),
    "rint": lambda x: np.rint(x * 10),
    "nearbyint": lambda x: np.rint(x * 10),
    "fabs": lambda x: np.abs(-x),
    "abs": lambda x: np.abs(-x),
    "isnan": np.isnan,
    "isinf": np.isinf,
    "signbit": lambda x: np.signbit(-x),
    "finitef": np.isfinite,
    "isfinited": np.isfinite,
    "pow": np.power,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    "hypot": np.hypot,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "copysign": lambda x, y: np.copysign(x, -y),
    "remainder": np.vectorize(math.remainder),
    "nextafter": np.nextafter,
    "fdim": lambda x, y: np.maximum(x - y, 0),
    "div_rn": np.divide,
    "fast_expf": np.exp,
    "fast_logf": np.log,
    "fast_powf": np.power,
    "fma": lambda x, y, z: x * y + z,
}
# What each function is called on, so every call has a meaningful (finite) answer.
ARGUMENTS = {
    "acosh": "x + 1",
    "floor": "x * 10",
    "ceil": "x * 10",
    "trunc": "x * 10",
    "round": "x * 10",
    "rint": "x * 10",
    "nearbyint": "x * 10",
    "fabs": "-x",
    "abs": "-x",
    "signbit": "-x",
    "copysign": "x, -y",
}


def _kernel_source(names: list[str]) -> str:
    lines = [
        "import tileworkbench as tw",
        "import tileworkbench.language as tl",
        "from tileworkbench.language.extra import libdevice",
        "",
        "",
        "@tw.jit",
        "def all_libdevice(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):",
        "    offs = tl.arange(0, BLOCK)",
        "    x = tl.load(x_ptr + offs)",
        "    y = tl.load(y_ptr + offs)",
        "    z = tl.load(z_ptr + offs)",
    ]
    for i, name in enumerate(names):
        args = ARGUMENTS.get(name, ", ".join("xyz"[: FUNCTIONS[name]]))
        lines.append(
            f"    tl.store(out_ptr + {i} * BLOCK + offs, libdevice.{name}({args}).to(tl.float64))"
        )
    return "\n".join(lines) + "\n"


def _compile(tmp_path, names, type_name):
    path = tmp_path / "libdevice_kernel.py"
    path.write_text(_kernel_source(names))
    spec = importlib.util.spec_from_file_location("libdevice_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {
        "x_ptr": f"*{type_name}",
        "y_ptr": f"*{type_name}",
        "z_ptr": f"*{type_name}",
        "out_ptr": "*fp64",
    }
    return tw.compile(
        module.all_libdevice, signature=signature, constexprs={"BLOCK": BLOCK}, target="interpreter"
    )


def _reference(name, x, y, z):
    args = {"acosh": (x,), "copysign": (x, y)}.get(name, (x, y, z)[: FUNCTIONS[name]])
    return REFERENCES[name](*args)


def test_every_library_function_has_a_reference():
    assert set(REFERENCES) <= set(FUNCTIONS)


@pytest.mark.parametrize(
    "type_name, dtype, rtol", [("fp32", np.float32, 2e-6), ("fp64", np.float64, 1e-12)]
)
def test_libdevice_from_a_kernel(tmp_path, type_name, dtype, rtol):
    names = [n for n in REFERENCES if dtype == np.float32 or not n.startswith("fast_")]
    compiled = _compile(tmp_path, names, type_name)
    x = RNG.uniform(0.1, 0.9, BLOCK).astype(dtype)
    y = RNG.uniform(0.5, 2.0, BLOCK).astype(dtype)
    z = RNG.standard_normal(BLOCK).astype(dtype)
    out = np.full(len(names) * BLOCK, np.nan)
    run(compiled.ir, [x, y, z, out], (1,))
    wide = [v.astype(np.float64) for v in (x, y, z)]
    for i, name in enumerate(names):
        ref = np.asarray(_reference(name, *wide), np.float64)
        if name == "nextafter":  # the next representable value of the argument's own type
            ref = np.nextafter(x, y).astype(np.float64)
        elif dtype == np.float32:
            ref = ref.astype(np.float32).astype(np.float64)  # computed in f64, rounded once
        got = out[i * BLOCK : (i + 1) * BLOCK]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-300, err_msg=name)
