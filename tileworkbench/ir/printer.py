"""Prints Tile IR in an MLIR-like form with Triton's dialect names, optionally with `loc(...)` suffixes.

The printer assigns value names (`%pid`, `%offs_1`, `%0`), so passes never have to. `print_ir_lines`
also returns the op location behind every printed line: the source-line map of the `tile*` stages.
"""

from __future__ import annotations

import dataclasses

from .location import Loc
from .ops.arith import ConstantOp
from .ops.base import Op
from .ops.scf import ForOp, IfOp, WhileOp
from .ops.tt import FuncOp
from .types import MemDescType
from .values import Block, Value


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def __call__(self, value: Value) -> str:
        key = id(value)
        if key not in self.names:
            self.names[key] = self._fresh(value.name_hint)
        return "%" + self.names[key]

    def _fresh(self, hint: str | None) -> str:
        if hint:
            name, k = hint, 0
            while name in self.used:
                k += 1
                name = f"{hint}_{k}"
        else:
            name = str(self.counter)
            self.counter += 1
            while name in self.used:
                name = str(self.counter)
                self.counter += 1
        self.used.add(name)
        return name


def _default(op: Op, name: str):
    for f in dataclasses.fields(op):
        if f.name == name:
            return f.default
    return dataclasses.MISSING


def _attr(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_attr(v) for v in value) + "]"
    return str(value)


class _Printer:
    def __init__(self, locs: bool):
        self.locs = locs
        self.name = _Namer()
        self.lines: list[tuple[str, Loc | None]] = []
        self.aliases: dict[object, str] = {}

    def collect_aliases(self, root: Op) -> None:
        """Name each layout encoding once (`#blocked`, `#blocked1`, `#slice`), as TTGIR does, and print
        the definitions first: types then stay short enough to read."""
        seen: list[object] = []
        for op in root.walk():
            values = list(op.results)
            for region in op.regions:
                for block in region.blocks:
                    values += block.args
            for value in values:
                encoding = getattr(value.type, "encoding", None)
                if encoding is not None and encoding not in seen:
                    seen.append(encoding)
        counts: dict[str, int] = {}
        for encoding in seen:
            text = str(encoding)
            base = text[1 : text.index("<")] if text.startswith("#") and "<" in text else "layout"
            k = counts.get(base, 0)
            counts[base] = k + 1
            self.aliases[encoding] = f"#{base}{k if k else ''}"
        by_length = sorted(self.aliases.items(), key=lambda item: -len(str(item[0])))
        for encoding in seen:
            text = str(encoding)
            for other, alias in by_length:
                if other is not encoding:
                    text = text.replace(str(other), alias)
            if text.startswith("#"):
                text = "#ttg." + text[1:]  # Triton's dialect prefix, as TTGIR prints it
            self.lines.append((f"{self.aliases[encoding]} = {text}", None))

    def type(self, t) -> str:
        encoding = getattr(t, "encoding", None)
        if encoding is None or encoding not in self.aliases:
            return str(t)
        dims = "x".join(str(d) for d in t.shape)
        if isinstance(t, MemDescType):
            return f"!ttg.memdesc<{dims}x{t.element}, {self.aliases[encoding]}, mutable>"
        return f"tensor<{dims}x{t.element}, {self.aliases[encoding]}>"

    def emit(self, indent: int, text: str, loc: Loc | None) -> None:
        if self.locs and loc is not None and loc.line > 0:
            text = f"{text}  {loc.printed()}"
        self.lines.append(("  " * indent + text, loc))

    def values(self, values) -> str:
        return ", ".join(self.name(v) for v in values)

    def results(self, op: Op) -> str:
        return f"{self.values(op.results)} = " if op.results else ""

    def op(self, op: Op, indent: int) -> None:
        if isinstance(op, FuncOp):
            return self.func(op, indent)
        if isinstance(op, ForOp):
            return self.for_op(op, indent)
        if isinstance(op, IfOp):
            return self.if_op(op, indent)
        if isinstance(op, WhileOp):
            return self.while_op(op, indent)
        if isinstance(op, ConstantOp):
            return self.emit(
                indent,
                f"{self.results(op)}{op.name} {_attr(op.value)} : {self.type(op.result.type)}",
                op.loc,
            )
        attrs = {
            k: v for k, v in op.attributes.items() if v not in ("", ()) and v != _default(op, k)
        }
        text = f"{self.results(op)}{op.name}"
        if op.operands:
            text += " " + self.values(op.operands)
        if attrs:
            text += " {" + ", ".join(f"{k} = {_attr(v)}" for k, v in attrs.items()) + "}"
        types = [r.type for r in op.results] or [v.type for v in op.operands]
        if types:
            text += " : " + ", ".join(self.type(t) for t in types)
        if not op.regions:
            return self.emit(indent, text, op.loc)
        self.emit(indent, text + " ({", op.loc)
        for region in op.regions:
            self.block(region.block, indent + 1, header=True)
        self.emit(indent, "})", None)

    def block(self, block: Block, indent: int, header: bool = False) -> None:
        if header and block.args:
            args = ", ".join(f"{self.name(a)}: {self.type(a.type)}" for a in block.args)
            self.emit(indent - 1, f"^bb({args}):", None)
        for op in block.ops:
            self.op(op, indent)

    def func(self, op: FuncOp, indent: int) -> None:
        params = []
        for arg, attrs in zip(op.args, op.arg_attrs or [{}] * len(op.args)):
            extra = (
                " {" + ", ".join(f"{k} = {_attr(v)}" for k, v in attrs.items()) + "}"
                if attrs
                else ""
            )
            params.append(f"{self.name(arg)}: {self.type(arg.type)}{extra}")
        self.emit(indent, f"tt.func @{op.sym_name}({', '.join(params)}) {{", op.loc)
        self.block(op.body.block, indent + 1)
        self.emit(indent, "}", None)

    def for_op(self, op: ForOp, indent: int) -> None:
        body = op.body.block
        iv, carried = body.args[0], body.args[1:]
        text = (
            f"{self.results(op)}scf.for {self.name(iv)} = {self.name(op.lower)} to "
            f"{self.name(op.upper)} step {self.name(op.step)} : {self.type(iv.type)}"
        )
        if carried:
            pairs = ", ".join(
                f"{self.name(a)} = {self.name(v)}" for a, v in zip(carried, op.init_args)
            )
            text += f" iter_args({pairs}) -> ({', '.join(self.type(r.type) for r in op.results)})"
        self.emit(indent, text + " {", op.loc)
        self.block(body, indent + 1)
        self.emit(indent, "}", None)

    def if_op(self, op: IfOp, indent: int) -> None:
        types = f" -> ({', '.join(self.type(r.type) for r in op.results)})" if op.results else ""
        self.emit(indent, f"{self.results(op)}scf.if {self.name(op.condition)}{types} {{", op.loc)
        self.block(op.then_region.block, indent + 1)
        if op.else_region.blocks and op.else_region.block.ops:
            self.emit(indent, "} else {", None)
            self.block(op.else_region.block, indent + 1)
        self.emit(indent, "}", None)

    def while_op(self, op: WhileOp, indent: int) -> None:
        before = op.before.block
        pairs = ", ".join(
            f"{self.name(a)} = {self.name(v)}" for a, v in zip(before.args, op.init_args)
        )
        types = ", ".join(self.type(r.type) for r in op.results)
        self.emit(indent, f"{self.results(op)}scf.while ({pairs}) -> ({types}) {{", op.loc)
        self.block(before, indent + 1)
        after = op.after.block
        args = ", ".join(f"{self.name(a)}: {self.type(a.type)}" for a in after.args)
        self.emit(indent, "} do {", None)
        self.emit(indent, f"^bb({args}):", None)
        self.block(after, indent + 1)
        self.emit(indent, "}", None)


def print_ir_lines(op: Op, locs: bool = True) -> list[tuple[str, Loc | None]]:
    """The printed lines of `op`, each with the location of the op it shows (None for closing braces)."""
    printer = _Printer(locs)
    printer.collect_aliases(op)
    printer.op(op, 0)
    return printer.lines


def print_ir(op: Op, locs: bool = False) -> str:
    """`op` (usually a `tt.func`) as MLIR-like text; with `locs`, each line ends in `loc("file.py":line)`."""
    return "\n".join(text for text, _ in print_ir_lines(op, locs)) + "\n"
