"""The host's answers to the shared lowering's target hooks: one thread runs a whole program, so
thread ids are 0, barriers vanish and a shuffle returns its own value (every layout the cpu target
assigns broadcasts across lanes); program ids and counts are arguments of the kernel function;
shared memory is a buffer the grid loop passes in; `.approx` math is branch-free LLVM IR that
vectorizes (hostmath.py); libdevice calls go to the C library (libdevice.py); masked accesses are
LLVM masked loads and stores; atomics are LLVM atomics."""

from __future__ import annotations

from llvmlite import ir

from ..llvm.hooks import TargetHooks
from ..llvm.llvm_types import I1, I32, SHARED_PTR
from . import hostmath
from .vectors import type_bytes, type_suffix

# the extra kernel parameters after the tt.func's own: program ids, program counts, shared memory
EXTRA_PARAMS = ("pid_x", "pid_y", "pid_z", "nprog_x", "nprog_y", "nprog_z", "smem")
_REGISTER_PARAM = {
    "ctaid.x": 0,
    "ctaid.y": 1,
    "ctaid.z": 2,
    "nctaid.x": 3,
    "nctaid.y": 4,
    "nctaid.z": 5,
}
_RMW = {
    "add": "add",
    "fadd": "fadd",
    "max": "max",
    "umax": "umax",
    "min": "min",
    "umin": "umin",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "xchg": "xchg",
    "fmax": "fmax",
    "fmin": "fmin",
}
_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}


class CpuHooks(TargetHooks):
    """Hooks for the host CPU (triple and data layout of llvmlite's native target)."""

    tree_reductions = True

    def __init__(self, triple: str, data_layout: str):
        self.triple = triple
        self.data_layout = data_layout

    def declare_kernel(self, lw, module, name, params) -> ir.Function:
        extra = [I32] * 6 + [SHARED_PTR]
        function = ir.Function(module, ir.FunctionType(ir.VoidType(), params + extra), name)
        for arg, label in zip(function.args[len(params) :], EXTRA_PARAMS):
            arg.name = label
        function.linkage = "internal"  # inlined into the grid loop (jit.add_grid_loop)
        function.attributes.add("alwaysinline")
        return function

    def special_register(self, lw, name) -> ir.Value:
        if name == "tid.x":
            return ir.Constant(I32, 0)
        # the extra parameters come last, after debug mode's hidden ones (if any)
        return lw.function.args[len(lw.function.args) - len(EXTRA_PARAMS) + _REGISTER_PARAM[name]]

    def barrier(self, lw) -> None:
        pass  # one thread per program: nothing to wait for

    def shuffle_xor_i32(self, lw, value, lane_mask) -> ir.Value:
        return value  # lanes are copies of the one thread

    def shared_memory(self, lw) -> ir.Value:
        return lw.function.args[-1]

    def private_shared_memory(self, lw, offset, nbytes) -> ir.Value:
        array = lw.entry_builder.alloca(ir.ArrayType(ir.IntType(8), max(nbytes, 1)))
        array.align = 16
        return lw.entry_builder.addrspacecast(array, SHARED_PTR)

    def approx_math(self, lw, instruction, x) -> ir.Value:
        return hostmath.approx(lw, instruction, x)

    def fast_divide(self, lw, lhs, rhs) -> ir.Value:
        return lw.builder.fdiv(lhs, rhs)

    def libdevice(self, lw, symbol, ret, args) -> ir.Value:
        from . import libdevice

        return libdevice.call(lw, symbol, ret, args)

    def inline_asm(self, lw, text, constraints, ret, args, side_effect) -> ir.Value:
        """The PTX tl.extra.cuda itself emits has a host meaning (as in the interpreter: grid
        dependence control waits for nothing, one "SM", a nanosecond clock); other inline PTX is
        refused."""
        from ...frontend.calls import (
            GDC_LAUNCH_DEPENDENTS_ASM,
            GDC_WAIT_ASM,
            GLOBALTIMER_ASM,
            SMID_ASM,
        )

        if text in (GDC_WAIT_ASM, GDC_LAUNCH_DEPENDENTS_ASM, SMID_ASM) and not args:
            return ir.Constant(ret, 0)
        if text == GLOBALTIMER_ASM and not args:
            return _realtime_ns(lw)
        raise lw.error(
            lw.current_op,
            "inline PTX cannot run on the cpu target (it has no host "
            "meaning); run the kernel on an NVIDIA GPU",
        )

    def predicated_access(self, etype, vec) -> bool:
        return True

    def global_load(self, lw, ptr, pred, etype, vec, other, quals) -> ir.Value:
        b = lw.builder
        vtype = ir.VectorType(etype, vec)
        if pred is None:
            load = b.load(ptr, typ=vtype if vec > 1 else etype)
            load.align = _size(etype) * vec
            return load
        passthru = _as_vector(b, other, vtype) if other is not None else ir.Constant(vtype, None)
        mask = _splat(b, pred, vec)
        name = f"llvm.masked.load.{_mangle(vtype)}.p1"
        fn = lw.intrinsic(name, vtype, [ptr.type, I32, mask.type, vtype])
        value = b.call(fn, [ptr, ir.Constant(I32, _size(etype) * vec), mask, passthru])
        return value if vec > 1 else b.extract_element(value, ir.Constant(I32, 0))

    def global_store(self, lw, ptr, data, pred, etype, vec, quals) -> None:
        b = lw.builder
        if pred is None:
            b.store(data, ptr).align = _size(etype) * vec
            return
        vtype = ir.VectorType(etype, vec)
        name = f"llvm.masked.store.{_mangle(vtype)}.p1"
        fn = lw.intrinsic(name, ir.VoidType(), [vtype, ptr.type, I32, ir.VectorType(I1, vec)])
        b.call(
            fn,
            [
                _as_vector(b, data, vtype),
                ptr,
                ir.Constant(I32, _size(etype) * vec),
                _splat(b, pred, vec),
            ],
        )

    def threads(self, lw) -> int:
        return 1

    # -- a tensor's registers are one LLVM vector (vectors.py, vector_rules.py) ---------------------
    def own_rule(self, op):
        from .vector_rules import own_rule

        return own_rule(op)

    def carried_registers(self, lw, tval) -> list:
        from .vectors import packed

        return [packed(lw, tval)]

    def carried_types(self, lw, layout, element) -> list:
        return [ir.VectorType(element, layout.num_regs)]

    def tensor_of_registers(self, lw, registers, layout):
        from .vectors import VTVal

        return VTVal(registers[0], layout, lw)

    def atomic_rmw(self, lw, op, ptr, val, pred, t) -> ir.Value:
        kind = _RMW.get(op.kind)
        if kind is None:
            raise lw.error(op, f"atomic `{op.kind}` is not supported on the cpu target")
        if t.is_float and kind in ("max", "min"):
            kind = "f" + kind
        order = _ORDER.get(op.sem, "seq_cst")

        def emit():
            return lw.builder.atomic_rmw(kind, ptr, val, order)

        return _guarded(lw, pred, emit, val.type)

    def atomic_cas(self, lw, op, ptr, cmp, val, pred, t) -> ir.Value:
        order = _ORDER.get(op.sem, "seq_cst")
        failure = {"release": "monotonic", "acq_rel": "acquire"}.get(order, order)

        def emit():
            b = lw.builder
            return b.extract_value(b.cmpxchg(ptr, cmp, val, order, failure), 0)

        return _guarded(lw, pred, emit, val.type)


def _guarded(lw, pred, emit, ty) -> ir.Value:
    """`emit()` where `pred` holds, else a zero (the old value of an atomic that did not happen)."""
    b = lw.builder
    before = b.block
    with b.if_then(pred):
        value = emit()
        inside = b.block
    phi = b.phi(ty)
    phi.add_incoming(value, inside)
    phi.add_incoming(ir.Constant(ty, None), before)
    return phi


def _size(etype) -> int:
    return type_bytes(etype)


def _mangle(vtype: ir.VectorType) -> str:
    return f"v{vtype.count}{type_suffix(vtype.element)}"


def _splat(b, pred, vec: int) -> ir.Value:
    mask = ir.Constant(ir.VectorType(I1, vec), None)
    for i in range(vec):
        mask = b.insert_element(mask, pred, ir.Constant(I32, i))
    return mask


def _as_vector(b, value, vtype) -> ir.Value:
    if isinstance(value.type, ir.VectorType):
        return value
    return b.insert_element(ir.Constant(vtype, None), value, ir.Constant(I32, 0))


def _realtime_ns(lw) -> ir.Value:
    """%globaltimer on the host: CLOCK_REALTIME in nanoseconds (the interpreter's time_ns())."""
    i64 = ir.IntType(64)
    timespec = ir.LiteralStructType([i64, i64])
    clock = lw.module.globals.get("clock_gettime") or ir.Function(
        lw.module, ir.FunctionType(I32, [I32, ir.PointerType()]), "clock_gettime"
    )
    b = lw.builder
    slot = lw.entry_builder.alloca(timespec)
    b.call(clock, [ir.Constant(I32, 0), slot])
    seconds = b.load(b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, 0)]), typ=i64)
    nanoseconds = b.load(b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, 1)]), typ=i64)
    return b.add(b.mul(seconds, ir.Constant(i64, 10**9)), nanoseconds)
