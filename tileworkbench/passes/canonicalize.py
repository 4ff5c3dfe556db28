"""`canonicalize`: constant folding, algebraic identities and trivial control flow, to a fixed
point.

Folds arith ops on scalar and splat constants bit-exactly (see `fold.py`), rewrites identities that
hold for every input, NaN and -0.0 included (`x * 1.0`, but not `x + 0.0`), moves constants of
commutative ops to the right, turns splats of constants into constants, inlines `scf.if` on a
constant condition and drops `scf.for` loops that never run. Pure ops left unused are erased. Needs
nothing to run first."""

from __future__ import annotations

import math
import numbers
from typing import Any

from ..ir import Op, Value
from ..ir.ops import arith, scf, tt
from ..ir.ops.tt import FuncOp
from ..ir.types import TensorType, element_type
from ..ir.values import OpResult
from . import fold
from .rewrite import Patterns, Rewriter, apply_patterns

PATTERNS = Patterns("canonicalize")
rewrite = PATTERNS.rewrite


def canonicalize(func: FuncOp) -> bool:
    """Fold and simplify `func` in place; returns whether anything changed."""
    return apply_patterns(func, PATTERNS)


# -- helpers -------------------------------------------------------------------------------------
def constant_op(value: Value) -> arith.ConstantOp | None:
    """The `arith.constant` defining `value` (a scalar, or a tensor splat), if there is one."""
    if isinstance(value, OpResult) and isinstance(value.op, arith.ConstantOp):
        # Only scalar values: a dense array (were a frontend to make one) is no splat to fold.
        return value.op if isinstance(value.op.value, numbers.Real) else None
    return None


def splat_source(value: Value) -> Value | None:
    """The scalar a `tt.splat` defining `value` copies, if `value` is one."""
    if isinstance(value, OpResult) and isinstance(value.op, tt.SplatOp):
        return value.op.operand
    return None


def defining(value: Value, cls: type[Op]) -> Op | None:
    if isinstance(value, OpResult) and isinstance(value.op, cls):
        return value.op
    return None


def int_constant(value: Value) -> int | None:
    """The bit pattern of an integer constant `value`, or None."""
    op = constant_op(value)
    scalar = element_type(value.type)
    if op is None or not scalar.is_int:
        return None
    return fold.to_bits(op.value, scalar.bitwidth)


def float_constant(value: Value) -> float | None:
    op = constant_op(value)
    if op is None or not element_type(value.type).is_float:
        return None
    return float(op.value)


def is_int(value: Value, expected: int) -> bool:
    """Whether `value` is an integer constant equal to `expected` on its width (-1: all ones)."""
    bits = int_constant(value)
    return bits is not None and bits == fold.to_bits(expected, element_type(value.type).bitwidth)


def is_float(value: Value, expected: float) -> bool:
    """Whether `value` is a float constant equal to `expected`, with the same sign of zero."""
    got = float_constant(value)
    return (
        got is not None and got == expected and math.copysign(1, got) == math.copysign(1, expected)
    )


def replace_with(op: Op, value: Value, rw: Rewriter) -> bool:
    """Replace `op`'s one result by `value` where their types agree."""
    if value.type != op.result.type:
        return False
    rw.replace_op(op, [value])
    return True


def replace_with_constant(op: Op, value: Any, rw: Rewriter) -> bool:
    if value is None:
        return False
    rw.replace_op(op, [rw.constant(value, op.result.type, before=op)])
    return True


def zero_of(op: Op) -> int | bool:
    """The integer zero of `op`'s result type, as its constant stores it."""
    return fold.stored_int(0, element_type(op.result.type))


def remake(op: Op, cls: type[Op], rw: Rewriter, **fields: Any) -> bool:
    """Replace `op` by a new `cls(**fields)` with the same result type."""
    new = rw.create(cls, [op.result.type], before=op, **fields)
    rw.replace_op(op, [new.result])
    return True


INT_BINARY_OPS = tuple(fold.INT_BINARY)
FLOAT_BINARY_OPS = (*fold.FLOAT_BINARY, arith.DivFOp)
COMMUTATIVE_OPS = tuple(cls for cls in INT_BINARY_OPS + FLOAT_BINARY_OPS if cls.commutative)
CASTS = (
    arith.ExtSIOp,
    arith.ExtUIOp,
    arith.TruncIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.SIToFPOp,
    arith.UIToFPOp,
    arith.FPToSIOp,
    arith.FPToUIOp,
    arith.BitcastOp,
)


# -- constant folding ----------------------------------------------------------------------------
@rewrite(*INT_BINARY_OPS)
def fold_int_binary(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%z = arith.addi %c2, %c3 : i32  ->  %z = arith.constant 5 : i32 (C semantics on the width)"""
    lhs, rhs = constant_op(op.lhs), constant_op(op.rhs)
    if lhs is None or rhs is None:
        return False
    scalar = element_type(op.result.type)
    return replace_with_constant(
        op, fold.fold_int_binary(type(op), lhs.value, rhs.value, scalar), rw
    )


@rewrite(*FLOAT_BINARY_OPS)
def fold_float_binary(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%z = arith.mulf %c2, %c3 : f32  ->  %z = arith.constant 6.0 : f32 (rounded as f32)"""
    lhs, rhs = constant_op(op.lhs), constant_op(op.rhs)
    if lhs is None or rhs is None:
        return False
    scalar = element_type(op.result.type)
    return replace_with_constant(
        op, fold.fold_float_binary(type(op), lhs.value, rhs.value, scalar), rw
    )


@rewrite(arith.CmpIOp, arith.CmpFOp)
def fold_compare(op: arith.CmpIOp, rw: Rewriter) -> bool:
    """%b = arith.cmpi slt, %c1, %c2 : i32  ->  %b = arith.constant true : i1"""
    lhs, rhs = constant_op(op.lhs), constant_op(op.rhs)
    if lhs is None or rhs is None:
        return False
    scalar = element_type(op.lhs.type)
    folder = fold.fold_cmpi if isinstance(op, arith.CmpIOp) else fold.fold_cmpf
    return replace_with_constant(op, folder(op.predicate, lhs.value, rhs.value, scalar), rw)


@rewrite(*CASTS)
def fold_cast(op: arith.UnaryOp, rw: Rewriter) -> bool:
    """%y = arith.extsi %c-1 : i8 -> i32  ->  %y = arith.constant -1 : i32"""
    source = constant_op(op.operand)
    if source is None:
        return False
    src, dst = element_type(op.operand.type), element_type(op.result.type)
    return replace_with_constant(op, fold.fold_cast(type(op), source.value, src, dst), rw)


@rewrite(arith.NegFOp)
def fold_negf(op: arith.NegFOp, rw: Rewriter) -> bool:
    """%y = arith.negf %c0.0  ->  %y = arith.constant -0.0"""
    source = constant_op(op.operand)
    if source is None:
        return False
    return replace_with_constant(op, fold.fold_negf(source.value, element_type(op.result.type)), rw)


@rewrite(*COMMUTATIVE_OPS)
def constant_to_rhs(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%z = arith.addi %c1, %x  ->  %z = arith.addi %x, %c1 (one form for identities and CSE)"""
    if constant_op(op.lhs) is None or constant_op(op.rhs) is not None:
        return False
    old = [op.lhs, op.rhs]
    op.lhs, op.rhs = op.rhs, op.lhs
    rw.changed_in_place(op, old)
    return True


# -- integer identities --------------------------------------------------------------------------
@rewrite(
    arith.AddIOp,
    arith.SubIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.ShLIOp,
    arith.ShRSIOp,
    arith.ShRUIOp,
)
def int_zero_rhs(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.addi %x, %c0  ->  %y replaced by %x (also subi, ori, xori and shifts by 0)"""
    return is_int(op.rhs, 0) and replace_with(op, op.lhs, rw)


@rewrite(arith.MulIOp, arith.DivSIOp, arith.DivUIOp)
def int_one_rhs(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.muli %x, %c1  ->  %y replaced by %x (also divsi, divui by 1)"""
    return is_int(op.rhs, 1) and replace_with(op, op.lhs, rw)


@rewrite(arith.MulIOp, arith.AndIOp)
def int_absorbing_zero(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.muli %x, %c0  ->  %y replaced by %c0 (also andi); ints only: 0.0 * inf is NaN"""
    return is_int(op.rhs, 0) and replace_with(op, op.rhs, rw)


@rewrite(arith.RemSIOp, arith.RemUIOp)
def rem_one(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.remsi %x, %c1  ->  %y = arith.constant 0"""
    return is_int(op.rhs, 1) and replace_with_constant(op, zero_of(op), rw)


@rewrite(arith.AndIOp)
def and_all_ones(op: arith.AndIOp, rw: Rewriter) -> bool:
    """%y = arith.andi %x, %c-1  ->  %y replaced by %x"""
    return is_int(op.rhs, -1) and replace_with(op, op.lhs, rw)


@rewrite(arith.OrIOp)
def or_all_ones(op: arith.OrIOp, rw: Rewriter) -> bool:
    """%y = arith.ori %x, %c-1  ->  %y replaced by %c-1"""
    return is_int(op.rhs, -1) and replace_with(op, op.rhs, rw)


@rewrite(
    arith.AndIOp,
    arith.OrIOp,
    arith.MaxSIOp,
    arith.MinSIOp,
    arith.MaxUIOp,
    arith.MinUIOp,
    arith.MaximumFOp,
    arith.MinimumFOp,
    arith.MaxNumFOp,
    arith.MinNumFOp,
)
def idempotent_self(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.andi %x, %x  ->  %y replaced by %x (also ori and every min/max, NaN included)"""
    return op.lhs is op.rhs and replace_with(op, op.lhs, rw)


@rewrite(arith.SubIOp, arith.XOrIOp)
def int_self_zero(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.subi %x, %x  ->  %y = arith.constant 0 (also xori); ints only: inf - inf is NaN"""
    return op.lhs is op.rhs and replace_with_constant(op, zero_of(op), rw)


@rewrite(arith.SubIOp)
def negate_twice(op: arith.SubIOp, rw: Rewriter) -> bool:
    """%y = arith.subi %c0, (arith.subi %c0, %x)  ->  %y replaced by %x (`-(-x)`, wrapping)"""
    inner = defining(op.rhs, arith.SubIOp)
    if inner is None or not is_int(op.lhs, 0) or not is_int(inner.lhs, 0):
        return False
    return replace_with(op, inner.rhs, rw)


@rewrite(arith.AddIOp, arith.MulIOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp)
def reassociate_constants(op: arith.BinaryOp, rw: Rewriter) -> bool:
    """%y = arith.addi (arith.addi %x, %c1), %c2  ->  %y = arith.addi %x, %c3 with c3 = c1 + c2
    (also muli, andi, ori, xori: associative on wrapping integers; `~~x` goes to `x ^ 0`, then x)"""
    inner = defining(op.lhs, type(op))
    outer_c, inner_c = constant_op(op.rhs), constant_op(inner.rhs) if inner else None
    if inner is None or outer_c is None or inner_c is None:
        return False
    scalar = element_type(op.result.type)
    value = fold.fold_int_binary(type(op), inner_c.value, outer_c.value, scalar)
    folded = rw.constant(value, op.result.type, before=op)
    return remake(op, type(op), rw, lhs=inner.lhs, rhs=folded)


_SELF_COMPARE = {
    "eq": True,
    "sle": True,
    "sge": True,
    "ule": True,
    "uge": True,
    "ne": False,
    "slt": False,
    "sgt": False,
    "ult": False,
    "ugt": False,
}


@rewrite(arith.CmpIOp)
def cmpi_self(op: arith.CmpIOp, rw: Rewriter) -> bool:
    """%b = arith.cmpi sle, %x, %x  ->  %b = arith.constant true (not cmpf: NaN != NaN)"""
    if op.lhs is not op.rhs or op.predicate not in _SELF_COMPARE:
        return False
    return replace_with_constant(op, _SELF_COMPARE[op.predicate], rw)


# -- float identities (exact for NaN, inf and -0.0) ----------------------------------------------
@rewrite(arith.AddFOp)
def addf_negative_zero(op: arith.AddFOp, rw: Rewriter) -> bool:
    """%y = arith.addf %x, -0.0  ->  %y replaced by %x (not +0.0: -0.0 + 0.0 is +0.0)"""
    return is_float(op.rhs, -0.0) and replace_with(op, op.lhs, rw)


@rewrite(arith.SubFOp)
def subf_zero(op: arith.SubFOp, rw: Rewriter) -> bool:
    """%y = arith.subf %x, 0.0  ->  %y replaced by %x (not -0.0: -0.0 - -0.0 is +0.0)"""
    return is_float(op.rhs, 0.0) and replace_with(op, op.lhs, rw)


@rewrite(arith.MulFOp)
def mulf_one(op: arith.MulFOp, rw: Rewriter) -> bool:
    """%y = arith.mulf %x, 1.0  ->  %y replaced by %x"""
    return is_float(op.rhs, 1.0) and replace_with(op, op.lhs, rw)


@rewrite(arith.NegFOp)
def negf_negf(op: arith.NegFOp, rw: Rewriter) -> bool:
    """%y = arith.negf (arith.negf %x)  ->  %y replaced by %x"""
    inner = defining(op.operand, arith.NegFOp)
    return inner is not None and replace_with(op, inner.operand, rw)


# -- select and casts ----------------------------------------------------------------------------
@rewrite(arith.SelectOp)
def select_constant_condition(op: arith.SelectOp, rw: Rewriter) -> bool:
    """%y = arith.select true, %a, %b  ->  %y replaced by %a"""
    condition = constant_op(op.condition)
    if condition is None:
        return False
    return replace_with(op, op.true_value if condition.value else op.false_value, rw)


@rewrite(arith.SelectOp)
def select_same(op: arith.SelectOp, rw: Rewriter) -> bool:
    """%y = arith.select %c, %x, %x  ->  %y replaced by %x"""
    return op.true_value is op.false_value and replace_with(op, op.true_value, rw)


@rewrite(arith.TruncIOp, arith.TruncFOp)
def trunc_of_ext(op: arith.UnaryOp, rw: Rewriter) -> bool:
    """%y = arith.trunci (arith.extsi %x : i8 -> i32) : i32 -> i8  ->  %y replaced by %x"""
    exts = (arith.ExtSIOp, arith.ExtUIOp) if isinstance(op, arith.TruncIOp) else (arith.ExtFOp,)
    inner = defining(op.operand, exts)
    return inner is not None and replace_with(op, inner.operand, rw)


# -- shapes and pointers -------------------------------------------------------------------------
@rewrite(tt.SplatOp)
def splat_constant(op: tt.SplatOp, rw: Rewriter) -> bool:
    """%t = tt.splat %c1 : tensor<4xi32>  ->  %t = arith.constant 1 : tensor<4xi32>"""
    source = constant_op(op.operand)
    return source is not None and replace_with_constant(op, source.value, rw)


@rewrite(tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)
def reshape_splat(op: Op, rw: Rewriter) -> bool:
    """%t = tt.broadcast (tt.splat %x) : tensor<1x4xf32> -> tensor<8x4xf32>  ->  %t = tt.splat %x
    (also expand_dims, reshape and trans, and of splat constants)"""
    source = op.operands[0]
    constant = constant_op(source)
    if constant is not None:
        return replace_with_constant(op, constant.value, rw)
    scalar = splat_source(source)
    return scalar is not None and remake(op, tt.SplatOp, rw, operand=scalar)


@rewrite(tt.BroadcastOp, tt.ReshapeOp)
def same_shape(op: Op, rw: Rewriter) -> bool:
    """%t = tt.broadcast %x : tensor<4xf32> -> tensor<4xf32>  ->  %t replaced by %x (and reshape)"""
    return replace_with(op, op.operands[0], rw)


@rewrite(tt.TransOp)
def trans_identity(op: tt.TransOp, rw: Rewriter) -> bool:
    """%t = tt.trans %x {order = [0, 1]}  ->  %t replaced by %x"""
    return tuple(op.order) == tuple(range(len(op.order))) and replace_with(op, op.src, rw)


@rewrite(tt.TransOp)
def trans_of_trans(op: tt.TransOp, rw: Rewriter) -> bool:
    """%t = tt.trans (tt.trans %x {order = a}) {order = b}  ->  %t = tt.trans %x {order = a[b]}
    (then trans_identity drops an identity: `b.T` of a tile `tl.dot_scaled` upcasts as N x K)"""
    inner = defining(op.src, tt.TransOp)
    if inner is None:
        return False
    return remake(op, tt.TransOp, rw, src=inner.src, order=tuple(inner.order[i] for i in op.order))


@rewrite(tt.AddPtrOp)
def addptr_zero(op: tt.AddPtrOp, rw: Rewriter) -> bool:
    """%q = tt.addptr %p, %c0  ->  %q replaced by %p"""
    return is_int(op.offset, 0) and replace_with(op, op.ptr, rw)


# -- control flow --------------------------------------------------------------------------------
@rewrite(scf.IfOp)
def if_constant_condition(op: scf.IfOp, rw: Rewriter) -> bool:
    """scf.if true { A; scf.yield %a } else { B }  ->  A, with the if's results replaced by %a"""
    condition = constant_op(op.condition)
    if condition is None or isinstance(op.condition.type, TensorType):
        return False
    region = op.then_region if condition.value else op.else_region
    block = region.blocks[0] if region.blocks else None
    if block is None or not block.ops:
        if op.results:
            return False  # nothing to map the results to
        rw.erase(op)
        return True
    terminator = block.ops[-1]
    if not isinstance(terminator, scf.YieldOp) or len(terminator.values) != len(op.results):
        return False
    for inner in block.ops[:-1]:
        rw.move_before(inner, op)
    rw.replace_op(op, list(terminator.values))
    return True


@rewrite(scf.ForOp)
def for_zero_trips(op: scf.ForOp, rw: Rewriter) -> bool:
    """scf.for %i = %c4 to %c4 step %c1 iter_args(%a = %x)  ->  its results replaced by %x"""
    lower, upper, step = (int_constant(v) for v in (op.lower, op.upper, op.step))
    if lower is None or upper is None or step is None:
        return False
    scalar = element_type(op.lower.type)
    if scalar.is_signed:
        n = scalar.bitwidth
        lower, upper, step = (fold.as_signed(v, n) for v in (lower, upper, step))
    if step <= 0 or lower < upper:
        return False
    rw.replace_op(op, list(op.init_args))
    return True
