"""The IR builder: creates ops at an insertion point, giving each the current source location."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, TypeVar

from .location import UNKNOWN, Loc
from .ops.base import Op
from .types import Type
from .values import Block, OpResult, Value

OpT = TypeVar("OpT", bound=Op)


class Builder:
    """Appends new ops to `block` (or inserts them before `before`), located at `loc`."""

    def __init__(self, block: Block | None = None, loc: Loc = UNKNOWN):
        self.block = block
        self.before: Op | None = None
        self.loc = loc

    def create(
        self, cls: type[OpT], result_types: list[Type] = (), name: str | None = None, **fields
    ) -> OpT:
        """Build `cls(**fields)` with results of `result_types` and insert it; `name` hints the result."""
        op = cls(**fields)
        op.results = [OpResult(t, op, i, name) for i, t in enumerate(result_types)]
        op.loc = self.loc
        if self.before is not None:
            block = self.before.parent
            block.insert(block.ops.index(self.before), op)
        else:
            self.block.append(op)
        return op

    def value(self, cls: type[Op], result_type: Type, name: str | None = None, **fields) -> Value:
        """Build a one-result op and return its result."""
        return self.create(cls, [result_type], name=name, **fields).results[0]

    @contextmanager
    def at_end(self, block: Block) -> Iterator[Builder]:
        saved = (self.block, self.before)
        self.block, self.before = block, None
        try:
            yield self
        finally:
            self.block, self.before = saved

    @contextmanager
    def before_op(self, op: Op) -> Iterator[Builder]:
        saved = (self.block, self.before)
        self.block, self.before = op.parent, op
        try:
            yield self
        finally:
            self.block, self.before = saved

    @contextmanager
    def at_loc(self, loc: Loc) -> Iterator[Builder]:
        saved = self.loc
        self.loc = loc
        try:
            yield self
        finally:
            self.loc = saved
