"""hypothesis strategies for the fuzzer's two program families: tile programs (masked loads, an
elementwise chain with casts and constants, then a store, a reduction or a scan along an axis) and
dots of odd shapes. Each draws its structure from hypothesis and its data from a NumPy generator
seeded by hypothesis, so a failing example shrinks and replays."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from fuzz_programs import (
    CHAIN_DTYPES,
    FLOAT_BINARY,
    FLOAT_UNARY,
    FLOATS,
    INT_BINARY,
    SHAPES,
    _NAMES,
    Array,
    Chain,
    Program,
    cast,
    float_binary,
    float_unary,
    int_unary,
    input_data,
    int_binary,
    poison,
    reference_of,
)
from fuzz_oracle import DTYPES, F32, DType, Value, round_exact, settle

CAST_TARGETS = CHAIN_DTYPES + [DTYPES["float8e4nv"], DTYPES["float8e5"]]
FLOAT_CONSTANTS = [0.5, 2.0, -3.0, 0.25, 1.5, 100.0]
INT_CONSTANTS = [1, 2, 3, 7, 100, -1, -5]


def _constant(draw, chain: Chain, t: DType) -> Value:
    """A Python scalar in the source: weakly typed, it takes the tile's type (Triton's rule)."""
    if t.is_float:
        c = draw(st.sampled_from(FLOAT_CONSTANTS))
    else:
        c = draw(st.sampled_from([c for c in INT_CONSTANTS if t.min <= c <= t.max]))
    if t.is_float:  # the constant as the tile's type holds it (fp8 rounds some)
        ref = round_exact(np.full(chain.shape, c, np.float64), t)
    else:
        ref = np.full(chain.shape, c, t.numpy)
    return Value(repr(c), t, ref, np.zeros(chain.shape), np.zeros(chain.shape, bool))


def _operand(draw, chain: Chain, t: DType, pool: list[Value], inputs: list[Value]) -> Value:
    """Another operand of type `t`: an earlier value, an input cast to `t`, or a constant."""
    same = [v for v in pool if v.dtype == t]
    kind = draw(st.sampled_from(["value", "input", "constant"]))
    if kind == "value" and same:
        return draw(st.sampled_from(same))
    if kind == "constant":
        return _constant(draw, chain, t)
    source = draw(st.sampled_from(inputs))
    return source if source.dtype == t else cast(chain, source, t)


def _step(draw, chain: Chain, v: Value, pool: list[Value], inputs: list[Value]) -> Value:
    t = v.dtype
    kind = draw(st.sampled_from(["binary", "binary", "unary", "cast", "where"]))
    if kind == "cast":
        return cast(chain, v, draw(st.sampled_from(CAST_TARGETS)))
    if kind == "where":  # the condition on inputs (exact), never on computed values
        x = inputs[0]
        op = draw(st.sampled_from(["<", ">", "==", "!="]))
        y = inputs[1] if inputs[1].dtype == x.dtype else _constant(draw, chain, x.dtype)
        cond = {"<": np.less, ">": np.greater, "==": np.equal, "!=": np.not_equal}[op](x.ref, y.ref)
        other = _operand(draw, chain, t, pool, inputs)
        return chain.new(f"tl.where({x.expr} {op} {y.expr}, {v.expr}, {other.expr})", t,
                         np.where(cond, v.ref, other.ref), np.where(cond, v.err, other.err),
                         np.where(cond, v.unchecked, other.unchecked))
    if kind == "unary" and not t.is_float:
        return int_unary(chain, draw(st.sampled_from(["neg", "abs"] if t.signed else ["neg"])), v)
    if kind == "unary" and t.is_float and not t.name.startswith("float8"):
        return float_unary(chain, draw(st.sampled_from(FLOAT_UNARY)), v)
    if t.name.startswith("float8"):  # fp8: binary arithmetic (in f32, rounded back) or a cast
        op = draw(st.sampled_from(["+", "-", "*", "maximum", "minimum", "cast"]))
        if op == "cast":
            return cast(chain, v, draw(st.sampled_from(FLOATS)))
        return float_binary(chain, op, v, _operand(draw, chain, t, pool, inputs))
    if t.is_float:
        op = draw(st.sampled_from(FLOAT_BINARY))
        if op in ("/", "%"):
            divisor = draw(st.sampled_from(inputs))
            if divisor.dtype != t:
                divisor = cast(chain, divisor, t)
            if not np.all(divisor.err == 0):
                op = "*"
            return float_binary(chain, op, v, divisor)
        return float_binary(chain, op, v, _operand(draw, chain, t, pool, inputs))
    return int_binary(chain, draw(st.sampled_from(INT_BINARY)), v, _operand(draw, chain, t, pool, inputs))


# -- tails: what the kernel does with the chain's last value ------------------------------------------


def _acc_type(t: DType) -> DType:
    """The type tl.sum / tl.cumsum accumulate in (Triton: narrow ints widen to 32 bits)."""
    if not t.is_float and t.bits < 32:
        return DTYPES["int32" if t.signed else "uint32"]
    return t


def _reduce(draw, chain: Chain, v: Value, axis: int):
    """(kernel lines, expected Value of shape (G, L), output dtype)."""
    t, ax = v.dtype, axis + 1
    ops = ["sum", "max", "min", "argmax", "argmin"] + ([] if t.is_float else ["xor_sum"])
    op = draw(st.sampled_from(ops))
    line = f"    r = tl.{op}({v.expr}, axis={axis})"
    unsure = v.unchecked.any(axis=ax)
    zero = np.zeros(unsure.shape)
    with np.errstate(all="ignore"):
        if op in ("argmax", "argmin"):
            return line, _arg_reduce(v, ax, op == "argmax", unsure), DTYPES["int32"]
        if op == "xor_sum":
            return line, Value("r", t, np.bitwise_xor.reduce(v.ref, axis=ax), zero, unsure), t
        if op in ("max", "min"):
            out = (F32 if t.bits < 32 else t) if t.is_float else _acc_type(t)
            if t.is_float:  # NaN: tileworkbench skips it, Triton leaves it open
                ref = (np.max if op == "max" else np.min)(v.ref, axis=ax)
                return line, Value("r", out, ref, v.err.max(axis=ax), unsure | np.isnan(v.ref).any(ax)), out
            ref = (np.max if op == "max" else np.min)(v.ref, axis=ax).astype(out.numpy)
            return line, Value("r", out, ref, zero, unsure), out
        acc = _acc_type(t)
        if not t.is_float:
            return line, Value("r", acc, np.sum(v.ref.astype(acc.numpy), axis=ax, dtype=acc.numpy),
                               zero, unsure), acc
        n = v.ref.shape[ax]
        magnitude = np.abs(np.where(np.isfinite(v.ref), v.ref, 0)).sum(axis=ax)
        ref, err, unsure = settle(t, v.ref.sum(axis=ax), v.err.sum(axis=ax) + n * t.u * magnitude,
                                  unsure | (magnitude > t.max))
        return line, Value("r", t, ref, err, unsure), (F32 if t.bits < 32 else t)


def _arg_reduce(v: Value, ax: int, is_max: bool, unsure) -> Value:
    """The first index of the largest (smallest) value, as Triton's tie_break_left; a float slice
    whose runner-up lies within the error bounds of the best is not checked."""
    values = v.ref.astype(np.float64)
    if not v.dtype.is_float:
        unsure = unsure | (np.abs(values) > 2.0**52).any(ax)  # the float64 order is exact below
    key = values if is_max else -values
    index = np.argmax(key, axis=ax)
    if v.dtype.is_float:
        at = np.expand_dims(index, ax)
        best, best_err = np.take_along_axis(key, at, ax), np.take_along_axis(v.err, at, ax)
        ties = key == best
        near = (key >= best - (best_err + v.err)) & ~ties
        fuzzy_ties = (ties.sum(ax) > 1) & (np.where(ties, v.err, 0).max(ax) > 0)
        unsure = unsure | near.any(ax) | fuzzy_ties | np.isnan(values).any(ax)
    return Value("r", DTYPES["int32"], index.astype(np.int32), np.zeros(index.shape), unsure)


def _scan(draw, chain: Chain, v: Value, axis: int, reverse: bool):
    t, ax = v.dtype, axis + 1
    op = "cumsum" if t.is_float else draw(st.sampled_from(["cumsum", "cumprod"]))
    line = f"    r = tl.{op}({v.expr}, axis={axis}, reverse={reverse})"
    flip = (lambda a: np.flip(a, ax)) if reverse else (lambda a: a)
    unsure = flip(np.logical_or.accumulate(flip(v.unchecked), axis=ax))
    with np.errstate(all="ignore"):
        if not t.is_float:
            acc = _acc_type(t)
            fn = np.cumsum if op == "cumsum" else np.cumprod
            ref = flip(fn(flip(v.ref.astype(acc.numpy)), axis=ax, dtype=acc.numpy))
            return line, Value("r", acc, ref, np.zeros(ref.shape), unsure), acc
        acc = F32 if t.name == "bfloat16" else t  # Triton's cumsum of bf16 runs in fp32
        finite = np.where(np.isfinite(v.ref), v.ref, 0)
        magnitude = flip(np.cumsum(np.abs(flip(finite)), axis=ax))
        steps = flip(np.cumsum(np.ones_like(v.ref), axis=ax))
        ref = flip(np.cumsum(flip(v.ref), axis=ax))
        err = flip(np.cumsum(flip(v.err), axis=ax)) + steps * acc.u * magnitude
        ref, err, unsure = settle(acc, ref, err, unsure | (magnitude > acc.max))
        return line, Value("r", acc, ref, err, unsure), (F32 if acc.bits < 32 else acc)


# -- the tile program ---------------------------------------------------------------------------------


@st.composite
def tile_programs(draw) -> Program:
    m, n = draw(st.sampled_from(SHAPES))
    programs = draw(st.sampled_from([1, 2]))
    shape = (programs, m, n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtypes = [draw(st.sampled_from(CHAIN_DTYPES)) for _ in range(2)]
    specials = draw(st.booleans())
    masked = draw(st.booleans())
    rows = int(draw(st.integers(0, m))) if masked else m
    cols = int(draw(st.integers(0, n))) if masked else n
    inside = (np.arange(m)[:, None] < rows) & (np.arange(n)[None, :] < cols)
    inside = np.broadcast_to(inside, shape)
    chain = Chain(shape)
    inputs, args = [], []
    for name, t in zip("xy", dtypes):
        data = input_data(rng, t, shape, specials)
        other = (0.0 if t.is_float else 0) if draw(st.booleans()) else (1.5 if t.is_float else 3)
        load = f"tl.load({name}_ptr + offs, mask=mask, other={other})" if masked else \
            f"tl.load({name}_ptr + offs)"
        chain.lines.append(f"    {name} = {load}")
        ref = reference_of(data, t)
        if masked:
            ref = np.where(inside, ref, np.asarray(other).astype(t.numpy).astype(ref.dtype))
        inputs.append(Value(name, t, ref, np.zeros(shape), np.zeros(shape, bool)))
        args.append(Array(f"{name}_ptr", t, data))
    value = inputs[0]
    pool = list(inputs)
    for _ in range(draw(st.integers(1, 6))):
        value = _step(draw, chain, value, pool, inputs)
        pool.append(value)
    tail = draw(st.sampled_from(["store", "store", "reduce", "scan", "mixed"]))
    cross_only = False
    axis = draw(st.sampled_from([0, 1]))
    lines = list(chain.lines)
    if tail == "mixed":  # tiles of two types: Triton's promotion, checked across targets only
        other = inputs[1]
        op = draw(st.sampled_from(["+", "-", "*"]))
        lines.append(f"    tl.store(out_ptr + offs, {value.expr} {op} {other.expr})")
        out_dtype, cross_only = DTYPES["float64"], True  # any result converts to f64 the same way
        # unchecked: where the chain itself is undefined (min/max of NaN, float -> int overflow)
        expected = Value("m", out_dtype, np.zeros(shape), np.zeros(shape), value.unchecked.copy())
        out_shape, written = shape, np.ones(shape, bool)
    elif tail == "store":
        out_dtype, expected = value.dtype, value
        written = inside if masked else np.ones(shape, bool)
        store_mask = ", mask=mask" if masked else ""
        lines.append(f"    tl.store(out_ptr + offs, {value.expr}{store_mask})")
        out_shape = shape
    elif tail == "reduce":
        line, expected, out_dtype = _reduce(draw, chain, value, axis)
        length = n if axis == 0 else m
        lines += [line, f"    tl.store(out_ptr + pid * {length} + tl.arange(0, {length}), r)"]
        out_shape, written = expected.ref.shape, np.ones(expected.ref.shape, bool)
    else:
        line, expected, out_dtype = _scan(draw, chain, value, axis, draw(st.booleans()))
        lines += [line, "    tl.store(out_ptr + offs, r)"]
        out_shape, written = shape, np.ones(shape, bool)
    args.append(Array("out_ptr", out_dtype, poison(out_dtype, out_shape), output=True))
    args += [Array("ROWS", None, rows), Array("COLS", None, cols)]
    name = f"fuzz_tile_{next(_NAMES)}"
    head = ["@tw.jit",
            f"def {name}(x_ptr, y_ptr, out_ptr, ROWS, COLS, M: tl.constexpr, N: tl.constexpr):",
            "    pid = tl.program_id(0)",
            "    rows = tl.arange(0, M)[:, None]",
            "    cols = tl.arange(0, N)[None, :]",
            "    offs = pid * M * N + rows * N + cols",
            "    mask = (rows < ROWS) & (cols < COLS)"]
    return Program(name, "\n".join(head + lines) + "\n", args, {"M": m, "N": n}, (programs,),
                   draw(st.sampled_from([1, 2, 4, 8])), expected, written, cross_only=cross_only)


# -- dots ---------------------------------------------------------------------------------------------

DOT_DTYPES = ["float32", "float16", "bfloat16", "int8"]


@st.composite
def dot_programs(draw) -> Program:
    m, n, k = (draw(st.sampled_from([16, 32, 64])) for _ in range(3))
    t = DTYPES[draw(st.sampled_from(DOT_DTYPES))]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    variant = draw(st.sampled_from(["plain", "scaled", "full", "full_both", "self"]))
    if variant in ("self", "full_both"):  # one value as both operands: square
        n = k = m
    k_live = draw(st.sampled_from([k, k - 3, 1]))
    with_acc = draw(st.booleans())
    precision = draw(st.sampled_from([None, "ieee"])) if t.name == "float32" else None
    out = DTYPES["int32"] if t.name == "int8" else F32
    a = input_data(rng, t, (m, k), False)
    b = input_data(rng, t, (k, n), False)
    if t.name == "int8":
        a, b = (rng.integers(-20, 21, s).astype(np.int8) for s in ((m, k), (k, n)))
    c = input_data(rng, out, (m, n), False) if with_acc else None
    if c is not None and out.name == "int32":
        c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    ra = np.where(np.arange(k)[None, :] < k_live, a.astype(np.float64), 0)
    rb = np.where(np.arange(k)[:, None] < k_live, b.astype(np.float64), 0)
    lines = ["    a = tl.load(a_ptr + rm * K + rk[None, :], mask=rk[None, :] < KA, other=0)",
             "    b = tl.load(b_ptr + rk[:, None] * N + rn, mask=rk[:, None] < KA, other=0)"]
    if variant == "scaled":
        lines.append("    a = a * 2")
        ra = ra * 2
    elif variant == "full":  # operands that were never loaded (issue 15's test_dot_without_load)
        lines.append(f"    a = tl.full((M, K), 3, tl.{t.name})")
        ra = np.full((m, k), 3.0)
    elif variant == "full_both":  # CSE makes the two constants one value
        lines += [f"    a = tl.full((M, K), 3, tl.{t.name})", f"    b = tl.full((K, N), 3, tl.{t.name})"]
        ra, rb = np.full((m, k), 3.0), np.full((k, n), 3.0)
    elif variant == "self":
        lines.append("    b = a")
        rb = ra
    acc = "acc" if with_acc else "None"
    if with_acc:
        lines.append("    acc = tl.load(c_ptr + rm * N + rn)")
    prec = f", input_precision={precision!r}" if precision else ""
    lines += [f"    d = tl.dot(a, b, {acc}{prec})", "    tl.store(out_ptr + rm * N + rn, d)"]
    ref = ra @ rb + (c.astype(np.float64) if with_acc else 0)
    magnitude = np.abs(ra) @ np.abs(rb)
    if out.name == "int32":
        err = np.zeros(ref.shape)
    else:
        tf32 = 2 * 2.0**-11 if t.name == "float32" and precision is None else 0.0
        running = magnitude + (np.abs(c) if with_acc else 0)  # the FMA chain rounds the running sum
        err = magnitude * tf32 + (k + 2) * F32.u * running
    expected = Value("d", out, ref.astype(out.numpy) if out.name == "int32" else ref, err,
                     np.zeros(ref.shape, bool))
    name = f"fuzz_dot_{next(_NAMES)}"
    head = ["@tw.jit",
            f"def {name}(a_ptr, b_ptr, c_ptr, out_ptr, KA, M: tl.constexpr, N: tl.constexpr, "
            "K: tl.constexpr):",
            "    rm = tl.arange(0, M)[:, None]",
            "    rn = tl.arange(0, N)[None, :]",
            "    rk = tl.arange(0, K)"]
    args = [Array("a_ptr", t, a), Array("b_ptr", t, b),
            Array("c_ptr", out, c if with_acc else np.zeros((m, n), out.numpy)),
            Array("out_ptr", out, poison(out, (m, n)), output=True), Array("KA", None, k_live)]
    return Program(name, "\n".join(head + lines) + "\n", args, {"M": m, "N": n, "K": k}, (1,),
                   draw(st.sampled_from([1, 4])), expected, np.ones((m, n), bool))
