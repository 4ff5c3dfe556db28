"""Layout assignment: gives every tensor value an encoding (`TensorType.encoding`) and inserts
`ttg.convert_layout` where an op needs its operand in another layout than the operand has.

Anchors (global loads, stores and atomics with the layout `coalesce` chose; `tt.dot`) fix layouts;
each anchor's layout flows backward into the values that feed it (through elementwise ops, broadcast,
expand_dims as a slice, loop-carried values), then every other value takes its layout forward from its
operands (a reduction's result is the slice of its input's layout). Used by `coalesce`.
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt, ttng
from ..ir.ops.ttg import (
    BlockedEncoding,
    ConvertLayoutOp,
    DotOperandEncoding,
    MmaEncoding,
    SliceEncoding,
    blocked_for,
    layout_chooser,
    one_thread_blocked,
)
from ..ir.types import TensorType
from ..ir.values import BlockArgument, OpResult, Value
from .mma import operand_encoding

# Ops whose result may take any layout its users want, passing the want on to its operands. A TMA
# load reads its tile from shared memory into any layout (an mma operand's by ldmatrix).
_LEAVES = (tt.MakeRangeOp, tt.SplatOp, arith.ConstantOp, ttng.TMALoadOp)


def is_tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def encoding_of(v: Value):
    return v.type.encoding if is_tensor(v) else None


def set_encoding(v: Value, enc) -> None:
    v.type = TensorType(v.type.shape, v.type.element, enc)


def set_operand(op, index: int, new: Value) -> None:
    """Point operand `index` of `op` (numbered as `op.operands`) at `new`. Other uses of the same value
    keep it: `tt.dot %a, %a` needs %a converted to operand A's layout in one place and B's in the other
    (`Op.replace_operand` would move both)."""
    position = 0
    for name, kind in op._field_kinds():
        if kind == "operand" and getattr(op, name) is not None:
            if position == index:
                return setattr(op, name, new)
            position += 1
        elif kind == "operands":
            values = getattr(op, name)
            if index < position + len(values):
                values[index - position] = new
                return None
            position += len(values)
    raise IndexError(f"{op.name} has no operand {index}")


def _narrows_to_bytes(op, enc) -> bool:
    """Whether `op` casts floats to an 8-bit float for a tensor-core dot operand (`enc`, whose A
    operand fp8 attention's p is): the want stops there, so the dot operand's conversion moves
    the bytes (four to a shuffle, lowering/exchange.py) instead of the 32-bit values before the
    cast (through shared memory), and the math before it keeps the accumulator's layout."""
    return (
        isinstance(op, arith.TruncFOp)
        and isinstance(enc, DotOperandEncoding)
        and isinstance(enc.parent, MmaEncoding)
        and op.result.type.element.bitwidth == 8
    )


def dot_result_encoding(
    shape: tuple[int, ...], num_warps: int, one_thread: bool = False
) -> BlockedEncoding:
    """A blocked layout for an FMA dot result: a small square of outputs per thread for reuse (all of
    them, for a one-thread kernel)."""
    if one_thread:
        return one_thread_blocked(shape)
    rank = len(shape)
    enc = blocked_for(shape, num_warps, vec=min(4, shape[-1]))
    per_thread = shape[-2] * shape[-1] // (32 * num_warps)
    if per_thread >= 16 and shape[-2] >= 4:
        spt = list(enc.size_per_thread)
        spt[rank - 2] = min(4, per_thread // spt[rank - 1])
        base = blocked_for(tuple(s // p for s, p in zip(shape, spt)), num_warps)
        enc = BlockedEncoding(tuple(spt), base.threads_per_warp, base.warps_per_cta, base.order)
    return enc


class LayoutAssigner:
    def __init__(self, func: tt.FuncOp, num_warps: int, one_thread: bool = False):
        self.func = func
        self.num_warps = num_warps
        self.one_thread = one_thread  # the cpu target's: one thread holds every element
        self.blocked = layout_chooser(one_thread)
        self.converts: dict[tuple[int, object], Value] = {}
        self.users: dict[int, list] = {}
        for op in func.walk():
            for v in op.operands:
                self.users.setdefault(id(v), []).append(op)

    def default(self, v: Value):
        return self.blocked(v.type.shape, self.num_warps)

    # -- backward: wants flow from users to definitions ----------------------------------------------
    def want(self, v: Value, enc) -> None:
        if not is_tensor(v) or encoding_of(v) is not None or enc is None:
            return
        if isinstance(v, BlockArgument):
            op = v.block.parent_op
            if isinstance(op, scf.ForOp) and v.index > 0:
                return self._want_carried(op, v.index - 1, enc)
            if isinstance(op, scf.WhileOp):
                return self._want_carried(op, v.index, enc)
            return
        op = v.op
        if isinstance(op, (scf.ForOp, scf.WhileOp)):
            return self._want_carried(op, v.index, enc)
        if isinstance(op, scf.IfOp):
            set_encoding(v, enc)
            for region in op.regions:
                if region.blocks and region.block.ops:
                    self.want(region.block.ops[-1].operands[v.index], enc)
            return
        if isinstance(op, _LEAVES):
            return set_encoding(v, enc)
        if _narrows_to_bytes(op, enc):
            return  # converted after the cast: see _narrows_to_bytes
        if isinstance(op, tt.ExpandDimsOp):
            set_encoding(v, enc)
            return self.want(op.src, SliceEncoding(op.axis, enc))
        if isinstance(op, tt.BroadcastOp) or (
            op.elementwise and not op.regions and not isinstance(op, (tt.LoadOp, tt.AtomicRMWOp))
        ):
            set_encoding(v, enc)
            for operand in op.operands:
                self.want(operand, enc)

    def _carried(self, op, i: int) -> tuple[list[Value], list[Value]]:
        """(the values that are loop-carried value i, the values flowing into it)."""
        if isinstance(op, scf.ForOp):
            body = op.body.block
            return [body.args[i + 1], op.results[i]], [op.init_args[i], body.ops[-1].operands[i]]
        before, after = op.before.block, op.after.block
        return (
            [before.args[i], after.args[i], op.results[i]],
            [op.init_args[i], after.ops[-1].operands[i], before.ops[-1].args[i]],
        )

    def _want_carried(self, op, i: int, enc) -> None:
        carried, sources = self._carried(op, i)
        fresh = [v for v in carried if encoding_of(v) is None]
        for v in fresh:
            set_encoding(v, enc)
        for v in sources:
            self.want(v, enc)
        for v in fresh:
            self.push(v, enc)

    # -- forward from anchors: users of an anchored value take its layout ---------------------------
    def push(self, v: Value, enc) -> None:
        for user in self.users.get(id(v), []):
            if isinstance(user, (scf.YieldOp, scf.ConditionOp)):
                parent = user.parent.parent_op
                index = user.operands.index(v) - (1 if isinstance(user, scf.ConditionOp) else 0)
                if isinstance(parent, (scf.ForOp, scf.WhileOp)) and index >= 0:
                    self._want_carried(parent, index, enc)
                elif isinstance(parent, scf.IfOp) and encoding_of(parent.results[index]) is None:
                    self.want(parent.results[index], enc)
                    self.push(parent.results[index], enc)
                continue
            if (
                not user.results
                or not is_tensor(user.results[0])
                or encoding_of(user.results[0]) is not None
            ):
                continue
            res = user.results[0]
            if isinstance(user, tt.BroadcastOp) or (
                user.elementwise
                and not user.regions
                and not isinstance(user, (tt.LoadOp, tt.AtomicRMWOp))
            ):
                set_encoding(res, enc)
                for operand in user.operands:
                    self.want(operand, enc)
                self.push(res, enc)

    # -- forward: everything not yet placed follows its operands -------------------------------------
    def forward(self, block) -> None:
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                for arg, init, res in zip(op.body.block.args[1:], op.init_args, op.results):
                    for v in (arg, res):
                        if is_tensor(v) and encoding_of(v) is None:
                            set_encoding(v, encoding_of(init) or self.default(v))
            elif isinstance(op, scf.WhileOp):
                for args in (op.before.block.args, op.after.block.args, op.results):
                    for v, init in zip(args, op.init_args):
                        if is_tensor(v) and encoding_of(v) is None:
                            set_encoding(v, encoding_of(init) or self.default(v))
            for region in op.regions:
                if region.blocks:
                    self.forward(region.block)
            for res in op.results:
                if is_tensor(res) and encoding_of(res) is None:
                    enc = self._forward_encoding(op, res)
                    set_encoding(res, self._whole_in_one_thread(enc, res))

    def _whole_in_one_thread(self, enc, res: Value):
        """On a one-thread target (the cpu), a layout carried over from a smaller operand (a 1xN
        broadcast to MxN) must still give that thread every element, not one row per thread."""
        if (
            self.one_thread
            and isinstance(enc, BlockedEncoding)
            and tuple(enc.size_per_thread) != tuple(res.type.shape)
        ):
            return one_thread_blocked(res.type.shape, enc.order)
        return enc

    def _forward_encoding(self, op, res: Value):
        srcs = [encoding_of(v) for v in op.operands if is_tensor(v)]
        if isinstance(op, tt.ReduceOp):
            return SliceEncoding(op.axis, srcs[0])
        if (
            isinstance(op, tt.ExpandDimsOp)
            and isinstance(srcs[0], SliceEncoding)
            and srcs[0].dim == op.axis
        ):
            return srcs[0].parent
        if isinstance(op, scf.IfOp):
            yielded = op.then_region.block.ops[-1].operands[res.index]
            return encoding_of(yielded) or self.default(res)
        if isinstance(op, (tt.BroadcastOp, tt.ScanOp)) and srcs:
            return srcs[0]
        if isinstance(op, tt.GatherOp):
            return encoding_of(op.indices)  # one result element per index, where the index is
        if op.elementwise and srcs and not isinstance(op, (tt.LoadOp, tt.AtomicRMWOp)):
            return srcs[0]
        if isinstance(op, tt.TransOp) and isinstance(srcs[0], BlockedEncoding):
            return _transposed(srcs[0], op.order)  # each thread keeps its elements: no data moves
        if isinstance(op, ttng.TMALoadOp):  # 16-byte reads of the shared tile's rows
            return self.blocked(res.type.shape, self.num_warps, 128 // res.type.element.bitwidth)
        return self.default(res)

    # -- conversions --------------------------------------------------------------------------------
    def required(self, op) -> list[tuple[int, object]]:
        """(operand index, required encoding) for every operand whose layout the op dictates."""
        ops = op.operands
        if isinstance(op, scf.YieldOp):
            parent = op.parent.parent_op
            if isinstance(parent, scf.ForOp):
                targets = parent.body.block.args[1:]
            elif isinstance(parent, scf.WhileOp):
                targets = parent.before.block.args
            else:
                targets = parent.results
            return [(i, encoding_of(t)) for i, t in enumerate(targets)]
        if isinstance(op, scf.ConditionOp):
            parent = op.parent.parent_op
            return [(i + 1, encoding_of(t)) for i, t in enumerate(parent.after.block.args)]
        if isinstance(op, (scf.ForOp, scf.WhileOp)):
            args = op.body.block.args[1:] if isinstance(op, scf.ForOp) else op.before.block.args
            first = 3 if isinstance(op, scf.ForOp) else 0
            return [(first + i, encoding_of(a)) for i, a in enumerate(args)]
        if isinstance(op, tt.ExpandDimsOp):
            return [(0, SliceEncoding(op.axis, encoding_of(op.result)))]
        if isinstance(op, tt.DotOp):
            enc = encoding_of(op.result)
            return [
                (0, operand_encoding(0, enc, op.a.type)),
                (1, operand_encoding(1, enc, op.b.type)),
                (2, enc),
            ]
        if isinstance(op, (tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.AtomicCASOp)):
            enc = encoding_of(op.ptr)
            return [(i, enc) for i in range(len(ops))]
        if isinstance(op, (tt.BroadcastOp, tt.ScanOp)):
            return [(i, encoding_of(op.results[0])) for i in range(len(ops))]
        if isinstance(op, tt.GatherOp):
            return [(1, encoding_of(op.result))]
        if isinstance(op, tt.ReduceOp):
            first = encoding_of(ops[0])
            return [(i, first) for i in range(1, len(ops))]
        if op.elementwise and op.results and is_tensor(op.results[0]):
            enc = encoding_of(op.results[0])
            return [(i, enc) for i in range(len(ops))]
        return []

    def insert_converts(self, block) -> None:
        for op in list(block.ops):
            for region in op.regions:
                if region.blocks:
                    self.insert_converts(region.block)
            for index, enc in self.required(op):
                value = op.operands[index]
                if enc is None or not is_tensor(value) or encoding_of(value) == enc:
                    continue
                set_operand(op, index, self.convert(value, enc, op))

    def convert(self, value: Value, enc, user) -> Value:
        key = (id(value), enc)
        if key in self.converts:
            return self.converts[key]
        if isinstance(value, OpResult):
            anchor, block = value.op, value.op.parent
            index = block.ops.index(anchor) + 1
        else:
            block, index = value.block, 0
        op = ConvertLayoutOp(src=value)
        new_type = TensorType(value.type.shape, value.type.element, enc)
        op.results = [OpResult(new_type, op, 0, value.name_hint)]
        op.loc = user.loc
        block.insert(index, op)
        self.converts[key] = op.result
        return op.result


def _transposed(enc: BlockedEncoding, order: tuple[int, ...]) -> BlockedEncoding:
    """`enc` with its dimensions permuted as `tt.trans {order}` permutes the tensor's (result dim i
    is source dim order[i]): the same elements in the same threads."""
    result_dim = {source: i for i, source in enumerate(order)}
    return BlockedEncoding(
        tuple(enc.size_per_thread[d] for d in order),
        tuple(enc.threads_per_warp[d] for d in order),
        tuple(enc.warps_per_cta[d] for d in order),
        tuple(result_dim[d] for d in enc.order),
    )


def assign_layouts(
    func: tt.FuncOp, num_warps: int, anchors: list[tuple[object, object]], one_thread: bool = False
) -> None:
    """Give every tensor an encoding: `anchors` are (op, encoding) pairs for memory ops and dots;
    `one_thread`: the target runs a program on one thread (the cpu's)."""
    assigner = LayoutAssigner(func, num_warps, one_thread)
    for op, enc in anchors:
        if isinstance(op, tt.DotOp):
            set_encoding(op.result, enc)
            assigner.want(op.c, enc)
            assigner.want(op.a, operand_encoding(0, enc, op.a.type))
            assigner.want(op.b, operand_encoding(1, enc, op.b.type))
            continue
        for res in op.results:
            set_encoding(res, enc)
        for operand in op.operands:
            assigner.want(operand, enc)
        for res in op.results:
            assigner.push(res, enc)
    assigner.forward(func.body.block)
    assigner.insert_converts(func.body.block)
