"""Tile IR: types, values, ops (one module per dialect), the builder, the printer and the verifier."""

from .builder import Builder
from .location import UNKNOWN, Loc
from .ops import arith, math, scf, tt
from .ops.base import Op
from .printer import print_ir, print_ir_lines
from .types import PointerType, ScalarType, TensorType, Type
from .values import Block, BlockArgument, OpResult, Region, Value
from .verifier import IRVerificationError, verify

__all__ = [
    "Block",
    "BlockArgument",
    "Builder",
    "IRVerificationError",
    "Loc",
    "Op",
    "OpResult",
    "PointerType",
    "Region",
    "ScalarType",
    "TensorType",
    "Type",
    "UNKNOWN",
    "Value",
    "arith",
    "math",
    "print_ir",
    "print_ir_lines",
    "scf",
    "tt",
    "verify",
]
