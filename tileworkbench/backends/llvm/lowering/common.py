"""Shared pieces of the lowering rules: the per-register elementwise driver and type queries."""

from __future__ import annotations

from ....ir.types import element_type
from ..values import TVal


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
    same_as = constant_runs(layout, lw.axis.info(op.result).constancy)
    vals = []
    for r in range(layout.num_regs):
        if (
            same_as[r] != r
        ):  # equal to an element already computed (a mask over 8 contiguous columns)
            vals.append(vals[same_as[r]])
            continue
        vals.append(rule(lw, op, *[a.vals[r] if isinstance(a, TVal) else a for a in args]))
    lw.set(op.result, TVal(vals, layout))


def constant_runs(layout, constancy: tuple[int, ...]) -> list[int]:
    """For each register, the first register of this thread certain to hold the same value.

    Axis info says values are equal in aligned runs of `constancy[d]` along each dim. When every basis
    is one bit of one coordinate and no two bases share a bit, an element's coordinates are the OR of
    its bases, so register bits whose bases stay below the run length never leave a run: registers
    differing only in them are equal. Computing them once keeps ptxas from holding a predicate (or a
    register) per element, as Triton's deduplication of elementwise ops does.
    """
    n = layout.num_regs
    if n == 1 or all(c <= 1 for c in constancy):
        return list(range(n))
    seen = set()
    for basis in layout.regs + layout.lanes + layout.warps:
        bits = [(d, b) for d, b in enumerate(basis) if b]
        if not bits:
            continue
        if len(bits) != 1 or bits[0][1] & (bits[0][1] - 1) or bits[0] in seen:
            return list(range(n))
        seen.add(bits[0])
    run = [c & -c for c in constancy]  # the largest power of two dividing each run length
    low = 0
    for j, basis in enumerate(layout.regs):
        if all(b < run[d] for d, b in enumerate(basis)):
            low |= 1 << j
    return [r & ~low for r in range(n)]


def scalar_type(v):
    """The Tile IR element type of a value (scalar, pointer, or a tensor's element)."""
    return element_type(v.type)
