"""SSA values, blocks and regions: the containers every Tile IR op lives in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from .ops.base import Op
    from .types import Type


class Value:
    """An SSA value of one type. `name_hint` comes from the source variable, where there is one."""

    def __init__(self, type: Type, name_hint: str | None = None):
        self.type = type
        self.name_hint = name_hint

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name_hint or '?'}: {self.type}>"


class OpResult(Value):
    def __init__(self, type: Type, op: Op, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.op = op
        self.index = index


class BlockArgument(Value):
    def __init__(self, type: Type, block: Block, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index


class Block:
    """A straight-line list of ops with typed arguments (loop-carried values, function parameters)."""

    def __init__(self, arg_types: list[Type] = (), arg_names: list[str | None] | None = None):
        names = arg_names or [None] * len(arg_types)
        self.args = [BlockArgument(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Op] = []
        self.parent: Region | None = None

    def add_arg(self, type: Type, name: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args), name)
        self.args.append(arg)
        return arg

    def insert_arg(self, index: int, type: Type, name: str | None = None) -> BlockArgument:
        """A new argument at `index`; those after it move up one."""
        arg = BlockArgument(type, self, index, name)
        self.args.insert(index, arg)
        for i, other in enumerate(self.args):
            other.index = i
        return arg

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Op) -> Op:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def remove(self, op: Op) -> None:
        self.ops.remove(op)
        op.parent = None

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].is_terminator else None

    @property
    def parent_op(self) -> Op | None:
        return self.parent.parent if self.parent is not None else None

    def walk(self) -> Iterator[Op]:
        """Every op in this block and, recursively, in its ops' regions, in program order."""
        for op in list(self.ops):
            yield from op.walk()


class Region:
    """A list of blocks owned by an op (Tile IR regions have exactly one block)."""

    def __init__(self, blocks: list[Block] | None = None):
        self.blocks: list[Block] = []
        self.parent: Op | None = None
        for block in blocks or []:
            self.add_block(block)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The region's single block."""
        return self.blocks[0]
