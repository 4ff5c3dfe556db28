"""Tensors as LLVM vectors on the cpu target: the one thread's registers of a tensor are one
`<N x T>` value (lane r = register r of the layout), so an elementwise op is one vector instruction,
not N.

`VTVal` is a `TVal` whose `vals` (the per-register scalars the shared rules read) are extracted on
demand; `packed` turns any `TVal` into its vector. `widen` runs a shared per-element rule once on
scalars in a scratch block and replays what it built with every type widened to `<N x T>`, so the
lowering keeps one copy of each rule; rules that branch or call non-intrinsic functions run per
lane.
"""

from __future__ import annotations

import copy

from llvmlite import ir

from ...dtypes import TABLE
from ..llvm.llvm_types import I32
from ..llvm.values import TVal


class VTVal(TVal):
    """A tensor held as one LLVM vector `vec` in the layout's register order."""

    __slots__ = ("vec", "_lw", "_scalars")

    def __init__(self, vec: ir.Value, layout, lw):
        self.vec = vec
        self.layout = layout
        self._lw = lw
        self._scalars = None  # (block, extracted lanes): reused within the block that made them

    @property
    def vals(self) -> list:
        block = self._lw.builder.block
        if self._scalars is None or self._scalars[0] is not block:
            b = self._lw.builder
            count = self.vec.type.count
            lanes = [b.extract_element(self.vec, ir.Constant(I32, r)) for r in range(count)]
            self._scalars = (block, lanes)
        return self._scalars[1]


class _SplatConstant(ir.Constant):
    """LLVM's `splat (T c)` vector constant (llvmlite would spell out every lane)."""

    def __init__(self, vtype: ir.VectorType, scalar: ir.Constant):
        self.type = vtype
        self.constant = f"splat ({scalar.type} {scalar.get_reference()})"

    def _get_reference(self) -> str:
        return self.constant

    _to_string = _get_reference


def splat(lw, value: ir.Value, count: int) -> ir.Value:
    """`value` in every lane of a `<count x T>` vector."""
    vtype = ir.VectorType(value.type, count)
    if isinstance(value, ir.Constant) and not isinstance(value, ir.GlobalValue):
        return _SplatConstant(vtype, value)
    b = lw.builder
    one = b.insert_element(ir.Constant(vtype, ir.Undefined), value, ir.Constant(I32, 0))
    return b.shuffle_vector(
        one, ir.Constant(vtype, ir.Undefined), ir.Constant(ir.VectorType(I32, count), None)
    )


def packed(lw, value) -> ir.Value:
    """The vector of a tensor value (a VTVal's own; a list of registers packed)."""
    if isinstance(value, VTVal):
        return value.vec
    vals = value.vals
    first = vals[0]
    if all(v is first for v in vals):
        return splat(lw, first, len(vals))
    vtype = ir.VectorType(first.type, len(vals))
    if all(isinstance(v, ir.Constant) and not isinstance(v, ir.GlobalValue) for v in vals):
        return ir.Constant(vtype, list(vals))
    vec = ir.Constant(vtype, ir.Undefined)
    for r, v in enumerate(vals):
        vec = lw.builder.insert_element(vec, v, ir.Constant(I32, r))
    return vec


def shuffle(lw, vec: ir.Value, lanes: list[int], other: ir.Value | None = None) -> ir.Value:
    """The lanes `lanes` of `vec` (indices past its count pick from `other`); identity: `vec`."""
    count = vec.type.count
    if other is None and lanes == list(range(count)):
        return vec
    second = other if other is not None else ir.Constant(vec.type, ir.Undefined)
    mask = ir.Constant(ir.VectorType(I32, len(lanes)), [ir.Constant(I32, i) for i in lanes])
    return lw.builder.shuffle_vector(vec, second, mask)


def concat(lw, parts: list[ir.Value]) -> ir.Value:
    """Equal-sized vectors joined end to end (a tree of shuffles)."""
    while len(parts) > 1:
        joined = []
        for i in range(0, len(parts) - 1, 2):
            first, second = parts[i], parts[i + 1]
            n, m = first.type.count, second.type.count
            if m < n:  # pad to the first's length: shufflevector takes two of one type
                second = shuffle(lw, second, list(range(m)) + [0] * (n - m))
            elif n < m:
                first = shuffle(lw, first, list(range(n)) + [0] * (m - n))
            width = max(n, m)
            lanes = list(range(n)) + list(range(width, width + m))
            joined.append(shuffle(lw, first, lanes, second))
        if len(parts) % 2:
            joined.append(parts[-1])
        parts = joined
    return parts[0]


# -- widening a per-element rule ------------------------------------------------------------
_PLAIN = (ir.CastInstr, ir.ICMPInstr, ir.FCMPInstr, ir.SelectInstr, ir.GEPInstr)
# intrinsics whose last argument is an immediate that stays scalar
_IMMEDIATE_LAST = ("llvm.ctlz.", "llvm.cttz.", "llvm.abs.")


_NO_VECTOR_FORM = ("sdiv", "udiv", "srem", "urem")  # x86 divides integers one at a time


class _NotWidenable(Exception):
    pass


def widen(lw, rule, args: list, count: int) -> ir.Value:
    """`rule(*scalars)` applied to every lane of the `<count x T>` vectors in `args` (other args are
    scalars the same in every lane): built once on scalars, replayed on vectors."""
    module = ir.Module(name="widen")
    params = [a.type.element if _is_vector(a) else a.type for a in args]
    scratch = ir.Function(module, ir.FunctionType(ir.VoidType(), params), "scratch")
    block = scratch.append_basic_block("entry")
    scalars = [p if _is_vector(a) else a for p, a in zip(scratch.args, args)]
    saved = lw.builder
    lw.builder = ir.IRBuilder(block)
    try:
        result = rule(*scalars)
    finally:
        lw.builder = saved
    try:
        if len(scratch.basic_blocks) != 1:
            raise _NotWidenable
        return _replay(lw, block, dict(zip(scratch.args, [a for a in args])), result, count)
    except _NotWidenable:
        return per_lane(lw, rule, args, count)


def per_lane(lw, rule, args: list, count: int) -> ir.Value:
    """`rule` lane by lane, for what does not widen (branches, C-library calls, integer division,
    which x86 has no vector instruction for): a loop over the lanes through stack buffers, so the
    code stays one copy of the rule however wide the tensor (LLVM's scalarized form of a 256-lane
    i64 division took minutes to compile)."""
    b, entry = lw.builder, lw.entry_builder
    buffers = {}
    for k, a in enumerate(args):
        if _is_vector(a):
            buffers[k] = _buffer(entry, a.type.element, count)
            b.store(a, b.bitcast(buffers[k], a.type.as_pointer())).align = 64
    loop = lw.function.append_basic_block("lanes")
    done = lw.function.append_basic_block("lanes.done")
    before = b.block
    b.branch(loop)
    b.position_at_end(loop)
    lane = b.phi(I32)
    lane.add_incoming(ir.Constant(I32, 0), before)
    scalars = [
        _lane_of(b, buffers[k], a.type, lane) if k in buffers else a for k, a in enumerate(args)
    ]
    value = rule(*scalars)
    out = _buffer(entry, value.type, count)
    b.store(value, b.gep(out, [ir.Constant(I32, 0), lane]))
    following = b.add(lane, ir.Constant(I32, 1))
    lane.add_incoming(following, b.block)
    b.cbranch(b.icmp_unsigned("<", following, ir.Constant(I32, count)), loop, done)
    b.position_at_end(done)
    vtype = ir.VectorType(value.type, count)
    load = b.load(b.bitcast(out, vtype.as_pointer()), typ=vtype)
    load.align = 64  # (a vector's natural alignment is its whole size)
    return load


def _buffer(entry, element, count: int):
    buffer = entry.alloca(ir.ArrayType(element, count))
    buffer.align = 64
    return buffer


def _lane_of(b, buffer, vtype, lane) -> ir.Value:
    return b.load(b.gep(buffer, [ir.Constant(I32, 0), lane]), typ=vtype.element)


def _is_vector(value) -> bool:
    return isinstance(value.type, ir.VectorType)


def _replay(lw, block, mapping: dict, result, count: int) -> ir.Value:
    for instr in block.instructions:
        if isinstance(instr, ir.CallInstr):
            mapping[instr] = _replay_call(lw, instr, mapping, count)
            continue
        if not (type(instr) is ir.Instruction or isinstance(instr, _PLAIN)) or (
            instr.opname in _NO_VECTOR_FORM and count > 4
        ):
            raise _NotWidenable
        new = copy.copy(instr)
        new.parent = lw.builder.block
        new.operands = [_operand(lw, o, mapping, count) for o in instr.operands]
        if isinstance(instr, ir.GEPInstr):
            new.pointer, new.indices = new.operands[0], new.operands[1:]
        new.type = ir.VectorType(instr.type, count)
        new.metadata = {}
        new._name = None
        new.name = "v"
        new._clear_string_cache()
        lw.builder._insert(new)
        mapping[instr] = new
    return _operand(lw, result, mapping, count)


def _operand(lw, value, mapping: dict, count: int) -> ir.Value:
    if value in mapping:
        return mapping[value]
    if isinstance(value.type, ir.VectorType):
        raise _NotWidenable
    return splat(lw, value, count)


def _replay_call(lw, instr, mapping: dict, count: int) -> ir.Value:
    callee = instr.callee
    name = getattr(callee, "name", "")
    if not isinstance(callee, ir.Function) or not name.startswith("llvm."):
        raise _NotWidenable  # a C-library call: per lane
    args = list(instr.args)
    keep_last = name.startswith(_IMMEDIATE_LAST)
    new_args = [
        a if keep_last and i == len(args) - 1 else _operand(lw, a, mapping, count)
        for i, a in enumerate(args)
    ]
    ret = instr.type
    new_ret = ret if isinstance(ret, ir.VoidType) else ir.VectorType(ret, count)
    pieces = name.split(".")
    types = {_mangle(a.type) for a in args} | {_mangle(ret)}
    new_name = ".".join(f"v{count}{p}" if p in types and i > 1 else p for i, p in enumerate(pieces))
    fn = lw.intrinsic(new_name, new_ret, [a.type for a in new_args])
    call = lw.builder.call(fn, new_args, fastmath=instr.fastmath)
    return call


def _mangle(t) -> str:
    return type_suffix(t) if isinstance(t, ir.IntType) or str(t) in _FLOAT_ROWS else "?"


# LLVM float type name -> its row of the one dtype table (dtypes.py): intrinsic suffix and size
_FLOAT_ROWS = {row.llvm: row for row in TABLE if not row.llvm.startswith("i")}


def type_suffix(t) -> str:
    """The name LLVM's intrinsics use for scalar type `t`: i32, f32, bf16, p1 (a pointer)."""
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if isinstance(t, ir.PointerType):
        return f"p{t.addrspace}"
    return _FLOAT_ROWS[str(t)].ir


def type_bytes(t) -> int:
    """The size of scalar type `t` in memory (i1: a byte)."""
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.PointerType):
        return 8
    return _FLOAT_ROWS[str(t)].bits // 8
