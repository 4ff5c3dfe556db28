"""Float ops: NaN rules of maximumf vs maxnumf and of cmpf predicates, clampf, per-op rounding in bf16,
fp8 conversions, math ops (erf included) and libdevice externs against float64 references."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from interp_kernels import bf16, f16, f32, f64, i1, i32, run_elementwise

from tileworkbench.errors import CompilationError, InterpreterError
from tileworkbench.ir.ops import arith, tt
from tileworkbench.ir.ops import math as math_ops
from tileworkbench.ir.types import ScalarType

RNG = np.random.default_rng(5)
NAN = np.nan
A = np.array([1.0, NAN, NAN, -2.0, 0.5, np.inf, -np.inf, 3.0], np.float32)
B = np.array([NAN, 2.0, NAN, -3.0, 0.5, 1.0, NAN, -np.inf], np.float32)


def _binary(cls, a=A, b=B):
    return run_elementwise(
        lambda kb, x, y: kb.binary(cls, x, y), [a, b], [f32, f32], f32, np.float32
    )


def test_maximumf_propagates_nan_and_maxnumf_ignores_it():
    np.testing.assert_array_equal(
        _binary(arith.MaximumFOp), [NAN, NAN, NAN, -2.0, 0.5, np.inf, NAN, 3.0]
    )
    np.testing.assert_array_equal(
        _binary(arith.MaxNumFOp), [1.0, 2.0, NAN, -2.0, 0.5, np.inf, -np.inf, 3.0]
    )
    np.testing.assert_array_equal(
        _binary(arith.MinimumFOp), [NAN, NAN, NAN, -3.0, 0.5, 1.0, NAN, -np.inf]
    )
    np.testing.assert_array_equal(
        _binary(arith.MinNumFOp), [1.0, 2.0, NAN, -3.0, 0.5, 1.0, -np.inf, -np.inf]
    )


@pytest.mark.parametrize(
    "predicate, ref",
    [
        ("oeq", lambda a, b: a == b),
        ("one", lambda a, b: a < b or a > b),
        ("olt", lambda a, b: a < b),
        ("oge", lambda a, b: a >= b),
        ("une", lambda a, b: a != b),
        ("ord", lambda a, b: not (math.isnan(a) or math.isnan(b))),
        ("uno", lambda a, b: math.isnan(a) or math.isnan(b)),
        ("ult", lambda a, b: not a >= b),
    ],
)
def test_cmpf_ordered_and_unordered_predicates(predicate, ref):
    got = run_elementwise(
        lambda kb, x, y: kb.cmpf(predicate, x, y), [A, B], [f32, f32], i1, np.bool_
    )
    np.testing.assert_array_equal(got, [ref(float(a), float(b)) for a, b in zip(A, B)])


@pytest.mark.parametrize("propagate", [True, False])
def test_clampf_nan_handling(propagate):
    x = np.array([NAN, -5.0, 0.25, 9.0], np.float32)
    lo, hi = np.full(4, -1.0, np.float32), np.full(4, 1.0, np.float32)

    def build(kb, v, low, high):
        return kb.op(tt.ClampFOp, [v.type], x=v, lo=low, hi=high, propagate_nan=propagate)

    got = run_elementwise(build, [x, lo, hi], [f32, f32, f32], f32, np.float32)
    np.testing.assert_array_equal(got, [NAN if propagate else -1.0, -1.0, 0.25, 1.0])


def test_bf16_rounds_after_every_op():
    """(a * b) + c in bf16 rounds the product before the add, unlike one float32 fma."""
    a = RNG.standard_normal(64).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal(64).astype(ml_dtypes.bfloat16)
    c = RNG.standard_normal(64).astype(ml_dtypes.bfloat16)

    def build(kb, x, y, z):
        return kb.binary(arith.AddFOp, kb.binary(arith.MulFOp, x, y), z)

    got = run_elementwise(build, [a, b, c], [bf16] * 3, bf16, ml_dtypes.bfloat16)
    product = (a.astype(np.float64) * b.astype(np.float64)).astype(ml_dtypes.bfloat16)
    ref = (product.astype(np.float64) + c.astype(np.float64)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), ref.astype(np.float32))


def test_f16_math_stays_in_f16():
    x = (RNG.standard_normal(64) * 3).astype(np.float16)
    got = run_elementwise(lambda kb, v: kb.unary(math_ops.ExpOp, v), [x], [f16], f16, np.float16)
    np.testing.assert_allclose(got.astype(np.float64), np.exp(x.astype(np.float64)), rtol=1e-3)


@pytest.mark.parametrize(
    "name, dtype", [("f8e4nv", ml_dtypes.float8_e4m3fn), ("f8e5", ml_dtypes.float8_e5m2)]
)
def test_fp8_round_trip_saturates(name, dtype):
    fp8 = ScalarType(name)
    x = np.concatenate(
        [RNG.standard_normal(56) * 4, [1e6, -1e6, 0.0, NAN, np.inf, -np.inf, 1e-9, -3.3]]
    ).astype(np.float32)
    got = run_elementwise(lambda kb, v: kb.cast(arith.TruncFOp, v, fp8), [x], [f32], fp8, dtype)
    limit = float(ml_dtypes.finfo(dtype).max)
    ref = np.clip(x.astype(np.float64), -limit, limit).astype(dtype)  # satfinite
    np.testing.assert_array_equal(got.astype(np.float32), ref.astype(np.float32))
    back = run_elementwise(
        lambda kb, v: kb.cast(arith.ExtFOp, v, f32), [got], [fp8], f32, np.float32
    )
    np.testing.assert_array_equal(back, ref.astype(np.float32))


MATH_CASES = [
    (math_ops.ExpOp, np.exp),
    (math_ops.Exp2Op, np.exp2),
    (math_ops.LogOp, np.log),
    (math_ops.Log2Op, np.log2),
    (math_ops.SqrtOp, np.sqrt),
    (math_ops.RsqrtOp, lambda v: 1 / np.sqrt(v)),
    (math_ops.SinOp, np.sin),
    (math_ops.CosOp, np.cos),
    (math_ops.FloorOp, np.floor),
    (math_ops.CeilOp, np.ceil),
    (math_ops.AbsFOp, np.abs),
    (math_ops.ErfOp, np.vectorize(math.erf)),
]


@pytest.mark.parametrize("cls, ref", MATH_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_math_ops_match_float64(cls, ref):
    x = (RNG.standard_normal(256) * 2).astype(np.float32)
    if cls in (math_ops.LogOp, math_ops.Log2Op, math_ops.SqrtOp, math_ops.RsqrtOp):
        x = np.abs(x) + np.float32(1e-3)
    got = run_elementwise(lambda kb, v: kb.unary(cls, v), [x], [f32], f32, np.float32)
    # On a GPU these four take Triton's fast path (lg2/sin/cos.approx), whose error is bounded in
    # absolute terms (about 2^-21 near 1 and over [-pi, pi]): relative error near a zero of the result
    # is not meaningful there.
    atol = 2e-6 if cls in (math_ops.LogOp, math_ops.Log2Op, math_ops.SinOp, math_ops.CosOp) else 1e-30
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=2e-6, atol=atol)


def test_erf_in_f64_is_accurate():
    x = np.linspace(-6, 6, 512)  # compiled targets take power-of-two tiles (as Triton)
    got = run_elementwise(lambda kb, v: kb.unary(math_ops.ErfOp, v), [x], [f64], f64, np.float64)
    np.testing.assert_allclose(got, [math.erf(v) for v in x], rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize(
    "symbol, ref, arity",
    [
        ("__nv_tanhf", np.tanh, 1),
        ("__nv_expm1f", np.expm1, 1),
        ("__nv_log1pf", np.log1p, 1),
        ("__nv_powf", np.power, 2),
        ("__nv_atan2f", np.arctan2, 2),
        ("__nv_erfcf", np.vectorize(math.erfc), 1),
    ],
)
def test_libdevice_externs(symbol, ref, arity):
    xs = [
        np.abs(RNG.standard_normal(128)).astype(np.float32) + np.float32(0.1) for _ in range(arity)
    ]

    def build(kb, *values):
        return kb.op(tt.ExternElementwiseOp, [values[0].type], symbol=symbol, args=list(values))

    got = run_elementwise(build, xs, [f32] * arity, f32, np.float32)
    np.testing.assert_allclose(got, ref(*[x.astype(np.float64) for x in xs]), rtol=2e-6)


def test_libdevice_predicate_returns_int():
    x = np.array([1.0, NAN, np.inf, -0.0], np.float32)

    def build(kb, v):
        return kb.op(
            tt.ExternElementwiseOp, [v.type.with_element(i32)], symbol="__nv_isnanf", args=[v]
        )

    got = run_elementwise(build, [x], [f32], i32, np.int32)
    np.testing.assert_array_equal(got, [0, 1, 0, 0])


# the interpreter's message; the cpu target refuses the symbol at compile time (test_cpu_target)
@pytest.mark.only_on("interpreter")
def test_unknown_extern_names_the_symbol():
    def build(kb, v):
        return kb.op(tt.ExternElementwiseOp, [v.type], symbol="__nv_frobnicatef", args=[v])

    with pytest.raises((InterpreterError, CompilationError), match="frobnicatef"):
        run_elementwise(build, [np.ones(4, np.float32)], [f32], f32, np.float32)


@pytest.mark.only_on("interpreter")  # its refusal
def test_inline_asm_runs_only_on_the_gpu():
    def build(kb, v):
        fields = {"asm_string": "mov.b32 $0, $1;", "constraints": "=r,r", "args": [v]}
        return kb.op(tt.ElementwiseInlineAsmOp, [v.type], **fields)  # ASM LINE

    with pytest.raises(InterpreterError, match="inline_asm_elementwise runs only on") as info:
        run_elementwise(build, [np.ones(4, np.float32)], [f32], f32, np.float32)
    assert "# ASM LINE" in str(info.value)


def test_fma_and_remf():
    a, b, c = (RNG.standard_normal(64).astype(np.float32) for _ in range(3))
    fma = run_elementwise(
        lambda kb, x, y, z: kb.op(math_ops.FmaOp, [x.type], a=x, b=y, c=z),
        [a, b, c],
        [f32] * 3,
        f32,
        np.float32,
    )
    np.testing.assert_allclose(fma, a.astype(np.float64) * b + c, rtol=1e-6, atol=1e-7)
    rem = run_elementwise(
        lambda kb, x, y: kb.binary(arith.RemFOp, x, y), [a * 8, b], [f32, f32], f32, np.float32
    )
    np.testing.assert_allclose(rem, np.fmod(a.astype(np.float64) * 8, b), rtol=1e-5, atol=1e-6)


def test_min_max_order_signed_zeros_and_commute():
    """-0.0 < +0.0: max is -0.0 only when both are, min is -0.0 when either is, in either order."""
    a = np.array([-0.0, 0.0, -0.0, 0.0], np.float32)
    b = np.array([0.0, -0.0, -0.0, 0.0], np.float32)
    both, either = np.signbit(a) & np.signbit(b), np.signbit(a) | np.signbit(b)
    for cls, negative in (
        (arith.MaximumFOp, both),
        (arith.MaxNumFOp, both),
        (arith.MinimumFOp, either),
        (arith.MinNumFOp, either),
    ):
        np.testing.assert_array_equal(np.signbit(_binary(cls, a, b)), negative)
        np.testing.assert_array_equal(np.signbit(_binary(cls, b, a)), negative)
