"""Shared pieces of the lowering rules: the per-register elementwise driver and type queries."""

from __future__ import annotations

from ....ir.types import element_type
from ..lower import TVal


def lower_elementwise(lw, op) -> None:
    """Apply `ELEMENTWISE[type(op)]` to each register (all tensor operands share the result layout)."""
    from . import ELEMENTWISE

    rule = ELEMENTWISE[type(op)]
    args = [lw.get(v) for v in op.operands]
    tensors = [a for a in args if isinstance(a, TVal)]
    if not tensors:
        lw.set(op.result, rule(lw, op, *args))
        return
    layout = lw.layout(op.result)
    for t in tensors:
        if t.layout != layout:
            raise lw.error(op, f"internal: `{op.name}` operands are in different layouts")
    vals = []
    for r in range(layout.num_regs):
        vals.append(rule(lw, op, *[a.vals[r] if isinstance(a, TVal) else a for a in args]))
    lw.set(op.result, TVal(vals, layout))


def scalar_type(v):
    """The Tile IR element type of a value (scalar, pointer, or a tensor's element)."""
    return element_type(v.type)
