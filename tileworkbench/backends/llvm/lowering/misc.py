"""Program ids, hints and assumptions, barriers, external (libdevice) calls, inline PTX, and debugging:
`tt.print` (vprintf) and `tt.assert` (__assertfail)."""

from __future__ import annotations

from llvmlite import ir

from ....dtypes import LLVM_FLOAT_BITS
from ....ir.ops import tt
from ....ir.types import TensorType, element_type
from ..llvm_types import F64, GENERIC_PTR, I8, I32, I64, llvm_type
from ..values import TVal
from . import elementwise, lowers

_AXES = "xyz"


@lowers(tt.GetProgramIdOp)
def lower_program_id(lw, op) -> None:
    lw.set(op.result, lw.sreg(f"ctaid.{_AXES[op.axis]}"))


@lowers(tt.GetNumProgramsOp)
def lower_num_programs(lw, op) -> None:
    lw.set(op.result, lw.sreg(f"nctaid.{_AXES[op.axis]}"))


@lowers(tt.HintOp)
def lower_hint(lw, op) -> None:
    lw.set(op.result, lw.get(op.src))


@lowers(tt.AssumeOp)
def lower_assume(lw, op) -> None:
    cond = lw.get(op.condition)
    for c in cond.vals if isinstance(cond, TVal) else [cond]:
        lw.call_intrinsic("llvm.assume", ir.VoidType(), [c])


@lowers(tt.BarrierOp)
def lower_barrier(lw, op) -> None:
    lw.barrier()


@lowers(tt.ReturnOp)
def lower_return(lw, op) -> None:
    lw.builder.ret_void()


@elementwise(tt.ExternElementwiseOp)
def lower_extern(lw, op, *args) -> ir.Value:
    """A call of `op.symbol` (libdevice's `__nv_*` are linked in when used)."""
    ret = llvm_type(op.result.type)
    if op.symbol.startswith("__nv_"):
        return lw.libdevice(op.symbol, ret, list(args))
    return lw.call_intrinsic(op.symbol, ret, list(args))


@lowers(tt.ElementwiseInlineAsmOp)
def lower_inline_asm(lw, op) -> None:
    """`asm_string` once per `pack` elements of each thread (Triton's rule for the operands): an
    operand or result narrower than 32 bits travels packed, 32 // bits elements to a register (an
    integer of their bits), a wider one as `pack` registers; `pack` 1 is one element per call."""
    pack = op.packed_element
    args = [lw.get(v) for v in op.args]
    elems = [llvm_type(element_type(r.type)) for r in op.results]
    tensor = next((a for a in args if isinstance(a, TVal)), None)
    n = tensor.layout.num_regs if tensor is not None else 1
    if n % pack:
        raise lw.error(
            op,
            f"inline_asm_elementwise: pack={pack} does not divide the {n} elements each "
            "thread holds; use a smaller pack or a larger block",
        )
    registers = [_registers(t, pack) for t in elems]
    flat = [t for regs in registers for t in regs]
    ret = flat[0] if len(flat) == 1 else ir.LiteralStructType(flat)
    outs = [[] for _ in op.results]
    for start in range(0, n, pack):
        operands = []
        for a in args:
            values = a.vals[start : start + pack] if isinstance(a, TVal) else [a] * pack
            operands += _pack(lw, values, pack)
        value = lw.asm(op.asm_string, op.constraints, ret, operands, side_effect=not op.pure)
        parts = (
            [value]
            if len(flat) == 1
            else [lw.builder.extract_value(value, i) for i in range(len(flat))]
        )
        for i, (t, regs) in enumerate(zip(elems, registers)):
            outs[i] += _unpack(lw, parts[: len(regs)], t, pack)
            parts = parts[len(regs) :]
    for res, vals in zip(op.results, outs):
        lw.set(res, TVal(vals, lw.layout(res)) if isinstance(res.type, TensorType) else vals[0])


def _bits(t: ir.Type) -> int:
    return t.width if isinstance(t, ir.IntType) else LLVM_FLOAT_BITS.get(str(t), 32)


def _registers(t: ir.Type, pack: int) -> list[ir.Type]:
    """The asm's registers for `pack` elements of type `t`."""
    bits = _bits(t)
    if pack == 1 or bits >= 32:
        return [t] * pack
    per = min(pack, 32 // bits)
    return [ir.IntType(per * bits)] * (pack // per)


def _pack(lw, values: list, pack: int) -> list:
    t = values[0].type
    bits = _bits(t)
    if pack == 1 or bits >= 32:
        return list(values)
    per = min(pack, 32 // bits)
    b, packed = lw.builder, []
    for i in range(0, pack, per):
        vector = ir.Constant(ir.VectorType(t, per), ir.Undefined)
        for j, v in enumerate(values[i : i + per]):
            vector = b.insert_element(vector, v, ir.Constant(ir.IntType(32), j))
        packed.append(b.bitcast(vector, ir.IntType(per * bits)))
    return packed


def _unpack(lw, registers: list, t: ir.Type, pack: int) -> list:
    bits = _bits(t)
    if pack == 1 or bits >= 32:
        return list(registers)
    per = min(pack, 32 // bits)
    b, values = lw.builder, []
    for register in registers:
        vector = b.bitcast(register, ir.VectorType(t, per))
        values += [b.extract_element(vector, ir.Constant(ir.IntType(32), j)) for j in range(per)]
    return values


# -- debugging ----------------------------------------------------------------------------------
def _cstring(lw, text: str) -> ir.Value:
    data = bytearray(text.encode() + b"\0")
    key = ("cstr", bytes(data))
    cache = lw._cache
    if key not in cache:
        ty = ir.ArrayType(I8, len(data))
        var = ir.GlobalVariable(
            lw.module, ty, f"str_{len([k for k in cache if k[0] == 'cstr'])}", addrspace=4
        )
        var.global_constant = True
        var.linkage = "internal"
        var.initializer = ir.Constant(ty, data)
        cache[key] = lw.entry_builder.addrspacecast(var, GENERIC_PTR)
    return cache[key]


def _printf_arg(lw, v, t, hex_: bool):
    b = lw.builder
    if t.is_float:
        x = (
            v
            if isinstance(v.type, ir.DoubleType)
            else b.fpext(v, F64)
            if not isinstance(v.type, ir.IntType)
            else v
        )
        return x, "%f" if not hex_ else "%a"
    if getattr(t, "pointee", None) is not None:
        return b.ptrtoint(v, I64), "%p"
    width = v.type.width
    if width < 32:
        v = b.sext(v, I32) if t.is_signed else b.zext(v, I32)
    spec = (
        ("%llx" if hex_ else ("%lld" if t.is_signed else "%llu"))
        if v.type.width == 64
        else ("%x" if hex_ else ("%d" if t.is_signed else "%u"))
    )
    return v, spec


def _vprintf(lw, fmt: str, args: list) -> None:
    b = lw.builder
    vprintf = lw.intrinsic("vprintf", I32, [GENERIC_PTR, GENERIC_PTR])
    if args:
        struct = ir.LiteralStructType([a.type for a in args])
        buf = lw.entry_builder.alloca(struct)
        for i, a in enumerate(args):
            b.store(a, b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, i)]))
        buf = b.bitcast(buf, GENERIC_PTR)
    else:
        buf = ir.Constant(GENERIC_PTR, None)
    b.call(vprintf, [_cstring(lw, fmt), buf])


@lowers(tt.PrintOp)
def lower_print(lw, op) -> None:
    """One line per element, as Triton: `pid (x, y, z) idx (i, j) prefix value`."""
    pids = [lw.sreg(f"ctaid.{a}") for a in _AXES]
    b = lw.builder
    if not op.args:
        _vprintf(lw, f"pid (%d, %d, %d) {op.prefix}\n", pids)
        return
    for value in op.args:
        x = lw.get(value)
        t = element_type(value.type)
        if not isinstance(x, TVal):
            arg, spec = _printf_arg(lw, x, t, op.hex)
            _vprintf(lw, f"pid (%d, %d, %d) idx () {op.prefix}{spec}\n", pids + [arg])
            continue
        layout = x.layout
        shape = value.type.shape
        coord_vals = [lw.thread_offset(layout, lambda v, d=d: v[d]) for d in range(len(shape))]
        owner = lw.owner_predicate(layout)
        for r, coords in enumerate(layout.all_reg_coords()):
            with b.if_then(owner):
                idx = [b.add(cv, ir.Constant(I32, c)) for cv, c in zip(coord_vals, coords)]
                arg, spec = _printf_arg(lw, x.vals[r], t, op.hex)
                dims = ", ".join(["%d"] * len(shape))
                _vprintf(
                    lw, f"pid (%d, %d, %d) idx ({dims}) {op.prefix}{spec}\n", pids + idx + [arg]
                )


@lowers(tt.AssertOp)
def lower_assert(lw, op) -> None:
    """`__assertfail(message, file, line, function, 1)` where any element is false; in debug mode a
    record in the error buffer instead (lowering/bounds.py), which the launch turns into an error."""
    if lw.bounds is not None:
        lw.bounds.lower_assert(lw, op)
        return
    cond = lw.get(op.condition)
    b = lw.builder
    fail = lw.intrinsic(
        "__assertfail", ir.VoidType(), [GENERIC_PTR, GENERIC_PTR, I32, GENERIC_PTR, I64]
    )
    loc = op.loc
    for c in cond.vals if isinstance(cond, TVal) else [cond]:
        if isinstance(c.type, ir.IntType) and c.type.width != 1:
            c = b.icmp_unsigned("!=", c, ir.Constant(c.type, 0))
        with b.if_then(b.not_(c), likely=False):
            b.call(
                fail,
                [
                    _cstring(lw, op.message),
                    _cstring(lw, loc.file),
                    ir.Constant(I32, max(loc.line, 0)),
                    _cstring(lw, lw.func.sym_name),
                    ir.Constant(I64, 1),
                ],
            )
