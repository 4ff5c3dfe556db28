"""Property tests of `canonicalize`: random expression DAGs over small tensors give bit-identical
results in the NumPy interpreter before and after the pass (NaN equal to NaN).

The DAGs mix loaded inputs, a scalar argument and constants (special values included), so folding,
identities and splat rewrites all fire; every node is stored, so each one is checked."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from passes_testing import new_func

from tileworkbench.backends.interpreter import run
from tileworkbench.ir import PointerType, ScalarType, TensorType, verify
from tileworkbench.ir.ops import arith, tt
from tileworkbench.ir.types import f16, f32, i1, i8, i32, i64, u32
from tileworkbench.passes import canonicalize, fold

N = 4  # elements per tensor
SETTINGS = settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT_OPS = list(fold.INT_BINARY)
# Not the float min/max ops: the interpreter's np.maximum/np.minimum/np.fmax/np.fmin return their
# first operand for max(-0.0, +0.0), so swapping the operands of these commutative ops
# (constant_to_rhs) changes the interpreter's answer, though IEEE maximum/minimum give +0.0/-0.0
# either way. Their folds are checked in test_constant_fold.py.
FLOAT_OPS = [arith.AddFOp, arith.SubFOp, arith.MulFOp, arith.DivFOp, arith.RemFOp]
_NUMPY = {
    "i8": np.int8,
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "f16": np.float16,
    "f32": np.float32,
}


def int_specials(t: ScalarType) -> list[int]:
    n = t.bitwidth
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t.is_signed else (0, (1 << n) - 1)
    return [0, 1, 2, 3, 7, n - 1, n, lo, hi, fold.stored_int(-1, t), fold.stored_int(-7, t)]


FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e30, 1e-40, math.inf, -math.inf, math.nan, 0.1]


class Dag:
    """Builds a kernel: inputs loaded from pointers, a scalar argument, then random ops."""

    def __init__(self, t: ScalarType):
        self.t = t
        self.tensor = TensorType((N,), t)
        params = [("x0", PointerType(t)), ("x1", PointerType(t)), ("s", t), ("out", PointerType(t))]
        self.func, self.b = new_func(params)
        offs = self.b.value(tt.MakeRangeOp, TensorType((N,), i32), name="offs", start=0, end=N)
        self.offs = offs
        args = self.func.args
        self.pool = [self.load(args[0]), self.load(args[1]), self.splat(args[2])]

    def pointers(self, ptr, offset: int):
        b = self.b
        base = b.value(tt.SplatOp, TensorType((N,), ptr.type), operand=ptr)
        offs = self.offs
        if offset:
            shift = b.value(arith.ConstantOp, offs.type, value=offset)
            offs = b.value(arith.AddIOp, offs.type, lhs=offs, rhs=shift)
        return b.value(tt.AddPtrOp, base.type, ptr=base, offset=offs)

    def load(self, ptr):
        return self.b.value(tt.LoadOp, self.tensor, ptr=self.pointers(ptr, 0))

    def splat(self, scalar):
        return self.b.value(tt.SplatOp, TensorType((N,), scalar.type), operand=scalar)

    def constant(self, value, splat: bool, t: ScalarType | None = None):
        t = t or self.t
        if splat:
            return self.splat(self.b.value(arith.ConstantOp, t, value=value))
        return self.b.value(arith.ConstantOp, TensorType((N,), t), value=value)

    def store_all(self):
        for k, value in enumerate(self.pool):
            self.b.create(tt.StoreOp, ptr=self.pointers(self.func.args[3], k * N), value=value)
        self.b.create(tt.ReturnOp)
        verify(self.func)
        return len(self.pool)


def binary(d: Dag, cls, lhs, rhs):
    return d.b.value(cls, lhs.type, lhs=lhs, rhs=rhs)


def unary(d: Dag, cls, value, t: ScalarType):
    return d.b.value(cls, TensorType((N,), t), operand=value)


def int_round_trip(d: Dag, kind: int, x):
    """A value through a cast and back: trunc/ext pairs and int<->float conversions."""
    t, n = d.t, d.t.bitwidth
    if kind == 0 and n > 8:
        return unary(d, arith.ExtSIOp, unary(d, arith.TruncIOp, x, i8), t)
    if kind == 1 and n < 64:
        return unary(d, arith.TruncIOp, unary(d, arith.ExtUIOp, x, i64), t)
    if kind == 2 and n < 64:
        return unary(d, arith.TruncIOp, unary(d, arith.ExtSIOp, x, i64), t)
    return unary(d, arith.FPToSIOp, unary(d, arith.SIToFPOp, x, f32), t)


def float_round_trip(d: Dag, kind: int, x):
    """A value through a cast and back (f32 <-> f16, bitcasts), or negated."""
    if kind == 0:
        other = f16 if d.t == f32 else f32
        there, back = (
            (arith.TruncFOp, arith.ExtFOp) if d.t == f32 else (arith.ExtFOp, arith.TruncFOp)
        )
        return unary(d, back, unary(d, there, x, other), d.t)
    if kind == 1:
        bits = ScalarType("i32" if d.t == f32 else "i16")
        return unary(d, arith.BitcastOp, unary(d, arith.BitcastOp, x, bits), d.t)
    return unary(d, arith.NegFOp, x, d.t)


def constant_values(t: ScalarType) -> st.SearchStrategy:
    """Mostly the special values identities and folds care about, sometimes any value of `t`."""
    if t.is_int:
        n = t.bitwidth
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t.is_signed else (0, (1 << n) - 1)
        specials, anything = st.sampled_from(int_specials(t)), st.integers(lo, hi)
    else:
        specials = st.sampled_from(FLOAT_SPECIALS)
        anything = st.floats(width=t.bitwidth, allow_nan=False, allow_infinity=False)
    return st.integers(0, 3).flatmap(lambda k: anything if k == 0 else specials)


def grow(d: Dag, data, is_int: bool) -> None:
    """Add one random node to the pool; operands are often fresh constants, so folds chain."""

    def pick():
        if data.draw(st.integers(0, 9)) < 4:
            return d.constant(data.draw(constant_values(d.t)), splat=data.draw(st.booleans()))
        return data.draw(st.sampled_from(d.pool))

    kind = data.draw(st.integers(0, 9))
    if kind <= 5:
        cls = data.draw(st.sampled_from(INT_OPS if is_int else FLOAT_OPS))
        d.pool.append(binary(d, cls, pick(), pick()))
    elif kind == 6:
        value = data.draw(constant_values(d.t))
        d.pool.append(d.constant(value, splat=data.draw(st.booleans())))
    elif kind == 7:
        predicates = arith.INT_PREDICATES if is_int else arith.FLOAT_PREDICATES
        cmp = arith.CmpIOp if is_int else arith.CmpFOp
        lhs, rhs = pick(), pick()
        predicate = data.draw(st.sampled_from(predicates))
        condition = d.b.value(cmp, TensorType((N,), i1), predicate=predicate, lhs=lhs, rhs=rhs)
        d.pool.append(
            d.b.value(
                arith.SelectOp, d.tensor, condition=condition, true_value=pick(), false_value=pick()
            )
        )
    elif kind == 8:
        value = data.draw(st.booleans())
        condition = d.constant(value, splat=data.draw(st.booleans()), t=i1)
        d.pool.append(
            d.b.value(
                arith.SelectOp, d.tensor, condition=condition, true_value=pick(), false_value=pick()
            )
        )
    else:
        round_trip = int_round_trip if is_int else float_round_trip
        d.pool.append(round_trip(d, data.draw(st.integers(0, 3)), pick()))


def random_inputs(t: ScalarType, rng: np.random.Generator, is_int: bool) -> np.ndarray:
    dtype = _NUMPY[t.name]
    if is_int:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=N, dtype=dtype, endpoint=True)
        specials = np.array(int_specials(t), dtype=object).astype(np.int64).astype(dtype)
    else:
        values = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
        with np.errstate(over="ignore"):
            specials = np.array(FLOAT_SPECIALS, dtype=dtype)
    pick = rng.random(N) < 0.5
    values[pick] = rng.choice(specials, size=int(pick.sum()))
    return values


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return bool(
            np.all(
                (a.view(f"u{a.itemsize}") == b.view(f"u{a.itemsize}")) | (np.isnan(a) & np.isnan(b))
            )
        )
    return bool(np.array_equal(a, b))


def check_dag(data, t: ScalarType, is_int: bool) -> None:
    d = Dag(t)
    for _ in range(data.draw(st.integers(2, 14))):
        grow(d, data, is_int)
    count = d.store_all()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x0, x1 = random_inputs(t, rng, is_int), random_inputs(t, rng, is_int)
    s = random_inputs(t, rng, is_int)[0]

    def execute() -> np.ndarray:
        poison = 0x5A if is_int else np.nan  # every element is overwritten by a store
        out = np.full(count * N, poison, dtype=_NUMPY[t.name])
        run(d.func, [x0.copy(), x1.copy(), s, out], grid=(1,))
        return out

    before = execute()
    canonicalize(d.func)
    verify(d.func)
    after = execute()
    assert same_bits(before, after), f"canonicalize changed results:\n{before}\n{after}"


@SETTINGS
@given(data=st.data(), t=st.sampled_from([i32, u32, i8, i64]))
def test_integer_dags_keep_their_results(data, t):
    check_dag(data, t, is_int=True)


@SETTINGS
@given(data=st.data(), t=st.sampled_from([f32, f16]))
def test_float_dags_keep_their_results(data, t):
    check_dag(data, t, is_int=False)
