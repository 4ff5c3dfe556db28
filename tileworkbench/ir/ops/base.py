"""The `Op` base class: a dataclass whose fields are marked as operands, attributes or regions.

Subclasses declare their printed name and traits in the class header:

    @dataclass(eq=False)
    class AddFOp(Op, name="arith.addf", pure=True, commutative=True):
        lhs: Value = operand()
        rhs: Value = operand()

The builder sets `results` and `loc` after construction, so subclasses never declare them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, ClassVar, Iterator

from ..location import UNKNOWN, Loc
from ..values import Block, OpResult, Region, Value

_KIND = "ir_kind"


def operand(optional: bool = False) -> Any:
    """A single SSA operand (None allowed when `optional`)."""
    if optional:
        return field(default=None, metadata={_KIND: "operand"})
    return field(metadata={_KIND: "operand"})


def operands() -> Any:
    """A variadic list of SSA operands."""
    return field(default_factory=list, metadata={_KIND: "operands"})


def attribute(default: Any = dataclasses.MISSING) -> Any:
    """A compile-time attribute: an int, float, str, bool, tuple or type."""
    return field(default=default, metadata={_KIND: "attribute"})


def region() -> Any:
    return field(default_factory=Region, metadata={_KIND: "region"})


class Op:
    """Base of every Tile IR op. `name` is the printed name; traits are class-level flags."""

    name: ClassVar[str] = "<op>"
    pure: ClassVar[bool] = False
    commutative: ClassVar[bool] = False
    is_terminator: ClassVar[bool] = False
    elementwise: ClassVar[bool] = False

    results: list[OpResult] = ()  # set by the builder
    loc: Loc = UNKNOWN
    parent: Block | None = None

    def __init_subclass__(
        cls,
        name: str | None = None,
        pure: bool | None = None,
        commutative: bool | None = None,
        terminator: bool | None = None,
        elementwise: bool | None = None,
        **kwargs: Any,
    ):
        super().__init_subclass__(**kwargs)
        if name is not None:
            cls.name = name
        for trait, value in (
            ("pure", pure),
            ("commutative", commutative),
            ("is_terminator", terminator),
            ("elementwise", elementwise),
        ):
            if value is not None:
                setattr(cls, trait, value)

    def __post_init__(self):
        for region in self.regions:
            region.parent = self

    # -- structure ------------------------------------------------------------------------------
    @classmethod
    def _field_kinds(cls) -> tuple[tuple[str, str], ...]:
        """(field name, kind) of every IR field, in order; computed once per class (hot in every pass)."""
        kinds = cls.__dict__.get("_FIELD_KINDS")
        if kinds is None:
            kinds = tuple(
                (f.name, f.metadata[_KIND]) for f in dataclasses.fields(cls) if _KIND in f.metadata
            )
            cls._FIELD_KINDS = kinds
        return kinds

    @classmethod
    def _field_names(cls, kind: str) -> list[str]:
        return [name for name, k in cls._field_kinds() if k == kind]

    @property
    def operands(self) -> list[Value]:
        """All SSA operands, in field order, with variadic lists flattened and absent optionals skipped."""
        out: list[Value] = []
        for name, kind in self._field_kinds():
            if kind == "operand":
                value = getattr(self, name)
                if value is not None:
                    out.append(value)
            elif kind == "operands":
                out.extend(getattr(self, name))
        return out

    @property
    def attributes(self) -> dict[str, Any]:
        return {
            name: getattr(self, name) for name, kind in self._field_kinds() if kind == "attribute"
        }

    @property
    def regions(self) -> list[Region]:
        return [getattr(self, name) for name, kind in self._field_kinds() if kind == "region"]

    @property
    def result(self) -> OpResult:
        """The single result of a one-result op."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    def replace_operand(self, old: Value, new: Value) -> bool:
        """Point every use of `old` in this op's operands (not its regions) at `new`."""
        changed = False
        for name, kind in self._field_kinds():
            if kind == "operand" and getattr(self, name) is old:
                setattr(self, name, new)
                changed = True
            elif kind == "operands":
                values = getattr(self, name)
                for i, v in enumerate(values):
                    if v is old:
                        values[i] = new
                        changed = True
        return changed

    def walk(self) -> Iterator[Op]:
        """This op, then every op nested in its regions, in program order."""
        yield self
        for r in self.regions:
            for block in r.blocks:
                yield from block.walk()

    def erase(self) -> None:
        if self.parent is not None:
            self.parent.remove(self)

    @property
    def parent_op(self) -> Op | None:
        return self.parent.parent_op if self.parent is not None else None

    def is_ancestor_of(self, op: Op) -> bool:
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    def __repr__(self) -> str:
        return f"<{self.name} at {self.loc}>"
