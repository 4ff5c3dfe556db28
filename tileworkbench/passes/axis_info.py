"""Axis info: per dimension, how long runs of +1 values are (contiguity), the largest power of two dividing
each run's first value (divisibility; in bytes for pointers) and how long runs of equal values are
(constancy). Seeded by the FuncOp's `arg_attrs` ({"tt.divisibility": 16}) and `tt.hint` ops; read by
`coalesce` and by the NVPTX lowering to choose vector widths of loads and stores. An analysis: it changes
no IR and needs nothing run before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..ir.ops import arith, scf, tt, ttg
from ..ir.types import PointerType, TensorType, element_type, shape_of
from ..ir.values import Value

MAX_DIV = 1 << 30


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    value: int | None = None  # the integer every element equals, where known

    def elem_div(self, d: int) -> int:
        """Divisibility of every element (not only of each run's first) along `d`."""
        return self.divisibility[d] if self.contiguity[d] == 1 else 1


def _pow2_div(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 1
    if value == 0:
        return MAX_DIV
    return min(MAX_DIV, value & -value)


def _dims(v: Value) -> int:
    return max(1, len(shape_of(v.type)))


def _shape(v: Value) -> tuple[int, ...]:
    return shape_of(v.type) or (1,)


def unknown(v: Value) -> AxisInfo:
    n = _dims(v)
    return AxisInfo((1,) * n, (1,) * n, (1,) * n)


def constant_info(v: Value, value) -> AxisInfo:
    n = _dims(v)
    ival = value if isinstance(value, int) and not isinstance(value, bool) else None
    return AxisInfo((1,) * n, (_pow2_div(value),) * n, _shape(v), ival)


def meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """The facts true of both (loop-carried values, if/else results)."""
    zip3 = [
        tuple(gcd(x, y) for x, y in zip(p, q))
        for p, q in (
            (a.contiguity, b.contiguity),
            (a.divisibility, b.divisibility),
            (a.constancy, b.constancy),
        )
    ]
    return AxisInfo(*zip3, a.value if a.value == b.value else None)


def _elem_bytes(v: Value) -> int:
    el = element_type(v.type)
    if isinstance(el, PointerType):
        return max(1, el.pointee.bitwidth // 8)
    return 1


# -- transfer functions ----------------------------------------------------------------------------
def _add(a: AxisInfo, b: AxisInfo, b_scale: int = 1, sub: bool = False) -> AxisInfo:
    n = len(a.contiguity)
    contig = tuple(
        max(
            gcd(a.contiguity[d], b.constancy[d]), 1 if sub else gcd(a.constancy[d], b.contiguity[d])
        )
        for d in range(n)
    )
    div = tuple(gcd(a.divisibility[d], min(MAX_DIV, b.divisibility[d] * b_scale)) for d in range(n))
    const = tuple(gcd(a.constancy[d], b.constancy[d]) for d in range(n))
    value = None
    if a.value is not None and b.value is not None:
        value = a.value - b.value if sub else a.value + b.value * b_scale
    return AxisInfo(contig, div, const, value)


def _mul(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    n = len(a.contiguity)
    if b.value == 1:
        return a
    if a.value == 1:
        return b
    div = tuple(min(MAX_DIV, a.elem_div(d) * b.elem_div(d)) for d in range(n))
    const = tuple(gcd(a.constancy[d], b.constancy[d]) for d in range(n))
    value = a.value * b.value if a.value is not None and b.value is not None else None
    return AxisInfo((1,) * n, div, const, value)


def _div_like(a: AxisInfo, b: AxisInfo, rem: bool) -> AxisInfo:
    n = len(a.contiguity)
    const = [gcd(a.constancy[d], b.constancy[d]) for d in range(n)]
    contig, div = [1] * n, [1] * n
    c = b.value
    if c is not None and c > 0 and c & (c - 1) == 0:
        for d in range(n):
            aligned = a.divisibility[d] % c == 0
            if rem:
                contig[d] = gcd(a.contiguity[d], c) if aligned else 1
                div[d] = gcd(a.divisibility[d], c)
            else:
                if aligned:
                    const[d] = max(const[d], gcd(a.contiguity[d], c))
                div[d] = max(1, a.elem_div(d) // c)
    elif rem:
        # x % n for a runtime n divisible by g: a run of x of g values starting at a multiple of g
        # crosses no multiple of n, so it stays contiguous (tutorial 03's `offs % M`)
        for d in range(n):
            g = gcd(a.contiguity[d], b.divisibility[d])
            contig[d] = g if a.divisibility[d] % g == 0 else 1
            div[d] = gcd(a.divisibility[d], b.divisibility[d])
    return AxisInfo(tuple(contig), tuple(div), tuple(const))


def _cmp(op, a: AxisInfo, b: AxisInfo) -> AxisInfo:
    n = len(a.contiguity)
    const = [gcd(a.constancy[d], b.constancy[d]) for d in range(n)]
    if op.predicate not in ("eq", "ne"):
        for d in range(n):
            # a contiguous run starting at a multiple of k, compared with a constant multiple of k,
            # gives runs of k equal results.
            if b.constancy[d] > 1:
                const[d] = max(
                    const[d], gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d]))
                )
            if a.constancy[d] > 1:
                const[d] = max(
                    const[d], gcd(b.contiguity[d], gcd(b.divisibility[d], a.divisibility[d]))
                )
    return AxisInfo((1,) * n, (1,) * n, tuple(const))


def _broadcast(src: AxisInfo, src_shape, shape) -> AxisInfo:
    contig, div, const = [], [], []
    for d, (s, t) in enumerate(zip(src_shape, shape)):
        if s == 1 and t != 1:
            contig.append(1)
            div.append(src.divisibility[d])
            const.append(t)
        else:
            contig.append(src.contiguity[d])
            div.append(src.divisibility[d])
            const.append(src.constancy[d])
    return AxisInfo(tuple(contig), tuple(div), tuple(const), src.value)


def _expand(src: AxisInfo, axis: int, src_rank: int) -> AxisInfo:
    if src_rank == 0:
        return AxisInfo((1,), src.divisibility[:1], (1,), src.value)
    div = src.divisibility[0] if src.contiguity[0] == 1 else 1
    return AxisInfo(
        src.contiguity[:axis] + (1,) + src.contiguity[axis:],
        src.divisibility[:axis] + (div,) + src.divisibility[axis:],
        src.constancy[:axis] + (1,) + src.constancy[axis:],
        src.value,
    )


def _hint(op, src: AxisInfo) -> AxisInfo:
    def pick(given, old):
        return tuple(max(g, o) for g, o in zip(given, old)) if given else old

    return AxisInfo(
        pick(op.contiguity, src.contiguity),
        pick(op.divisibility, src.divisibility),
        pick(op.constancy, src.constancy),
        src.value,
    )


class AxisInfoAnalysis:
    """Runs the transfer functions over a function; `info(value)` gives the result."""

    def __init__(self, func: tt.FuncOp):
        self.facts: dict[int, AxisInfo] = {}
        for arg, attrs in zip(func.args, func.arg_attrs or [{}] * len(func.args)):
            div = attrs.get("tt.divisibility", 1) if attrs else 1
            n = _dims(arg)
            value = 1 if attrs and attrs.get("tt.equal_to_1") else None
            info = AxisInfo((1,) * n, (div,) * n, _shape(arg), value)
            self.facts[id(arg)] = info if value is None else constant_info(arg, 1)
        self._block(func.body.block)

    def info(self, v: Value) -> AxisInfo:
        return self.facts.get(id(v)) or unknown(v)

    def _block(self, block) -> None:
        for op in block.ops:
            self._op(op)

    def _set(self, v: Value, info: AxisInfo) -> None:
        n = _dims(v)
        if len(info.contiguity) != n:
            info = unknown(v)
        self.facts[id(v)] = info

    def _op(self, op) -> None:
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, scf.IfOp):
            return self._if(op)
        if isinstance(op, scf.WhileOp):
            for arg in op.before.block.args + op.after.block.args:
                self._set(arg, unknown(arg))
            self._block(op.before.block)
            self._block(op.after.block)
        elif op.regions:
            for r in op.regions:
                self._block(r.block)
        # Always (re)computed: a loop body is analyzed again with weaker facts for its carried
        # values, and a result kept from an earlier pass would claim what only held for the init.
        for i, res in enumerate(op.results):
            self._set(res, self._transfer(op) if i == 0 else unknown(res))

    def _for(self, op: scf.ForOp) -> None:
        body = op.body.block
        # the induction variable lower + k * step: a multiple of what divides both (Triton's rule),
        # so `off + tl.arange(0, BLOCK)` in `for off in range(0, N, BLOCK)` loads whole vectors
        div = min(self.info(op.lower).divisibility[0], self.info(op.step).divisibility[0])
        self._set(body.args[0], AxisInfo((1,), (div,), (1,)))
        infos = [self.info(v) for v in op.init_args]
        for _ in range(3):
            for arg, info in zip(body.args[1:], infos):
                self._set(arg, info)
            self._block(body)
            yielded = [self.info(v) for v in body.ops[-1].operands]
            new = [meet(a, b) for a, b in zip(infos, yielded)]
            if new == infos:
                break
            infos = new
        else:
            infos = [unknown(a) for a in body.args[1:]]
            for arg, info in zip(body.args[1:], infos):
                self._set(arg, info)
            self._block(body)
        for res, info in zip(op.results, infos):
            self._set(res, info)

    def _if(self, op: scf.IfOp) -> None:
        self._block(op.then_region.block)
        has_else = op.else_region.blocks and op.else_region.block.ops
        if has_else:
            self._block(op.else_region.block)
        for i, res in enumerate(op.results):
            a = self.info(op.then_region.block.ops[-1].operands[i])
            b = self.info(op.else_region.block.ops[-1].operands[i]) if has_else else a
            self._set(res, meet(a, b))

    def _transfer(self, op) -> AxisInfo:
        res = op.results[0]
        ops = [self.info(v) for v in op.operands]
        if isinstance(op, arith.ConstantOp):
            return constant_info(res, op.value)
        if isinstance(op, tt.MakeRangeOp):
            return AxisInfo((op.end - op.start,), (_pow2_div(op.start),), (1,))
        if isinstance(op, tt.SplatOp):
            n = _dims(res)
            return AxisInfo((1,) * n, (ops[0].divisibility[0],) * n, _shape(res), ops[0].value)
        if isinstance(op, (arith.AddIOp, tt.AddPtrOp)):
            scale = _elem_bytes(res) if isinstance(op, tt.AddPtrOp) else 1
            return _add(ops[0], ops[1], scale)
        if isinstance(op, arith.SubIOp):
            return _add(ops[0], ops[1], sub=True)
        if isinstance(op, arith.MulIOp):
            return _mul(ops[0], ops[1])
        if isinstance(op, (arith.DivSIOp, arith.DivUIOp)):
            return _div_like(ops[0], ops[1], rem=False)
        if isinstance(op, (arith.RemSIOp, arith.RemUIOp)):
            return _div_like(ops[0], ops[1], rem=True)
        if isinstance(op, (arith.CmpIOp, arith.CmpFOp)):
            return _cmp(op, ops[0], ops[1])
        if isinstance(
            op,
            (
                arith.ExtSIOp,
                arith.ExtUIOp,
                arith.TruncIOp,
                ttg.ConvertLayoutOp,
                tt.IntToPtrOp,
                tt.PtrToIntOp,
            ),
        ):
            return ops[0]
        if isinstance(op, tt.BroadcastOp):
            return _broadcast(ops[0], _shape(op.operand), _shape(res))
        if isinstance(op, tt.ExpandDimsOp):
            return _expand(ops[0], op.axis, len(shape_of(op.src.type)))
        if isinstance(op, tt.HintOp):
            return _hint(op, ops[0])
        if isinstance(op, tt.TransOp):
            return AxisInfo(
                *(
                    tuple(t[i] for i in op.order)
                    for t in (ops[0].contiguity, ops[0].divisibility, ops[0].constancy)
                )
            )
        if isinstance(op, arith.ShLIOp) and ops[1].value is not None and 0 <= ops[1].value < 30:
            return _mul(ops[0], constant_info(res, 1 << ops[1].value))
        if isinstance(op, (arith.AndIOp, arith.OrIOp, arith.SelectOp, arith.XOrIOp)) and ops:
            n = _dims(res)
            const = tuple(
                min(gcd(*(o.constancy[d] for o in ops)), _shape(res)[d]) for d in range(n)
            )
            return AxisInfo((1,) * n, (1,) * n, const)
        if op.elementwise and ops and isinstance(res.type, TensorType):
            n = _dims(res)
            const = tuple(gcd(*(o.constancy[d] for o in ops)) for d in range(n))
            return AxisInfo((1,) * n, (1,) * n, const)
        return unknown(res)


def axis_info(func: tt.FuncOp) -> AxisInfoAnalysis:
    """Analyze `func` and return the facts for every value."""
    return AxisInfoAnalysis(func)
