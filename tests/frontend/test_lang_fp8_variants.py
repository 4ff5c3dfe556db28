"""Triton's other fp8 types: tl.float8e4b8 and tl.float8e5b16 (ml_dtypes' e4m3fnuz and e5m2fnuz) and
tl.float8e4b15 (e4m3 with bias 15, no NumPy format: checked against a float64 decoding of its bits) run
in the interpreter and are refused by the NVIDIA lowering; dtype attributes (`exponent_bias`, int
limits); TensorWrapper / reinterpret views of torch tensors."""

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


def e4b15_numbers(bits: np.ndarray) -> np.ndarray:
    """float64 numbers of fp8e4b15 bit patterns: 1 sign, 4 exponent (bias 15), 3 mantissa bits; the
    all-ones exponent and mantissa is NaN, there is no infinity (Triton's test_core decoding)."""
    bits = bits.astype(np.int64) & 0xFF
    sign = np.where(bits >> 7, -1.0, 1.0)
    exponent, fraction = (bits >> 3) & 0xF, bits & 7
    number = np.where(exponent == 0, 2.0**-14 * fraction / 8, 2.0 ** (exponent - 15.0) * (1 + fraction / 8))
    return np.where((bits & 0x7F) == 0x7F, np.nan, sign * number)


def e4b15_round(x: np.ndarray) -> np.ndarray:
    """The fp8e4b15 number nearest each of `x` (ties to an even mantissa), saturating at +-1.75."""
    codes = np.array([c for c in range(256) if (c & 0x7F) != 0x7F])
    numbers = e4b15_numbers(codes)
    distance = np.abs(x.astype(np.float64)[:, None] - numbers[None, :])
    best = distance.min(axis=1, keepdims=True)
    tied = distance == best
    preference = tied.astype(int) + (tied & ((codes[None, :] & 1) == 0))  # an even mantissa first
    return numbers[preference.argmax(axis=1)]


@pytest.mark.only_on("interpreter")  # the NVIDIA and cpu lowerings refuse fp8e4b15 (below)
def test_float8e4b15_round_trip_matches_its_bit_format(rng):
    x = np.concatenate([rng.standard_normal(96) * 0.6, rng.standard_normal(26) * 2.0**-15,
                        [3.0, -5.0, 1.75, 2.0**-17, 0.0, -2.0**-19]]).astype(np.float32)
    out = poisoned(x.shape, np.float32)
    through_fp8_kernel[(1,)](x, out, len(x), tl.float8e4b15)
    np.testing.assert_array_equal(out.astype(np.float64), e4b15_round(x))


@tw.jit
def e4b15_kernel(x_ptr, abs_ptr, wide_ptr, a_ptr, b_ptr, dot_ptr, N: tl.constexpr, M: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(abs_ptr + offs, tl.abs(x))
    tl.store(wide_ptr + offs, x)  # an implicit cast to the pointee, float16
    rows, cols = tl.arange(0, M)[:, None], tl.arange(0, M)[None, :]
    a, b = tl.load(a_ptr + rows * M + cols), tl.load(b_ptr + rows * M + cols)
    tl.store(dot_ptr + rows * M + cols, tl.dot(a, b, out_dtype=tl.float32))


@pytest.mark.only_on("interpreter")
def test_float8e4b15_loads_abs_casts_and_dots_by_its_bits(rng):
    torch = pytest.importorskip("torch")
    from tileworkbench.runtime.tensor_wrapper import reinterpret

    def fp8(bits):
        return reinterpret(torch.from_numpy(bits), tl.float8e4b15)

    bits = rng.integers(-128, 128, 256).astype(np.int8)
    bits[(bits.view(np.uint8) & 0x7F) == 0x7F] = 0x11  # no NaN patterns
    a_bits, b_bits = (rng.integers(-128, 128, (16, 16)).astype(np.int8) & np.int8(0x5F) for _ in "ab")
    abs_bits = np.full(256, 0x7F, np.int8)
    wide, dot = poisoned((256,), np.float16), poisoned((16, 16), np.float32)
    e4b15_kernel[(1,)](fp8(bits), fp8(abs_bits), wide, fp8(a_bits), fp8(b_bits), dot, 256, 16)
    numbers = e4b15_numbers(bits)
    np.testing.assert_array_equal(e4b15_numbers(abs_bits), np.abs(numbers))
    np.testing.assert_array_equal(wide.astype(np.float64), numbers)  # every e4b15 number is an f16
    want = e4b15_numbers(a_bits) @ e4b15_numbers(b_bits)
    np.testing.assert_allclose(dot, want, rtol=2e-6, atol=1e-9)


def test_float8e4b15_is_refused_by_nvptx_naming_why():
    with pytest.raises(CompilationError, match="f8e4b15 is not supported on NVIDIA GPUs .*sm_90"):
        tw.compile(through_fp8_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                   constexprs={"N": 8, "FP8": tl.float8e4b15}, target="sm_90")


@tw.jit
def load_as_float_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


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
    elif target == "cpu":  # the cpu target shares the NVIDIA lowering's fp8 formats
        with pytest.raises(CompilationError, match="f8e5b16 is not supported on the cpu target"):
            load_as_float_kernel[(1,)](fnuz, out, 16)
    else:
        load_as_float_kernel[(1,)](fnuz, out, 16)
        want = fp8_bits.numpy().view(ml_dtypes.float8_e5m2fnuz).astype(np.float32)
        np.testing.assert_array_equal(out, want)
    with pytest.raises(TypeError, match="cannot reinterpret"):
        reinterpret([1, 2], tl.uint8)


def test_fnuz_fp8_refused_by_nvptx_at_the_cast():
    place = r"test_lang_fp8_variants.py:\d+:\d+: "
    with pytest.raises(CompilationError, match=place + "f8e4b8 is not supported on NVIDIA"):
        tw.compile(through_fp8_kernel, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                   constexprs={"N": 8, "FP8": tl.float8e4b8}, target="sm_90")


def test_tensor_wrapper_has_tritons_import_path():
    from tileworkbench.runtime import jit, tensor_wrapper

    assert jit.TensorWrapper is tensor_wrapper.TensorWrapper and jit.reinterpret is tensor_wrapper.reinterpret
