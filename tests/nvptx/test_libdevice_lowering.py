"""libdevice on the NVPTX back end: a representative of every family (rounded arithmetic, conversions,
reinterpretations, integer bit functions, Bessel and error functions) compiles and assembles with
ptxas; on a GPU (marked `gpu`), every overload of every function agrees with the interpreter."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.language.extra import libdevice
from tileworkbench.language.extra.libdevice import SIGNATURES


@tw.jit
def families_kernel(f_ptr, d_ptr, i_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    f, d, i = tl.load(f_ptr + offs), tl.load(d_ptr + offs), tl.load(i_ptr + offs)
    acc = libdevice.add_rz(f, f) + libdevice.div_ru(d, d) + libdevice.fma_rd(f, f, f)
    acc += libdevice.float2int_rz(f) + libdevice.ull2double_rd(i.to(tl.uint64)) + libdevice.int_as_float(i)
    acc += libdevice.clz(i) + libdevice.popc(i) + libdevice.brev(i) + libdevice.mulhi(i, i)
    acc += libdevice.byte_perm(i, i, i) + libdevice.hadd(i, i) + libdevice.mul24(i, i)
    acc += libdevice.j0(f) + libdevice.yn(i, d) + libdevice.cyl_bessel_i1(f) + libdevice.normcdfinv(d)
    acc += libdevice.erfcx(f) + libdevice.ilogb(d) + libdevice.ldexp(f, i) + libdevice.rnorm3d(f, f, f)
    acc += libdevice.fast_dividef(f, f) + libdevice.hiloint2double(i, i) + libdevice.llrint(d)
    tl.store(out_ptr + offs, acc)


@needs_ptxas
def test_every_family_assembles_for_sm_90(tmp_path):
    signature = {"f_ptr": "*fp32", "d_ptr": "*fp64", "i_ptr": "*i32", "out_ptr": "*fp64"}
    compiled = tw.compile(families_kernel, signature=signature, constexprs={"N": 32}, target="sm_90")
    result = run_ptxas(compiled.asm["ptx"], "sm_90", tmp_path)
    assert result.returncode == 0, result.stderr


# symbols whose results are exact: explicit rounding modes, conversions, reinterpretations, bit functions
_EXACT = re.compile(r"_r[nzdu]\b|2(float|double|u?int|u?ll|hiint|loint)|_as_|clz|popc|ffs|brev|mulhi|mul64hi|"
                    r"mul24|hadd|byte_perm|sad\b|ilogb|llrint|llround")
_TYPES = {"i32": "int32", "i64": "int64", "u32": "uint32", "u64": "uint64", "fp32": "float32",
          "fp64": "float64"}


def _all_overloads_module(tmp_path):
    """A kernel storing every overload of every function, each on its own row of the output; returns
    (kernel, row labels)."""
    lines = ["import tileworkbench as tw", "import tileworkbench.language as tl",
             "from tileworkbench.language.extra import libdevice", "", "", "@tw.jit",
             "def every_overload(x_ptr, out_ptr, N: tl.constexpr):", "    offs = tl.arange(0, N)",
             "    x = tl.load(x_ptr + offs)"]
    labels = []
    for name, overloads in SIGNATURES.items():
        for types, symbol, _ in overloads:
            args = ", ".join(f"(x + {k}).to(tl.{_TYPES[t]})" for k, t in enumerate(types.split(",")))
            row = len(labels)
            lines.append(f"    tl.store(out_ptr + {row} * N + offs, libdevice.{name}({args}).to(tl.float64))")
            labels.append(f"{name}({types}) {symbol}")
    path = tmp_path / "every_overload.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("every_overload", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.every_overload, labels


@pytest.mark.gpu
def test_every_overload_on_the_gpu_matches_the_interpreter(tmp_path):
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    import cupy

    kernel, labels = _all_overloads_module(tmp_path)
    rows = len(labels)
    x = np.random.default_rng().uniform(0.1, 0.9, 32)
    want = np.full(rows * 32, np.nan)
    from tileworkbench.config import config

    saved = config.interpret
    config.interpret = True
    try:
        kernel[(1,)](x, want, 32)
    finally:
        config.interpret = saved
    got = cupy.full(rows * 32, np.nan)
    kernel[(1,)](cupy.asarray(x), got, 32)
    # libdevice's fp32 functions are within a few ulps (fast_* a little more); the interpreter rounds
    # a float64 result once. Exact ones (rounding modes, conversions, bits) must agree exactly.
    got = got.get().reshape(rows, 32)
    want = want.reshape(rows, 32)
    close = np.isclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True).all(axis=1)
    exact = np.array([bool(_EXACT.search(label)) for label in labels])
    close &= ~exact | np.array([np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want)])
    assert close.all(), "differ: " + "; ".join(
        f"{label}: max |diff| {np.nanmax(np.abs(g - w)):.3g}" for label, g, w, ok in zip(labels, got, want, close)
        if not ok)


@tw.jit
def unknown_extern_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    symbols = {(tl.float32,): ("__nv_frobnicatef", tl.float32)}
    y = tl.extern_elementwise("libdevice", "", [x], symbols, is_pure=True)
    tl.store(x_ptr + tl.arange(0, N), y)


@needs_ptxas  # libdevice.10.bc is found beside it
def test_an_unknown_libdevice_function_is_a_compilation_error_naming_it():
    """Not an unresolved symbol that ptxas or the driver's loader reports later, in its words."""
    from tileworkbench.errors import CompilationError

    with pytest.raises(CompilationError, match="calls __nv_frobnicatef, which libdevice does not"):
        tw.compile(unknown_extern_kernel, signature={"x_ptr": "*fp32"}, constexprs={"N": 32},
                   target="sm_90", use_cache=False)
