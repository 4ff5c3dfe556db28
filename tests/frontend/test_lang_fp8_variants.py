"""Triton's other fp8 types: tl.float8e4b8 and tl.float8e5b16 (ml_dtypes' e4m3fnuz and e5m2fnuz) run in
the interpreter; tl.float8e4b15 exists (test_core.py names it) but is refused with a clear error; dtype
attributes (`exponent_bias`, int limits); TensorWrapper / reinterpret views of torch tensors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from fe_util import poisoned

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends import is_gpu
from tileworkbench.errors import CompilationError

BIASES = {"float8e4b15": 15, "float8e4nv": 7, "float8e4b8": 8, "float8e5": 15, "float8e5b16": 16,
          "float16": 15, "bfloat16": 127, "float32": 127, "float64": 1023}


@pytest.mark.parametrize("name", list(BIASES))
def test_exponent_bias_and_mantissa(name):
    dt = getattr(tl, name)
    assert dt.exponent_bias == BIASES[name]
    if name in ("float8e4b8", "float8e5b16"):
        info = ml_dtypes.finfo({"float8e4b8": ml_dtypes.float8_e4m3fnuz,
                                "float8e5b16": ml_dtypes.float8_e5m2fnuz}[name])
        assert dt.fp_mantissa_width == info.nmant
        assert info.minexp == 1 - dt.exponent_bias
    assert repr(dt) == f"triton.language.{name}"


def test_fp8_variant_predicates_and_int_limits():
    assert tl.float8e4b15.is_fp8e4b15() and tl.float8e4b8.is_fp8e4b8() and tl.float8e5b16.is_fp8e5b16()
    assert all(dt.is_fp8() and dt.is_floating() for dt in (tl.float8e4b15, tl.float8e4b8, tl.float8e5b16))
    assert tl.dtype("float8_e4m3fnuz") == tl.float8e4b8 and tl.dtype("float8_e5m2fnuz") == tl.float8e5b16
    assert tl.int8.get_int_max_value() == 127 and tl.int8.get_int_min_value() == -128
    assert tl.uint16.get_int_max_value() == 65535 and tl.uint16.get_int_min_value() == 0
    assert tl.int32.is_int32() and tl.uint64.is_uint64() and not tl.int32.is_uint32()
    with pytest.raises(AttributeError, match="not a floating-point type"):
        tl.int32.exponent_bias


@tw.jit
def through_fp8_kernel(x_ptr, out_ptr, N: tl.constexpr, FP8: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(FP8).to(tl.float32))


@pytest.mark.parametrize("name, ml_type", [("float8e4b8", ml_dtypes.float8_e4m3fnuz),
                                           ("float8e5b16", ml_dtypes.float8_e5m2fnuz)])
@pytest.mark.only_on("interpreter")  # NVIDIA GPUs have no fnuz fp8 (Triton: AMD CDNA3 only)
def test_fnuz_fp8_round_trip_in_interpreter(rng, name, ml_type):
    x = (rng.standard_normal(64) * 4).astype(np.float32)
    out = poisoned((64,), np.float32)
    through_fp8_kernel[(1,)](x, out, 64, getattr(tl, name))
    np.testing.assert_array_equal(out, x.astype(ml_type).astype(np.float32))


def test_float8e4b15_is_refused_with_place_and_hint():
    with pytest.raises(CompilationError) as info:
        through_fp8_kernel[(1,)](np.ones(8, np.float32), np.ones(8, np.float32), 8, tl.float8e4b15)
    message = str(info.value)
    assert "tl.float8e4b15 is not supported" in message and "test_lang_fp8_variants.py" in message
    assert "tl.float8e4nv" in message  # the hint


@tw.jit
def load_as_float_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


# cpu: the launcher does not unwrap tl.TensorWrapper yet (issue 13)
@pytest.mark.only_on("interpreter", "cuda")
def test_tensor_wrapper_views_torch_memory_as_unsigned_and_fp8(rng, target):
    torch = pytest.importorskip("torch")
    from tileworkbench.runtime.tensor_wrapper import TensorWrapper, reinterpret

    def on_target(values):  # a torch tensor where the target's kernels read memory
        return torch.as_tensor(target.put(values))

    raw = on_target(rng.integers(-2**31, 2**31 - 1, 16, dtype=np.int32))
    wrapped = reinterpret(raw, tl.uint32)
    assert isinstance(wrapped, TensorWrapper) and wrapped.shape == raw.shape
    out = poisoned((16,), np.float32)
    load_as_float_kernel[(1,)](wrapped, out, 16)
    np.testing.assert_array_equal(out, raw.cpu().numpy().view(np.uint32).astype(np.float32))
    assert reinterpret(wrapped, torch.int32) is raw  # back to the base's own dtype

    fp8_bits = on_target(rng.integers(1, 127, 16, dtype=np.int8))
    fnuz = reinterpret(fp8_bits, tl.float8e5b16)
    if is_gpu(target):  # no fnuz fp8 on NVIDIA GPUs (Triton has them on AMD CDNA3 only)
        with pytest.raises(CompilationError, match="is not supported on NVIDIA GPUs"):
            load_as_float_kernel[(1,)](fnuz, out, 16)
    else:
        load_as_float_kernel[(1,)](fnuz, out, 16)
        want = fp8_bits.numpy().view(ml_dtypes.float8_e5m2fnuz).astype(np.float32)
        np.testing.assert_array_equal(out, want)
    with pytest.raises(TypeError, match="cannot reinterpret"):
        reinterpret([1, 2], tl.uint8)


def test_float8e4b15_signature_names_the_argument():
    with pytest.raises(CompilationError, match="argument 'x_ptr'.*float8e4b15"):
        tw.compile(load_as_float_kernel, signature={"x_ptr": "*fp8e4b15", "out_ptr": "*fp32"},
                   constexprs={"N": 8}, target="interpreter")


def test_fnuz_fp8_refused_by_nvptx_at_the_cast():
    place = r"test_lang_fp8_variants.py:\d+:\d+: "
    with pytest.raises(CompilationError, match=place + "f8e4b8 is not supported on NVIDIA"):
        tw.compile(through_fp8_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                   constexprs={"N": 8, "FP8": tl.float8e4b8}, target="sm_90")


def test_tensor_wrapper_has_tritons_import_path():
    from tileworkbench.runtime import jit, tensor_wrapper

    assert jit.TensorWrapper is tensor_wrapper.TensorWrapper and jit.reinterpret is tensor_wrapper.reinterpret
