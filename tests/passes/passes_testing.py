"""Builders for hand-made Tile IR in the pass tests, and the golden-IR comparison."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from tileworkbench.ir import Block, Builder, Region, Value, print_ir, verify
from tileworkbench.ir.ops import arith, scf, tt
from tileworkbench.ir.types import Type


def new_func(params: Sequence[tuple[str, Type]], name: str = "k") -> tuple[tt.FuncOp, Builder]:
    """An empty `tt.func` with named parameters, and a builder appending to its body."""
    block = Block([t for _, t in params], [n for n, _ in params])
    return tt.FuncOp(sym_name=name, body=Region([block])), Builder(block)


def finish(func: tt.FuncOp, builder: Builder) -> tt.FuncOp:
    builder.create(tt.ReturnOp)
    verify(func)
    return func


def const(b: Builder, value: Any, type: Type, name: str | None = None) -> Value:
    return b.value(arith.ConstantOp, type, name=name, value=value)


def binary(b: Builder, cls: type, lhs: Value, rhs: Value, name: str | None = None) -> Value:
    return b.value(cls, lhs.type, name=name, lhs=lhs, rhs=rhs)


def store(b: Builder, ptr: Value, value: Value) -> None:
    b.create(tt.StoreOp, ptr=ptr, value=value)


def for_loop(
    b: Builder,
    lower: Value,
    upper: Value,
    step: Value,
    inits: Sequence[Value],
    body: Callable[[Value, list[Value]], list[Value]],
    names: Sequence[str] = (),
) -> scf.ForOp:
    """`scf.for` whose body is built by `body(iv, carried) -> yielded`."""
    arg_names = ["i", *names] + [None] * (len(inits) - len(names))
    block = Block([lower.type] + [v.type for v in inits], arg_names)
    op = b.create(
        scf.ForOp,
        [v.type for v in inits],
        lower=lower,
        upper=upper,
        step=step,
        init_args=list(inits),
        body=Region([block]),
    )
    with b.at_end(block):
        yielded = body(block.args[0], block.args[1:])
        b.create(scf.YieldOp, values=list(yielded))
    return op


def if_op(
    b: Builder,
    condition: Value,
    result_types: Sequence[Type],
    then: Callable[[], list[Value]],
    otherwise: Callable[[], list[Value]] | None,
) -> scf.IfOp:
    """`scf.if` whose regions are built by `then()` / `otherwise()` returning the yielded values."""
    then_block, else_block = Block(), Block()
    op = b.create(
        scf.IfOp,
        list(result_types),
        condition=condition,
        then_region=Region([then_block]),
        else_region=Region([else_block]),
    )
    with b.at_end(then_block):
        b.create(scf.YieldOp, values=list(then()))
    if otherwise is not None:
        with b.at_end(else_block):
            b.create(scf.YieldOp, values=list(otherwise()))
    return op


def assert_ir(func: tt.FuncOp, expected: str) -> None:
    """The printed IR of `func` equals the dedented `expected` (leading newline ignored)."""
    got = print_ir(func)
    want = textwrap.dedent(expected).lstrip("\n")
    assert got == want, f"IR differs.\n--- got ---\n{got}--- expected ---\n{want}"
