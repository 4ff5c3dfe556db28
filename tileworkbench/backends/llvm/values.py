"""The value a tensor lowers to, apart from the driver (`lower.py`) so that the lowering rules in
`lowering/`, which the driver imports, can import it without an import cycle."""

from __future__ import annotations

from ...ir.ops.ttg import LinearLayout


class TVal:
    """A tensor in registers: `vals[r]` is the element at `layout.reg_coords(r)` + this thread's part."""

    __slots__ = ("layout", "vals")

    def __init__(self, vals: list, layout: LinearLayout):
        self.vals = vals
        self.layout = layout
