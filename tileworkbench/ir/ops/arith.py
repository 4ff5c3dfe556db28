"""The `arith` dialect: constants, elementwise integer/float arithmetic, comparisons, select and casts.

Every op here is elementwise: it works the same on a scalar and, element by element, on a tensor, and its
operands already have one shape (the frontend broadcasts first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..values import Value
from .base import Op, attribute, operand


@dataclass(eq=False)
class ConstantOp(Op, name="arith.constant", pure=True):
    """A scalar constant, or a tensor with every element equal to `value` (the result type says which)."""

    value: Any = attribute()


@dataclass(eq=False)
class BinaryOp(Op, pure=True, elementwise=True):
    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class UnaryOp(Op, pure=True, elementwise=True):
    operand: Value = operand()


# Integer arithmetic. Division and remainder truncate toward zero, as in C (and Triton).
class AddIOp(BinaryOp, name="arith.addi", commutative=True): ...


class SubIOp(BinaryOp, name="arith.subi"): ...


class MulIOp(BinaryOp, name="arith.muli", commutative=True): ...


class DivSIOp(BinaryOp, name="arith.divsi"): ...


class DivUIOp(BinaryOp, name="arith.divui"): ...


class RemSIOp(BinaryOp, name="arith.remsi"): ...


class RemUIOp(BinaryOp, name="arith.remui"): ...


class AndIOp(BinaryOp, name="arith.andi", commutative=True): ...


class OrIOp(BinaryOp, name="arith.ori", commutative=True): ...


class XOrIOp(BinaryOp, name="arith.xori", commutative=True): ...


class ShLIOp(BinaryOp, name="arith.shli"): ...


class ShRSIOp(BinaryOp, name="arith.shrsi"): ...


class ShRUIOp(BinaryOp, name="arith.shrui"): ...


class MaxSIOp(BinaryOp, name="arith.maxsi", commutative=True): ...


class MinSIOp(BinaryOp, name="arith.minsi", commutative=True): ...


class MaxUIOp(BinaryOp, name="arith.maxui", commutative=True): ...


class MinUIOp(BinaryOp, name="arith.minui", commutative=True): ...


# Float arithmetic. `maximumf`/`minimumf` propagate NaN; `maxnumf`/`minnumf` return the non-NaN operand.
class AddFOp(BinaryOp, name="arith.addf", commutative=True): ...


class SubFOp(BinaryOp, name="arith.subf"): ...


class MulFOp(BinaryOp, name="arith.mulf", commutative=True): ...


class DivFOp(BinaryOp, name="arith.divf"): ...


class RemFOp(BinaryOp, name="arith.remf"): ...


class MaximumFOp(BinaryOp, name="arith.maximumf", commutative=True): ...


class MinimumFOp(BinaryOp, name="arith.minimumf", commutative=True): ...


class MaxNumFOp(BinaryOp, name="arith.maxnumf", commutative=True): ...


class MinNumFOp(BinaryOp, name="arith.minnumf", commutative=True): ...


class NegFOp(UnaryOp, name="arith.negf"): ...


INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
# Ordered predicates are false when either side is NaN; `une` (Python's !=) is true then.
FLOAT_PREDICATES = ("oeq", "one", "olt", "ole", "ogt", "oge", "une", "ord", "uno")


@dataclass(eq=False)
class CmpIOp(Op, name="arith.cmpi", pure=True, elementwise=True):
    """Integer comparison giving i1; `predicate` is one of INT_PREDICATES."""

    predicate: str = attribute()
    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class CmpFOp(Op, name="arith.cmpf", pure=True, elementwise=True):
    """Float comparison giving i1; `predicate` is one of FLOAT_PREDICATES."""

    predicate: str = attribute()
    lhs: Value = operand()
    rhs: Value = operand()


@dataclass(eq=False)
class SelectOp(Op, name="arith.select", pure=True, elementwise=True):
    """`condition ? true_value : false_value`, element by element."""

    condition: Value = operand()
    true_value: Value = operand()
    false_value: Value = operand()


# Casts: the result type is the target type.
class ExtSIOp(UnaryOp, name="arith.extsi"): ...


class ExtUIOp(UnaryOp, name="arith.extui"): ...


class TruncIOp(UnaryOp, name="arith.trunci"): ...


class ExtFOp(UnaryOp, name="arith.extf"): ...


class TruncFOp(UnaryOp, name="arith.truncf"): ...  # round to nearest even


class SIToFPOp(UnaryOp, name="arith.sitofp"): ...


class UIToFPOp(UnaryOp, name="arith.uitofp"): ...


class FPToSIOp(UnaryOp, name="arith.fptosi"): ...


class FPToUIOp(UnaryOp, name="arith.fptoui"): ...


class BitcastOp(UnaryOp, name="arith.bitcast"): ...
