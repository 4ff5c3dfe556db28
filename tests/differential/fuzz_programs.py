"""The differential fuzzer's programs: a kernel's source and arguments (`Program`), its input data, and
the elementwise ops (integer and float arithmetic, math functions, casts), each emitted as a line of
kernel source and evaluated at once by the oracle (fuzz_oracle.py), so a program and its expected
result cannot drift apart. fuzz_generate.py draws programs from these with hypothesis.
"""

from __future__ import annotations

import itertools
import linecache
from dataclasses import dataclass

import numpy as np
from fuzz_oracle import DTYPES, F32, DType, Value, c_divmod, round_exact, settle

import tileworkbench as tw

INTS = [DTYPES[f"{s}int{b}"] for s in ("", "u") for b in (8, 16, 32, 64)]
FLOATS = [DTYPES[n] for n in ("float16", "bfloat16", "float32", "float64")]
CHAIN_DTYPES = INTS + FLOATS
SHAPES = [(16, 16), (8, 32), (32, 8), (1, 64), (64, 2), (4, 4), (2, 128), (128, 1)]
_NAMES = itertools.count()


@dataclass
class Array:
    """A kernel argument: a pointer's host array (poisoned if it is an output) or an int scalar."""

    name: str
    dtype: DType | None  # None: an i32 scalar
    data: np.ndarray | int
    output: bool = False


@dataclass
class Program:
    name: str
    source: str
    args: list[Array]
    constexprs: dict
    grid: tuple[int, ...]
    num_warps: int
    expected: Value | None = None  # of the output (the last pointer argument)
    written: np.ndarray | None = None  # bool: output elements the kernel writes (others keep poison)
    cross_only: bool = False  # no oracle for this output: the targets must agree with each other

    @property
    def signature(self) -> dict[str, str]:
        return {a.name: ("i32" if a.dtype is None else f"*{a.dtype.sig}") for a in self.args}

    @property
    def output(self) -> Array:
        return next(a for a in self.args if a.output)

    def kernel(self):
        """The `@tw.jit` kernel, compiled from the source registered in linecache (tileworkbench
        reads a kernel's source text)."""
        file = f"<differential {self.name}>"
        linecache.cache[file] = (len(self.source), None, self.source.splitlines(True), file)
        namespace = {"tw": tw, "tl": __import__("tileworkbench.language", fromlist=["x"])}
        exec(compile(self.source, file, "exec"), namespace)
        return namespace[self.name]

    def describe(self) -> str:
        return f"{self.source}\n# grid {self.grid}, num_warps {self.num_warps}, {self.constexprs}"


# -- input data -----------------------------------------------------------------------------------


def input_data(rng: np.random.Generator, dtype: DType, shape, specials: bool) -> np.ndarray:
    """Fresh random values of `dtype`, with the type's edge values (MIN, MAX, 0, -1; NaN, inf,
    subnormals, the largest finite) mixed in when `specials`."""
    if dtype.is_float:
        scale = rng.choice([1.0, 8.0, 0.01])
        data = rng.standard_normal(shape) * scale
        if specials:
            edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, dtype.max, -dtype.max,
                              dtype.tiny / 8, 1.0, -1.0])
            pick = rng.random(shape) < 0.1
            data = np.where(pick, rng.choice(edges, shape), data)
        return round_exact(data, dtype).astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    if rng.random() < 0.5:
        data = rng.integers(max(info.min, -9), min(info.max, 9) + 1, shape, dtype=np.int64)
    else:
        data = rng.integers(info.min, info.max, shape, dtype=dtype.numpy, endpoint=True)
    data = data.astype(dtype.numpy)
    if specials:
        edges = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype.numpy)
        if dtype.signed:
            edges = np.concatenate([edges, np.array([-1], dtype.numpy)])
        data = np.where(rng.random(shape) < 0.15, rng.choice(edges, shape), data)
    return data.astype(dtype.numpy)


def reference_of(data: np.ndarray, dtype: DType) -> np.ndarray:
    return data.astype(np.float64) if dtype.is_float else data.copy()


def poison(dtype: DType, shape) -> np.ndarray:
    if dtype.is_float:
        return np.full(shape, np.nan, np.float64).astype(dtype.numpy)
    return np.full(shape, np.iinfo(dtype.numpy).max - 3, dtype.numpy)


# -- elementwise ops: source and reference together ---------------------------------------------------


class Chain:
    """Builds the kernel body: `new(expr, value)` adds a line `vK = expr`."""

    def __init__(self, shape):
        self.lines: list[str] = []
        self.shape = shape
        self.count = 0

    def new(self, expr: str, dtype: DType, ref, err=None, unchecked=None, parents=()) -> Value:
        name = f"v{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {expr}")
        blocked = np.zeros(self.shape, bool)
        for p in parents:
            blocked = blocked | p.unchecked
        if unchecked is not None:
            blocked = blocked | unchecked
        if dtype.is_float:
            zero = np.zeros(self.shape)
            ref, err, blocked = settle(dtype, ref, zero if err is None else err, blocked)
        else:
            ref = np.asarray(ref).astype(dtype.numpy)
            err = np.zeros(self.shape)
        return Value(name, dtype, np.broadcast_to(ref, self.shape).copy(),
                     np.broadcast_to(err, self.shape).copy(), np.broadcast_to(blocked, self.shape).copy())


def _as_int(value: Value) -> np.ndarray:
    return value.ref.astype(value.dtype.numpy)


def int_binary(chain: Chain, op: str, a: Value, b: Value) -> Value:
    t = a.dtype
    x, y = _as_int(a), _as_int(b)
    with np.errstate(all="ignore"):
        if op in ("+", "-", "*", "&", "|", "^"):
            fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and,
                  "|": np.bitwise_or, "^": np.bitwise_xor}[op]
            return chain.new(f"{a.expr} {op} {b.expr}", t, fn(x, y, dtype=t.numpy), parents=(a, b))
        if op in ("//", "%"):  # the divisor kept away from 0 (and -1, whose MIN // -1 overflows)
            bad = (y == 0) | (y == -1) if t.signed else (y == 0)
            safe = np.where(bad, np.ones_like(y), y)
            q, r = c_divmod(x, safe)
            if _is_literal(b):
                expr = f"{a.expr} {op} {int(safe.flat[0])}"
            else:
                guard = f"(({b.expr} == 0) | ({b.expr} == -1))" if t.signed else f"({b.expr} == 0)"
                expr = f"{a.expr} {op} tl.where({guard}, 1, {b.expr})"
            return chain.new(expr, t, q if op == "//" else r, parents=(a, b))
        if op in ("<<", ">>"):  # the amount kept below the width (wider is undefined in C)
            amount = (y & (t.bits - 1)).astype(t.numpy)
            fn = np.left_shift if op == "<<" else np.right_shift
            shift = str(int(amount.flat[0])) if _is_literal(b) else f"({b.expr} & {t.bits - 1})"
            return chain.new(f"{a.expr} {op} {shift}", t, fn(x, amount), parents=(a, b))
        fn = {"maximum": np.maximum, "minimum": np.minimum}[op]
        return chain.new(f"tl.{op}({a.expr}, {b.expr})", t, fn(x, y), parents=(a, b))


def _is_literal(v: Value) -> bool:
    return v.expr.lstrip("-").replace(".", "").isdigit()


def int_unary(chain: Chain, op: str, a: Value) -> Value:
    x = _as_int(a)
    with np.errstate(all="ignore"):
        if op == "neg":
            return chain.new(f"-{a.expr}", a.dtype, np.negative(x), parents=(a,))
        return chain.new(f"tl.abs({a.expr})", a.dtype, np.abs(x), parents=(a,))  # abs(MIN) wraps


def float_binary(chain: Chain, op: str, a: Value, b: Value) -> Value:
    t = a.dtype
    x, y, ex, ey = a.ref, b.ref, a.err, b.err
    with np.errstate(all="ignore"):
        if op in ("+", "-"):
            ref = x + y if op == "+" else x - y
            return chain.new(f"{a.expr} {op} {b.expr}", t, ref, ex + ey + t.u * (np.abs(x) + np.abs(y)),
                             parents=(a, b))
        if op == "*":
            ref = x * y
            err = ex * np.abs(y) + ey * np.abs(x) + ex * ey + t.u * np.abs(ref)
            zero_inf = (np.isinf(x) & (np.abs(y) <= ey)) | (np.isinf(y) & (np.abs(x) <= ex))
            return chain.new(f"{a.expr} * {b.expr}", t, ref, err, zero_inf, parents=(a, b))
        if op == "%":  # C's fmod (the dividend's sign); b an exact input kept off zero. LLVM's
            # NVPTX frem is x - trunc(x / y) * y, a few ulp of x off, and either side of a multiple
            safe = np.where(np.abs(y) < 0.5, 1.0, y)
            ref = np.fmod(x, safe)
            err = ex + 4 * t.u * np.abs(x)
            edge = (np.abs(ref) <= err) | (np.abs(safe) - np.abs(ref) <= err)
            expr = f"{a.expr} % tl.where(tl.abs({b.expr}) < 0.5, 1.0, {b.expr})"
            return chain.new(expr, t, ref, err, edge, parents=(a, b))
        if op == "/":  # b is an exact value (an input), kept away from zero
            safe = np.where(np.abs(y) < 0.5, 1.0, y)
            ref = x / safe
            err = ex / np.abs(safe) + 4 * t.u * np.abs(ref)  # fp32 `/` is div.full: 2 ulp
            expr = f"{a.expr} / tl.where(tl.abs({b.expr}) < 0.5, 1.0, {b.expr})"
            return chain.new(expr, t, ref, err, parents=(a, b))
        fn = {"maximum": np.maximum, "minimum": np.minimum}[op]
        ref = fn(x, y)
        # NaN operands: Triton leaves the result to the implementation (propagate_nan=NONE)
        return chain.new(f"tl.{op}({a.expr}, {b.expr})", t, ref, np.maximum(ex, ey),
                         np.isnan(x) | np.isnan(y), parents=(a, b))


def float_unary(chain: Chain, op: str, a: Value) -> Value:
    t, x, e = a.dtype, a.ref, a.err
    math_u = max(t.u, F32.u * 4)  # math functions run in fp32 at least, a few ulp off
    with np.errstate(all="ignore"):
        if op == "neg":
            return chain.new(f"-{a.expr}", t, -x, e, parents=(a,))
        if op == "abs":
            return chain.new(f"tl.abs({a.expr})", t, np.abs(x), e, parents=(a,))
        if op == "exp":
            ref = np.exp(x)
            err = ref * np.expm1(e) + (math_u * (4 + np.abs(x)) + t.u) * ref
            return chain.new(f"tl.exp({a.expr})", t, ref, err, parents=(a,))
        if op == "sqrt_abs":
            ref = np.sqrt(np.abs(x))
            err = np.sqrt(np.abs(x) + e) - np.sqrt(np.maximum(np.abs(x) - e, 0)) + 2 * math_u * ref
            return chain.new(f"tl.sqrt(tl.abs({a.expr}))", t, ref, err, parents=(a,))
        if op == "log1p_abs":
            inner = np.abs(x) + 1
            ref = np.log(inner)
            err = (e + t.u * inner) / np.maximum(inner - e, 1.0) + 2 * math_u * (np.abs(ref) + 1)
            return chain.new(f"tl.log(tl.abs({a.expr}) + 1.0)", t, ref, err, parents=(a,))
        if op in ("floor", "ceil"):  # exact, but a value within its bound of an integer may go either way
            ref = np.floor(x) if op == "floor" else np.ceil(x)
            edge = (np.floor(x - e) != np.floor(x + e)) | (np.ceil(x - e) != np.ceil(x + e))
            return chain.new(f"tl.{op}({a.expr})", t, ref, np.zeros(chain.shape), edge, parents=(a,))
        if op in ("sin", "cos"):
            ref = np.sin(x) if op == "sin" else np.cos(x)
            err = np.minimum(e, 2.0) + 2.0**-19 * np.maximum(1.0, np.abs(x)) + t.u
            return chain.new(f"tl.{op}({a.expr})", t, ref, err, np.abs(x) > 1e4, parents=(a,))
        raise AssertionError(op)


def cast(chain: Chain, a: Value, to: DType) -> Value:
    """`a.to(to)`: C conversions; float -> int out of range (or of NaN) is undefined: unchecked."""
    src = a.dtype
    expr = f"{a.expr}.to(tl.{to.name})"
    with np.errstate(all="ignore"):
        if not src.is_float and not to.is_float:
            return chain.new(expr, to, _as_int(a).astype(to.numpy), parents=(a,))
        if not src.is_float:
            wide = _as_int(a).astype(np.float64)
            exact = round_exact(wide, to)
            unsure = np.abs(wide) > 2.0**52 if to.bits > 16 else np.abs(wide) > 2.0**24
            return chain.new(expr, to, exact, np.zeros(chain.shape), unsure, parents=(a,))
        if to.is_float:
            if np.all(a.err == 0):  # exact data: the cast rounds once, to nearest even
                return chain.new(expr, to, round_exact(a.ref, to), parents=(a,))
            err = a.err + (to.u if to.bits < src.bits else 0) * np.abs(a.ref)
            if to.name.startswith("float8"):  # saturating: past the range the bound is meaningless
                return chain.new(expr, to, a.ref, err, np.abs(a.ref) + a.err > to.max, parents=(a,))
            return chain.new(expr, to, a.ref, err, parents=(a,))
        low, high = np.trunc(a.ref - a.err), np.trunc(a.ref + a.err)
        bad = ~np.isfinite(a.ref) | (low != high) | (low < to.min) | (high > to.max)
        value = np.where(bad, 0, np.trunc(np.where(np.isfinite(a.ref), a.ref, 0)))
        ints = value.astype(np.int64) if to.signed or to.bits < 64 else value.astype(np.uint64)
        return chain.new(expr, to, ints.astype(to.numpy), None, bad, parents=(a,))


INT_BINARY = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "maximum", "minimum"]
FLOAT_BINARY = ["+", "-", "*", "/", "%", "maximum", "minimum"]
FLOAT_UNARY = ["neg", "abs", "exp", "sqrt_abs", "log1p_abs", "sin", "cos", "floor", "ceil"]
