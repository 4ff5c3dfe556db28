"""Pointer provenance: for every pointer value (scalar or tile), which pointer arguments of the kernel it
may derive from. Read by the debug-mode bounds checks (`backends/llvm/lowering/bounds.py`), which check
each load, store and atomic against the arrays its pointer can come from. An analysis: it changes no IR
and needs nothing run before it.

The lattice (Bril's `df.py` shape): an `Origin` is a set of argument indices plus an `unknown` flag;
merge is union. A pointer result derives from the pointer operands of its op (`tt.addptr`, `tt.splat`,
`tt.broadcast`, reshapes, `arith.select`, `ttg.convert_layout`, ...: block pointers and tensor
descriptors are pointer arithmetic by then); `OPAQUE` ops (a pointer loaded from memory, made from an
integer, or returned by an atomic) give `unknown`. Loop-carried values iterate to a fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.ops import scf, tt
from ..ir.types import PointerType, element_type
from ..ir.values import Value


@dataclass(frozen=True)
class Origin:
    """The arguments a pointer may derive from; `unknown`: also from somewhere the analysis cannot see."""

    args: frozenset[int] = frozenset()
    unknown: bool = False

    def merge(self, other: Origin) -> Origin:
        return Origin(self.args | other.args, self.unknown or other.unknown)

    @property
    def checkable(self) -> bool:
        """Whether every address this pointer can hold lies in some known argument's array."""
        return bool(self.args) and not self.unknown


NOWHERE = Origin()
UNKNOWN = Origin(unknown=True)
# ops whose pointer results do not derive from their pointer operands' addresses
OPAQUE = (tt.LoadOp, tt.IntToPtrOp, tt.AtomicRMWOp, tt.AtomicCASOp)


def is_pointer(value: Value) -> bool:
    return isinstance(element_type(value.type), PointerType)


class Provenance:
    """`origin(value)` of every pointer value of a `tt.func`."""

    def __init__(self, func: tt.FuncOp):
        self.origins: dict[int, Origin] = {}
        for arg in func.body.block.args:
            if is_pointer(arg):
                self.origins[id(arg)] = Origin(frozenset({arg.index}))
        self._changed = True
        while (
            self._changed
        ):  # loop-carried pointers grow until nothing changes (the lattice is finite)
            self._changed = False
            self._block(func.body.block)

    def origin(self, value: Value) -> Origin:
        return self.origins.get(id(value), NOWHERE)

    def _join(self, value: Value, origin: Origin) -> None:
        if not is_pointer(value):
            return
        old = self.origins.get(id(value), NOWHERE)
        new = old.merge(origin)
        if new != old:
            self.origins[id(value)] = new
            self._changed = True

    def _block(self, block) -> None:
        for op in block.ops:
            transfer = _TRANSFER.get(type(op), _derived)
            transfer(self, op)

    def _of(self, values) -> Origin:
        origin = NOWHERE
        for value in values:
            origin = origin.merge(self.origin(value))
        return origin


def _derived(prov: Provenance, op) -> None:
    """A pointer result derives from the op's pointer operands (none: unknown)."""
    for region in op.regions:
        for block in region.blocks:
            prov._block(block)
    if not any(is_pointer(r) for r in op.results):
        return
    sources = [v for v in op.operands if is_pointer(v)]
    origin = prov._of(sources) if sources and not isinstance(op, OPAQUE) else UNKNOWN
    for result in op.results:
        prov._join(result, origin)


def _yielded(block) -> list[Value]:
    terminator = block.terminator
    return list(terminator.operands) if terminator is not None else []


def _for(prov: Provenance, op: scf.ForOp) -> None:
    body = op.body.block
    carried = body.args[1:]  # the induction variable, then the carried values
    for arg, init in zip(carried, op.init_args):
        prov._join(arg, prov.origin(init))
    prov._block(body)
    for arg, result, value in zip(carried, op.results, _yielded(body)):
        prov._join(arg, prov.origin(value))
        prov._join(result, prov.origin(arg))


def _if(prov: Provenance, op: scf.IfOp) -> None:
    for region in (op.then_region, op.else_region):
        for block in region.blocks:
            prov._block(block)
            for result, value in zip(op.results, _yielded(block)):
                prov._join(result, prov.origin(value))


def _while(prov: Provenance, op: scf.WhileOp) -> None:
    before, after = op.before.block, op.after.block
    for arg, init in zip(before.args, op.init_args):
        prov._join(arg, prov.origin(init))
    prov._block(before)
    condition = before.terminator
    passed = list(condition.args) if condition is not None else []
    for arg, result, value in zip(after.args, op.results, passed):
        prov._join(arg, prov.origin(value))
        prov._join(result, prov.origin(value))
    prov._block(after)
    for arg, value in zip(before.args, _yielded(after)):
        prov._join(arg, prov.origin(value))


_TRANSFER = {scf.ForOp: _for, scf.IfOp: _if, scf.WhileOp: _while}


def pointer_provenance(func: tt.FuncOp) -> Provenance:
    """The provenance of every pointer value in `func` (see the module docstring)."""
    return Provenance(func)
