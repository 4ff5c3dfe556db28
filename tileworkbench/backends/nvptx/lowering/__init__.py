"""Lowering rules of the NVPTX back end, one module per op family, joined in two tables:
`LOWERINGS` (op class -> `lower_<op>(lowering, op)`) and `ELEMENTWISE` (op class -> a rule that maps
the LLVM values of one element of each operand to the result element). `UNSUPPORTED` names the op
classes with no rule and why."""

from __future__ import annotations

LOWERINGS: dict[type, object] = {}
ELEMENTWISE: dict[type, object] = {}
UNSUPPORTED: dict[type, str] = {}


def lowers(*classes):
    """Register `fn(lowering, op)` as the lowering of `classes`."""
    def register(fn):
        for cls in classes:
            LOWERINGS[cls] = fn
        return fn
    return register


def elementwise(*classes):
    """Register `fn(lowering, op, *element_values) -> value` for `classes` (applied per register)."""
    from .common import lower_elementwise

    def register(fn):
        for cls in classes:
            ELEMENTWISE[cls] = fn
            LOWERINGS[cls] = lower_elementwise
        return fn
    return register


from . import arith, control, dot, math, memory, misc, reduce, shape  # noqa: E402,F401
