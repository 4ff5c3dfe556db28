"""Strip-mining on the cpu target: a program whose tensors are all one 1-D shape and whose tensor
ops are all lane-local (elementwise ops, splats, ranges, constants, loads and stores) runs its
tensor part as an `scf.for` over chunks of a few SIMD registers' worth of lanes, so no LLVM value is
wider than the registers that hold it.

Why: a 1024-lane `<1024 x float>` is 128 AVX2 registers; LLVM's x86 back end loads all of x, then
all of y, and spills (a BLOCK=1024 vector add ran at 0.06x NumPy's speed). Chunks of four registers'
worth of lanes keep every value in registers, and the loads, the add and the store of a chunk stay
together.

The rewrite runs on `tile-opt` (before the layouts), so the rest of the pipeline is the usual one,
and the `tile-gpu` stage shows the loop. Lane r of a tensor depends only on lane r of its operands
in such a program, so running the lanes chunk by chunk computes the same values; memory accesses of
one program have no order among their lanes (as on the GPU), and scalar side effects (a store
through a scalar pointer) must come before the first tensor op for the rewrite to apply.
"""

from __future__ import annotations

from ...ir import Builder
from ...ir.ops import arith, scf, tt
from ...ir.types import TensorType, i32
from ...ir.values import Block, Region

# tensor ops that keep lane r of their result a function of lane r of their operands
_LANE_LOCAL = (tt.SplatOp, tt.MakeRangeOp, tt.LoadOp, tt.StoreOp, arith.ConstantOp)


def chunk_lanes(func: tt.FuncOp, lanes: int) -> bool:
    """Rewrite `func` so its tensor ops run as a loop over chunks of `lanes` lanes, where that
    computes the same thing (module docstring); returns whether it did."""
    block = func.body.block
    body = block.ops[:-1] if block.terminator is not None else list(block.ops)
    tensor_ops = [op for op in body if _touches_tensors(op)]
    size = _common_size(tensor_ops)
    if size is None or size <= lanes or size % lanes:
        return False
    first = body.index(tensor_ops[0])
    for op in body:
        if op.regions:
            return False
        if op in tensor_ops:
            if not (op.elementwise or isinstance(op, _LANE_LOCAL)) or isinstance(
                op, tt.ElementwiseInlineAsmOp
            ):  # (its `pack` groups lanes)
                return False
            if isinstance(op, arith.ConstantOp) and not _is_scalar_value(op.value):
                return False
        elif not op.pure and body.index(op) > first:
            return False  # a scalar side effect after the tensor part began: keep the order
    _rewrite(func, tensor_ops, size, lanes)
    return True


def _touches_tensors(op) -> bool:
    return any(isinstance(v.type, TensorType) for v in list(op.operands) + list(op.results))


def _common_size(ops) -> int | None:
    """The one 1-D tensor size of `ops`, or None."""
    shapes = {
        v.type.shape
        for op in ops
        for v in list(op.operands) + list(op.results)
        if isinstance(v.type, TensorType)
    }
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    return shape[0] if len(shape) == 1 else None


def _is_scalar_value(value) -> bool:
    return isinstance(value, (int, float, bool))


def _rewrite(func: tt.FuncOp, tensor_ops: list, size: int, lanes: int) -> None:
    block = func.body.block
    terminator = block.terminator
    b = Builder(block, loc=tensor_ops[0].loc)
    b.before = terminator
    lower, upper, step = (b.value(arith.ConstantOp, i32, value=v) for v in (0, size, lanes))
    loop_body = Block([i32], ["chunk"])
    loop = b.create(
        scf.ForOp, [], lower=lower, upper=upper, step=step, init_args=[], body=Region([loop_body])
    )
    loop.loc = tensor_ops[0].loc
    chunk_start = loop_body.args[0]
    for op in tensor_ops:
        block.remove(op)
        loop_body.append(op)
        for result in op.results:
            result.type = TensorType((lanes,), result.type.element, result.type.encoding)
    inner = Builder(loop_body)
    for op in [op for op in tensor_ops if isinstance(op, tt.MakeRangeOp)]:
        op.end = op.start + lanes
        users = [u for u in loop_body.ops if op.result in u.operands]
        if not users:
            continue
        with inner.before_op(users[0]), inner.at_loc(op.loc):
            offset = inner.value(tt.SplatOp, op.result.type, operand=chunk_start)
            shifted = inner.value(arith.AddIOp, op.result.type, lhs=op.result, rhs=offset)
        for user in users:
            user.replace_operand(op.result, shifted)
    inner.create(scf.YieldOp, [], values=[])
