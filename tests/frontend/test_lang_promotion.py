"""Triton's type promotion, as a table test over dtype pairs (tensor-tensor and tensor-Python scalar):
the result dtype of every arithmetic, comparison, bitwise and shift operator is compared with a table
written here from Triton's documented rules (independently of frontend/promotion.py)."""

from __future__ import annotations

import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError
from tileworkbench.frontend import generate

INTS = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64"]
KIND = {**{t: 1 for t in INTS[1:]}, "int1": 0, **{t: 2 for t in FLOATS}}
BITS = {"int1": 1, "fp8e4nv": 8, "fp8e5": 8, "bf16": 16, "fp16": 16, "fp32": 32, "fp64": 64,
        **{t: int(t.lstrip("uint")) for t in INTS[1:]}}
SIGNED = {"int8", "int16", "int32", "int64"}


def int_promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions (int1 counts as unsigned, as in Triton)."""
    if (a in SIGNED) == (b in SIGNED):
        return a if BITS[a] > BITS[b] else b
    unsigned, signed = (a, b) if b in SIGNED else (b, a)
    return unsigned if BITS[unsigned] >= BITS[signed] else signed


def expected(a: str, a_scalar: bool, b: str, b_scalar: bool, div: bool) -> str | None:
    """Triton's documented promotion: a Python scalar of lower-or-equal kind (bool < int < float) takes
    the tensor's dtype; else fp64 > fp32 > fp16 > bf16 (bf16 only with bf16), half division in fp32,
    different fp8s meet in fp16, integers by C rules. None: the combination is an error."""
    if a_scalar != b_scalar:
        scalar, tensor = (a, b) if a_scalar else (b, a)
        if KIND[scalar] <= KIND[tensor]:
            return "fp32" if div and tensor in ("fp16", "bf16") else tensor
    for wide in ("fp64", "fp32"):
        if wide in (a, b):
            return wide
    if "fp16" in (a, b):
        return "fp32" if div else "fp16"
    if "bf16" in (a, b):
        return "bf16" if a == b == "bf16" and not div else "fp32"
    if a in FLOATS[:2] and b in FLOATS[:2]:
        return a if a == b else "fp16"
    if a in FLOATS or b in FLOATS:
        return "skip"  # fp8 with an integer: Triton rejects it, we compute in fp16 (not tested here)
    if div and (a in SIGNED) != (b in SIGNED) and "int1" not in (a, b):
        return None  # Triton: "Cannot use /, // or % with ... because they have different signedness"
    return int_promote(a, b)


@tw.jit
def apply(x, y, OP: tl.constexpr):
    if OP == "+":
        return x + y
    if OP == "-":
        return x - y
    if OP == "*":
        return x * y
    if OP == "/":
        return x / y
    if OP == "//":
        return x // y
    if OP == "%":
        return x % y
    if OP == "&":
        return x & y
    if OP == "|":
        return x | y
    if OP == "^":
        return x ^ y
    if OP == "<<":
        return x << y
    if OP == ">>":
        return x >> y
    if OP == "<":
        return x < y
    if OP == "==":
        return x == y
    return x >= y


# One tiny @jit function per operator: the table kernel inlines thousands of them, so keep each small.
@tw.jit
def op_add(x, y):
    return x + y


@tw.jit
def op_sub(x, y):
    return x - y


@tw.jit
def op_mul(x, y):
    return x * y


@tw.jit
def op_truediv(x, y):
    return x / y


@tw.jit
def op_floordiv(x, y):
    return x // y


@tw.jit
def op_mod(x, y):
    return x % y


@tw.jit
def op_and(x, y):
    return x & y


@tw.jit
def op_or(x, y):
    return x | y


@tw.jit
def op_xor(x, y):
    return x ^ y


@tw.jit
def op_shl(x, y):
    return x << y


@tw.jit
def op_shr(x, y):
    return x >> y


@tw.jit
def op_lt(x, y):
    return x < y


@tw.jit
def op_eq(x, y):
    return x == y


@tw.jit
def op_ge(x, y):
    return x >= y


@tw.jit
def op_ne(x, y):
    return x != y


@tw.jit
def op_le(x, y):
    return x <= y


@tw.jit
def op_gt(x, y):
    return x > y


OP_FNS = {"+": op_add, "-": op_sub, "*": op_mul, "/": op_truediv, "//": op_floordiv, "%": op_mod,
          "&": op_and, "|": op_or, "^": op_xor, "<<": op_shl, ">>": op_shr, "<": op_lt, "==": op_eq,
          ">=": op_ge, "!=": op_ne, "<=": op_le, ">": op_gt}


@tw.jit
def promotion_kernel(A: tl.constexpr, CASES: tl.constexpr):
    """CASES: (B, scalar or None, ops, expected dtypes); y is a tile of B, or the Python scalar."""
    x = tl.zeros((2,), A)
    for c in tl.static_range(len(CASES)):
        B, SCALAR, OPS, EXPECTED = CASES[c]
        if SCALAR is None:
            y = tl.zeros((2,), B)
        else:
            y = SCALAR
        for i in tl.static_range(len(OPS)):
            z = OPS[i](x, y)
            tl.static_assert(z.dtype == EXPECTED[i], f"{A} {OPS[i].__name__} {B} {SCALAR}: got {z.dtype}")
            if SCALAR is not None:  # the scalar on the left promotes alike
                zr = OPS[i](y, x)
                tl.static_assert(zr.dtype == EXPECTED[i], f"{SCALAR} {OPS[i].__name__} {A}: got {zr.dtype}")


@tw.jit
def one_op_kernel(x_ptr, y_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 2))
    y = tl.load(y_ptr + tl.arange(0, 2))
    apply(x, y, OP)


ARITH = ["+", "-", "*"]
BITWISE = ["&", "|", "^", "<<", ">>"]
CMPS = ["<", "==", ">=", "!=", "<=", ">"]


def _ops_for(a: str, b: str, b_scalar=False):
    """(ops, expected dtypes) for every operator that is valid for the pair."""
    ok = []
    common = expected(a, False, b, b_scalar, False)
    div_common = expected(a, False, b, b_scalar, True)
    ok += [(op, common) for op in ARITH] + [(op, "int1") for op in CMPS]
    if div_common is not None:
        ok.append(("%", div_common))
        ok.append(("/", "fp32" if div_common in INTS else div_common))
        if div_common in INTS:
            ok.append(("//", div_common))
    if common in INTS:
        ok += [(op, common) for op in BITWISE]
    return tuple(OP_FNS[op] for op, _ in ok), tuple(tl.dtype(e) for _, e in ok)


SCALARS = [True, 3, 2**31 + 1, 2**40, 2.5, 1e300]


def _scalar_dtype(value) -> str:
    """Triton's to_tensor: bool -> int1, ints by range, floats fp32 unless out of fp32 range."""
    if isinstance(value, bool):
        return "int1"
    if isinstance(value, int):
        return "int32" if -2**31 <= value < 2**31 else "uint32" if value < 2**32 else "int64"
    return "fp32" if abs(value) < 3.4e38 else "fp64"


def _cases(a: str) -> tuple:
    cases = []
    for b in INTS + FLOATS:
        if expected(a, False, b, False, False) != "skip":
            cases.append((tl.dtype(b), None, *_ops_for(a, b)))
    for scalar in SCALARS:
        s = _scalar_dtype(scalar)
        result = expected(a, False, s, True, False)
        if result == "skip":
            continue
        if not isinstance(scalar, bool) and isinstance(scalar, int) and result in INTS \
                and scalar >= 2 ** (BITS[result] - (result in SIGNED)):
            continue  # Triton rejects a scalar out of the tensor dtype's range
        cases.append((tl.dtype(s), scalar, *_ops_for(a, s, b_scalar=True)))
    return tuple(cases)


@pytest.mark.parametrize("a", INTS + FLOATS)
def test_promotion_table(a):
    """Every operator between a tile of `a` and a tile of every dtype, and every kind of Python scalar."""
    # the frontend alone: static_assert checks at compile time, and the passes would only fold dead code
    generate(promotion_kernel.fn, [], {"A": tl.dtype(a), "CASES": _cases(a)})


def test_table_spot_checks():
    """A few rows of Triton's documentation, written out literally."""
    table = [("int8", "uint8", False, "uint8"), ("int16", "uint8", False, "int16"),
             ("int32", "uint32", False, "uint32"), ("int64", "uint32", False, "int64"),
             ("int1", "int8", False, "int8"), ("fp16", "bf16", False, "fp16"),
             ("bf16", "bf16", False, "bf16"), ("bf16", "bf16", True, "fp32"),
             ("fp16", "fp16", True, "fp32"), ("fp8e4nv", "fp8e5", False, "fp16"),
             ("int64", "fp16", False, "fp16"), ("uint64", "bf16", False, "fp32"),
             ("fp32", "fp64", False, "fp64")]
    for a, b, div, want in table:
        assert expected(a, False, b, False, div) == want, (a, b, div)
    assert expected("uint8", False, "int32", True, False) == "uint8"  # u8_tensor + 3
    assert expected("int32", False, "fp32", True, False) == "fp32"  # i32_tensor + 2.5
    assert expected("fp16", False, "fp32", True, False) == "fp16"  # f16_tensor + 2.5
    assert expected("fp16", False, "fp32", True, True) == "fp32"  # f16_tensor / 2.5
    assert expected("int1", False, "int32", True, False) == "int32"  # bool_tensor + 3


@pytest.mark.parametrize("a,b", [("int32", "uint32"), ("int8", "uint16"), ("uint64", "int64")])
@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_division_of_mixed_signedness_is_an_error(a, b, op):
    with pytest.raises(CompilationError, match="signedness"):
        tw.compile(one_op_kernel, signature={"x_ptr": f"*{a}", "y_ptr": f"*{b}"},
                   constexprs={"OP": op}, target="interpreter")


@pytest.mark.parametrize("a,b,op", [("fp32", "int32", "&"), ("fp16", "fp16", "<<"), ("int32", "bf16", "^"),
                                    ("fp32", "fp32", "//")])
def test_bitwise_and_floordiv_on_floats_are_errors(a, b, op):
    with pytest.raises(CompilationError):
        tw.compile(one_op_kernel, signature={"x_ptr": f"*{a}", "y_ptr": f"*{b}"},
                   constexprs={"OP": op}, target="interpreter")
