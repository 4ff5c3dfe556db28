"""Triton's combine rewrites of dots, for the GPU passes (the interpreter runs `tile-opt`, before them):

- `combine_broadcast_mul_reduce`: `tl.sum(a[:, :, None] * b[None, :, :], axis=1)` (a: M x K, b: K x N,
  float32) becomes `tl.dot(a, b)` (ieee), so the M x K x N product is never held in registers.
- `combine_dot_add`: `acc + tl.dot(a, b)` becomes `tl.dot(a, b, acc)`, so a loop's accumulator is the
  dot's own (it stays in the tensor-core layout and in registers) rather than a sum converted each
  iteration. The product is then accumulated into `acc` at the dot's precision instead of rounded once
  more, which the interpreter does not do.
"""

from __future__ import annotations

from ..ir.ops import arith, tt
from ..ir.types import TensorType
from ..ir.values import OpResult
from .canonicalize import constant_op


def _zero_dot(value, uses: dict[int, int]) -> tt.DotOp | None:
    if not isinstance(value, OpResult) or not isinstance(value.op, tt.DotOp):
        return None
    zero = constant_op(value.op.c)
    if zero is None or zero.value != 0 or uses.get(id(value), 0) != 1:
        return None
    return value.op


def combine_dot_add(func: tt.FuncOp) -> bool:
    """Fold every `arith.addf/addi %acc, (tt.dot %a, %b, 0)` into the dot. Returns changed."""
    uses: dict[int, int] = {}
    for op in func.walk():
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    changed = False
    for op in [o for o in func.walk() if isinstance(o, (arith.AddFOp, arith.AddIOp))]:
        for dot_value, acc in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            dot = _zero_dot(dot_value, uses)
            if dot is None or acc.type != dot.result.type:
                continue
            # the dot moves to the add's place, where `acc` is defined
            dot.parent.remove(dot)
            dot.c = acc
            block = op.parent
            block.insert(block.ops.index(op), dot)
            for user in func.walk():
                user.replace_operand(op.result, dot.result)
            dot.result.name_hint = op.result.name_hint or dot.result.name_hint
            op.erase()
            changed = True
            break
    return changed


def _expanded(value, axis: int):
    """`a` where `value` is `tt.broadcast(tt.expand_dims(a, axis))` of a 2-D `a`, else None."""
    if not (isinstance(value, OpResult) and isinstance(value.op, tt.BroadcastOp)):
        return None
    inner = value.op.operand
    if not (
        isinstance(inner, OpResult)
        and isinstance(inner.op, tt.ExpandDimsOp)
        and inner.op.axis == axis
        and len(inner.op.src.type.shape) == 2
    ):
        return None
    return inner.op.src


def _sum_of_products(reduce: tt.ReduceOp):
    """(a, b) where `reduce` is sum(expand(a, 2) * expand(b, 0), axis=1) in float32, else None."""
    block = reduce.combine.block
    if (
        reduce.axis != 1
        or len(reduce.srcs) != 1
        or len(block.ops) != 2
        or not isinstance(block.ops[0], arith.AddFOp)
    ):
        return None
    product = reduce.srcs[0]
    if (
        not (isinstance(product, OpResult) and isinstance(product.op, arith.MulFOp))
        or str(product.type.element) != "f32"
        or len(product.type.shape) != 3
    ):
        return None
    for x, y in ((product.op.lhs, product.op.rhs), (product.op.rhs, product.op.lhs)):
        a, b = _expanded(x, 2), _expanded(y, 0)
        if a is not None and b is not None and a.type.shape[1] == b.type.shape[0]:
            return a, b
    return None


def _erase_unused(func: tt.FuncOp, value) -> None:
    """Erase the pure op behind `value` once nothing uses it, then its operands' ops likewise."""
    if not isinstance(value, OpResult) or not value.op.pure or value.op.regions:
        return
    if any(value is v for op in func.walk() for v in op.operands):
        return
    op = value.op
    operands = list(op.operands)
    op.erase()
    for v in operands:
        _erase_unused(func, v)


def combine_broadcast_mul_reduce(func: tt.FuncOp) -> bool:
    """Replace every broadcast-multiply-sum that is a matrix product by a `tt.dot`. Returns changed."""
    changed = False
    for reduce in [o for o in func.walk() if isinstance(o, tt.ReduceOp)]:
        found = _sum_of_products(reduce)
        if found is None:
            continue
        a, b = found
        result_type = reduce.results[0].type
        block, loc = reduce.parent, reduce.loc
        zero = arith.ConstantOp(value=0.0)
        zero.results = [OpResult(TensorType(result_type.shape, result_type.element), zero, 0)]
        zero.loc = loc
        dot = tt.DotOp(a=a, b=b, c=zero.results[0], input_precision="ieee")
        dot.results = [OpResult(result_type, dot, 0, reduce.results[0].name_hint)]
        dot.loc = loc
        block.insert(block.ops.index(reduce), zero)
        block.insert(block.ops.index(reduce), dot)
        for user in func.walk():
            user.replace_operand(reduce.results[0], dot.results[0])
        product = reduce.srcs[0]
        reduce.erase()
        _erase_unused(func, product)
        changed = True
    return changed
