"""The `math` dialect: elementwise transcendental and rounding functions on floats (and `absi`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Value
from .arith import UnaryOp
from .base import Op, operand


class ExpOp(UnaryOp, name="math.exp"): ...


class Exp2Op(UnaryOp, name="math.exp2"): ...


class LogOp(UnaryOp, name="math.log"): ...


class Log2Op(UnaryOp, name="math.log2"): ...


class SqrtOp(
    UnaryOp, name="math.sqrt"
): ...  # approximate on GPUs, as in Triton; tt.precise_sqrt is exact


class RsqrtOp(UnaryOp, name="math.rsqrt"): ...


class SinOp(UnaryOp, name="math.sin"): ...


class CosOp(UnaryOp, name="math.cos"): ...


class AbsFOp(UnaryOp, name="math.absf"): ...


class AbsIOp(UnaryOp, name="math.absi"): ...


class FloorOp(UnaryOp, name="math.floor"): ...


class CeilOp(UnaryOp, name="math.ceil"): ...


class ErfOp(UnaryOp, name="math.erf"): ...


@dataclass(eq=False)
class FmaOp(Op, name="math.fma", pure=True, elementwise=True):
    """`a * b + c` with one rounding."""

    a: Value = operand()
    b: Value = operand()
    c: Value = operand()
