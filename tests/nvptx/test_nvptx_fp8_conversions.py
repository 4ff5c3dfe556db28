"""The software fp8 conversions used before sm_89 (e4m3fn both ways, f32 -> e4m3fn/e5m2), JIT-compiled for the
host with llvmlite and compared with ml_dtypes on every fp8 code and on many floats."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

from tileworkbench.backends.llvm.llvm_types import F32, I8
from tileworkbench.backends.llvm.lowering import arith as lower_arith


class _HostLowering:
    """Just what the conversion helpers use of a Lowering: a builder and intrinsic calls."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder):
        self.module, self.builder = module, builder

    def call_intrinsic(self, name, ret, args):
        fn = self.module.globals.get(name) or ir.Function(
            self.module, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.builder.call(fn, args)


def _jit(build, arg_type, ret_type):
    module = ir.Module(name="fp8")
    fn = ir.Function(module, ir.FunctionType(ret_type, [arg_type]), "convert")
    builder = ir.IRBuilder(fn.append_basic_block())
    builder.ret(build(_HostLowering(module, builder), fn.args[0]))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple().create_target_machine()
    parsed = llvm.parse_assembly(str(module))
    engine = llvm.create_mcjit_compiler(parsed, target)
    engine.finalize_object()
    address = engine.get_function_address("convert")
    ctype = {I8: ctypes.c_uint8, F32: ctypes.c_float}
    return engine, ctypes.CFUNCTYPE(ctype[ret_type], ctype[arg_type])(address)


def test_e4m3_to_f32_every_code():
    _engine, convert = _jit(lower_arith._e4m3_to_f32_soft, I8, F32)
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    got = np.array([convert(int(c)) for c in codes], dtype=np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_f32_to_fp8_rounds_like_ml_dtypes(kind):
    build = lower_arith._f32_to_e4m3_soft if kind == "e4m3" else lower_arith._f32_to_e5m2_soft
    dtype = ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2
    _engine, convert = _jit(build, F32, I8)
    rng = np.random.default_rng(3)
    limit = 440.0 if kind == "e4m3" else 57000.0
    # every fp8 value, the midpoints between neighbours (ties to even), and random values
    exact = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
    exact = np.sort(exact[np.isfinite(exact) & (np.abs(exact) <= limit)])
    mids = (exact[1:] + exact[:-1]) / 2
    samples = np.concatenate([exact, mids, rng.uniform(-limit, limit, 2000).astype(np.float32),
                              rng.standard_normal(2000).astype(np.float32) * 0.01])
    got = np.array([convert(float(v)) for v in samples], dtype=np.uint8)
    want = samples.astype(dtype).view(np.uint8)
    assert np.array_equal(got, want), samples[got != want][:10]
    top = 0x7E if kind == "e4m3" else 0x7B
    assert convert(1e6) == top and convert(-float("inf")) == 0x80 | top  # saturates like .satfinite
    assert convert(float("nan")) & 0x7F == 0x7F
