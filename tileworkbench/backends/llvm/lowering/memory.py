"""Global memory: `tt.load`/`tt.store` as vector accesses (up to 16 bytes: `ld.global.v4.b32`) where the
layout, axis info and mask allow; masked ones as predicated PTX (`global_access.py`) filled with `other`;
atomics as predicated `atom.global` with their memory order and scope; pointer arithmetic."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.types import PointerType, ScalarType, element_type
from ..llvm_types import GLOBAL_PTR, I8, I32, byte_size, llvm_type, memory_type
from ..values import TVal
from . import elementwise, global_access, lowers
from .bounds import check_access
from .common import scalar_type
from .exchange import has_copies, read_shared, strides, write_shared


@elementwise(tt.AddPtrOp)
def lower_addptr(lw, op, ptr, offset) -> ir.Value:
    etype = memory_type(
        op.result.type.pointee
        if isinstance(op.result.type, PointerType)
        else op.result.type.element.pointee
    )
    return lw.builder.gep(ptr, [offset], source_etype=etype)


@elementwise(tt.IntToPtrOp)
def lower_int_to_ptr(lw, op, x) -> ir.Value:
    return lw.builder.inttoptr(x, GLOBAL_PTR)


@elementwise(tt.PtrToIntOp)
def lower_ptr_to_int(lw, op, x) -> ir.Value:
    return lw.builder.ptrtoint(x, llvm_type(op.result.type))


@elementwise(tt.PtrBitcastOp)
def lower_ptr_bitcast(lw, op, x) -> ir.Value:
    return x


def vector_width(lw, op, layout) -> int:
    """Elements per access: contiguous registers of the layout, limited by the pointer's contiguity and
    alignment, the mask's constancy and 16 bytes."""
    if not layout.regs:
        return 1
    basis = layout.regs[0]
    dim = next(d for d, b in enumerate(basis) if b)
    run = 0
    while run < len(layout.regs) and layout.regs[run] == tuple(
        (1 << run) if d == dim else 0 for d in range(len(basis))
    ):
        run += 1
    nbytes = byte_size(op.ptr.type.element.pointee)
    info = lw.axis.info(op.ptr)
    vec = min(
        1 << run,
        info.contiguity[dim],
        max(1, info.divisibility[dim] // nbytes),
        max(1, 16 // nbytes),
    )
    if getattr(op, "mask", None) is not None:
        vec = min(vec, lw.axis.info(op.mask).constancy[dim])
    if isinstance(op, tt.StoreOp) and getattr(op.value.type, "element", None) == ScalarType("i1"):
        vec = min(vec, 1)
    return max(1, 1 << (vec.bit_length() - 1))


def _to_register(lw, value, pointee) -> ir.Value:
    if isinstance(pointee, ScalarType) and pointee.is_bool:
        return lw.builder.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    return value


def _to_memory(lw, value, pointee) -> ir.Value:
    if isinstance(pointee, ScalarType) and pointee.is_bool:
        return lw.builder.zext(value, I8)
    return value


def _zero(t: ir.Type) -> ir.Constant:
    if isinstance(t, ir.IntType):
        return ir.Constant(t, 0)
    if t == GLOBAL_PTR:
        return ir.Constant(t, None)
    return ir.Constant(t, 0.0)


def _masked(lw, mask, emit, fallback):
    """`emit()` where `mask` holds, else `fallback` (a phi merges them): a branch around the access."""
    b = lw.builder
    before = b.block
    with b.if_then(mask, likely=True):
        value = emit()
        inside = b.block
    if fallback is None:
        return None
    phi = b.phi(value.type)
    phi.add_incoming(value, inside)
    phi.add_incoming(fallback, before)
    return phi


def _load_one(lw, ptr, vec: int, etype: ir.Type, elem_bytes: int):
    """One load of `vec` elements (a vector type when vec > 1), aligned to its whole size."""
    load = lw.builder.load(ptr, typ=etype if vec == 1 else ir.VectorType(etype, vec))
    load.align = elem_bytes * vec
    return load


@lowers(tt.LoadOp)
def lower_load(lw, op) -> None:
    pointee = element_type(op.ptr.type).pointee
    etype, nbytes = memory_type(pointee), byte_size(pointee)
    ptr = lw.get(op.ptr)
    mask = lw.get(op.mask) if op.mask is not None else None
    other = lw.get(op.other) if op.other is not None else None
    quals = global_access.qualifiers(op, store=False)
    if not isinstance(ptr, TVal):
        mask = check_access(lw, op, "load", ptr, mask)
        fallback = _to_memory(lw, other, pointee) if other is not None else None
        value = _access(
            lw,
            mask,
            quals,
            etype,
            1,
            fallback,
            lambda: _load_one(lw, ptr, 1, etype, nbytes),
            lambda pred, fill: lw.hooks.global_load(lw, ptr, pred, etype, 1, fill, quals),
        )
        lw.set(op.result, _to_register(lw, value, pointee))
        return
    layout = ptr.layout
    vec = vector_width(lw, op, layout)
    out = []
    for start in range(0, layout.num_regs, vec):
        m = mask.vals[start] if isinstance(mask, TVal) else mask
        fallback = (
            _other_vector(lw, other, start, vec, etype, pointee) if other is not None else None
        )
        address = ptr.vals[start]
        m = check_access(lw, op, "load", address, m, vec)
        value = _access(
            lw,
            m,
            quals,
            etype,
            vec,
            fallback,
            lambda address=address: _load_one(lw, address, vec, etype, nbytes),
            lambda pred, fill, address=address: lw.hooks.global_load(
                lw, address, pred, etype, vec, fill, quals
            ),
        )
        for i in range(vec):
            elem = value if vec == 1 else lw.builder.extract_element(value, ir.Constant(I32, i))
            out.append(_to_register(lw, elem, pointee))
    lw.set(op.result, TVal(out, layout))


def _access(lw, mask, quals: str, etype, vec: int, fallback, plain, predicated, load: bool = True):
    """One access: a plain LLVM load/store when unmasked and unqualified (LLVM may optimize it), one
    predicated PTX instruction when masked (or qualified), a branch around it where PTX words do not
    fit (pointers). `fallback` is the masked-off value of a load (None: zeros, or a store)."""
    always = mask is None or global_access.is_constant_true(mask)
    if always and not quals:
        return plain()
    if lw.hooks.predicated_access(etype, vec):
        return predicated(None if always else mask, fallback)
    if quals:
        raise lw.error(lw.current_op, "cache modifiers and eviction policies need numeric elements")
    if load and fallback is None:
        fallback = _zero(_vector_type(etype, vec))
    return _masked(lw, mask, plain, fallback)


def _vector_type(etype, vec: int):
    return etype if vec == 1 else ir.VectorType(etype, vec)


def _other_vector(lw, other, start: int, vec: int, etype, pointee):
    if isinstance(other, TVal):
        elems = [_to_memory(lw, other.vals[start + i], pointee) for i in range(vec)]
    else:
        elems = [_to_memory(lw, other, pointee)] * vec
    return elems[0] if vec == 1 else _build_vector(lw, elems, etype)


def _build_vector(lw, elems, etype) -> ir.Value:
    vec = ir.Constant(ir.VectorType(etype, len(elems)), ir.Undefined)
    for i, e in enumerate(elems):
        vec = lw.builder.insert_element(vec, e, ir.Constant(I32, i))
    return vec


@lowers(tt.StoreOp)
def lower_store(lw, op) -> None:
    pointee = element_type(op.ptr.type).pointee
    etype = memory_type(pointee)
    ptr, value = lw.get(op.ptr), lw.get(op.value)
    mask = lw.get(op.mask) if op.mask is not None else None
    quals = global_access.qualifiers(op, store=True)
    b = lw.builder
    if not isinstance(ptr, TVal):
        # Thread 0 alone stores a scalar (as Triton): the same address written by every warp costs
        # one L2 write per warp, which showed in row-statistics stores (layer norm's mean/rstd).
        owner = lw.owner_predicate(None)
        m = check_access(lw, op, "store", ptr, owner if mask is None else b.and_(owner, mask))
        data = _to_memory(lw, value, pointee)
        _access(
            lw,
            m,
            quals,
            etype,
            1,
            None,
            lambda: _store(b, data, ptr, byte_size(pointee)),
            lambda pred, _: lw.hooks.global_store(lw, ptr, data, pred, etype, 1, quals),
            load=False,
        )
        return
    layout = ptr.layout
    vec = vector_width(lw, op, layout)
    owner = lw.owner_predicate(layout) if has_copies(layout) else None
    for start in range(0, layout.num_regs, vec):
        m = mask.vals[start] if isinstance(mask, TVal) else mask
        if owner is not None:  # one thread writes each element, as Triton's redundant-data mask
            m = owner if m is None else b.and_(owner, m)
        elems = [
            _to_memory(lw, value.vals[start + i] if isinstance(value, TVal) else value, pointee)
            for i in range(vec)
        ]
        data = elems[0] if vec == 1 else _build_vector(lw, elems, etype)
        address = ptr.vals[start]
        m = check_access(lw, op, "store", address, m, vec)
        _access(
            lw,
            m,
            quals,
            etype,
            vec,
            None,
            lambda data=data, address=address: _store(b, data, address, byte_size(pointee) * vec),
            lambda pred, _, data=data, address=address: lw.hooks.global_store(
                lw, address, data, pred, etype, vec, quals
            ),
            load=False,
        )


def _store(b, data, ptr, align: int):
    store = b.store(data, ptr)
    store.align = align
    return store


# -- atomics ----------------------------------------------------------------------------------------
_RMW = {
    "add": "add",
    "fadd": "add",
    "max": "max",
    "umax": "max",
    "min": "min",
    "umin": "min",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "xchg": "exch",
}
_SEM = {"relaxed": ".relaxed", "acquire": ".acquire", "release": ".release", "acq_rel": ".acq_rel"}
_SCOPE = {"gpu": ".gpu", "cta": ".cta", "sys": ".sys"}


def _atom_type(kind: str, t: ScalarType) -> tuple[str, str]:
    """(PTX type suffix, register constraint) of an atomic on `t`."""
    bits = t.bitwidth
    if t.is_float:
        if kind not in ("fadd", "xchg"):
            return "", ""
        if kind == "xchg":
            return f".b{bits}", {16: "h", 32: "r", 64: "l"}[bits]
        suffix = {16: ".noftz.f16" if t.name == "f16" else ".noftz.bf16", 32: ".f32", 64: ".f64"}
        return suffix[bits], {16: "h", 32: "f", 64: "d"}[bits]
    constraint = {32: "r", 64: "l"}.get(bits, "")
    if kind in ("and", "or", "xor", "xchg"):
        return f".b{bits}", constraint
    if kind in ("max", "min"):
        return f".s{bits}", constraint
    return f".u{bits}", constraint


def _atomic_asm(op, body: str, n_args: int) -> str:
    """`atom.global` with the op's memory order and scope, then `<body>`, under the predicate passed
    as operand `$n_args`. The PTX ISA writes `atom{.sem}{.scope}{.space}`, and ptxas takes the
    qualifiers in any order; we print Triton's orders, `atom.global.gpu.acq_rel.add` for read-modify-
    write and `atom.global.acq_rel.gpu.cas`, which its tests (and users comparing PTX) look for."""
    sem = _SEM.get(op.sem, ".acq_rel")
    scope = _SCOPE.get(op.scope, ".gpu")
    qualifiers = f"{sem}{scope}" if isinstance(op, tt.AtomicCASOp) else f"{scope}{sem}"
    return (
        "{ .reg .pred %p; setp.ne.b32 %p, $" + str(n_args + 1) + ", 0; "
        f"@%p atom.global{qualifiers}.{body}; }}"
    )


def _pred_i32(lw, pred) -> ir.Value:
    return lw.builder.zext(pred, I32)


def _float_minmax(lw, op, ptr, val, pred, t: ScalarType) -> ir.Value:
    """Float atomic max/min on the bits: for x >= 0 (sign clear) signed-int max (min) orders like the
    float; for x < 0 unsigned-int min (max) does. NaN is not ordered (as Triton)."""
    b = lw.builder
    bits = t.bitwidth
    if bits not in (32, 64):
        raise lw.error(op, f"atomic `{op.kind}` on {t} is not supported by the NVPTX back end")
    ity = ir.IntType(bits)
    reg = "r" if bits == 32 else "l"
    as_int = b.bitcast(val, ity)
    negative = b.icmp_signed("<", as_int, ir.Constant(ity, 0))
    is_max = op.kind == "fmax"
    results = []
    for cond, name in (
        (b.not_(negative), f"{'max' if is_max else 'min'}.s{bits}"),
        (negative, f"{'min' if is_max else 'max'}.u{bits}"),
    ):
        text = _atomic_asm(op, f"{name} $0, [$1], $2", 2)
        results.append(
            lw.asm(
                text,
                f"={reg},l,{reg},r",
                ity,
                [ptr, as_int, _pred_i32(lw, b.and_(pred, cond))],
                side_effect=True,
            )
        )
    return b.bitcast(b.select(negative, results[1], results[0]), llvm_type(t))


def _needs_cas_loop(lw, kind: str, t: ScalarType) -> bool:
    """PTX has no `atom.exch.b16`, and `atom.add.bf16` needs sm_90 (the arch's bf16_atomic_add)."""
    return (kind == "xchg" and t.bitwidth == 16) or (
        kind == "fadd" and t.name == "bf16" and not lw.hooks.bf16_atomic_add(lw)
    )


def _cas_loop(lw, op, ptr, val, pred, t: ScalarType) -> ir.Value:
    """A 16-bit read-modify-write as a loop of `atom.cas.b16` (as LLVM and Triton expand the ones PTX
    lacks): guess the old value, swap in the update of the guess, and retry with the value the
    compare-and-swap saw until the guess was right."""
    b = lw.builder
    bits = ir.IntType(16)
    start = b.block
    loop = b.append_basic_block("atomic_cas_loop")
    done = b.append_basic_block("atomic_cas_done")
    b.cbranch(pred, loop, done)
    b.position_at_end(loop)
    guess = b.phi(bits)
    guess.add_incoming(ir.Constant(bits, 0), start)
    if op.kind == "xchg":
        new = b.bitcast(val, bits)
    else:
        new = b.bitcast(b.fadd(b.bitcast(guess, val.type), val), bits)
    text = _atomic_asm(op, "cas.b16 $0, [$1], $2, $3", 3)
    seen = lw.asm(
        text, "=h,l,h,h,r", bits, [ptr, guess, new, ir.Constant(I32, 1)], side_effect=True
    )
    guess.add_incoming(seen, b.block)
    b.cbranch(b.icmp_unsigned("==", seen, guess), done, loop)
    b.position_at_end(done)
    old = b.phi(bits)
    old.add_incoming(ir.Constant(bits, 0), start)
    old.add_incoming(seen, loop)
    return b.bitcast(old, llvm_type(t))


def ptx_atomic_rmw(lw, op, ptr, val, pred, t: ScalarType) -> ir.Value:
    """One predicated `atom.global` (NvptxHooks.atomic_rmw)."""
    if op.kind in ("fmax", "fmin"):
        return _float_minmax(lw, op, ptr, val, pred, t)
    if _needs_cas_loop(lw, op.kind, t):
        return _cas_loop(lw, op, ptr, val, pred, t)
    suffix, reg = _atom_type(op.kind, t)
    if not suffix or not reg:
        raise lw.error(op, f"atomic `{op.kind}` on {t} is not supported by the NVPTX back end")
    ptx_op = _RMW[op.kind]
    text = _atomic_asm(op, f"{ptx_op}{suffix} $0, [$1], $2", 2)
    ty = llvm_type(t)
    return lw.asm(text, f"={reg},l,{reg},r", ty, [ptr, val, _pred_i32(lw, pred)], side_effect=True)


def ptx_atomic_cas(lw, op, ptr, cmp, val, pred, t: ScalarType) -> ir.Value:
    """One predicated `atom.global.cas` (NvptxHooks.atomic_cas)."""
    bits = t.bitwidth
    reg = {16: "h", 32: "r", 64: "l"}.get(bits)
    if reg is None:
        raise lw.error(op, f"atomic_cas on {t} is not supported")
    text = _atomic_asm(op, f"cas.b{bits} $0, [$1], $2, $3", 3)
    ty = llvm_type(t)
    args = [ptr, _as_bits(lw, cmp, bits), _as_bits(lw, val, bits), _pred_i32(lw, pred)]
    old = lw.asm(text, f"={reg},l,{reg},{reg},r", ir.IntType(bits), args, side_effect=True)
    return old if isinstance(ty, ir.IntType) else lw.builder.bitcast(old, ty)


def _as_bits(lw, v, bits):
    return v if isinstance(v.type, ir.IntType) else lw.builder.bitcast(v, ir.IntType(bits))


def _broadcast_scalar(lw, value) -> ir.Value:
    """Thread 0's value to every thread, through shared memory."""
    b = lw.builder
    smem = lw.smem_ptr(lw.shared_memory(8), ir.Constant(I32, 0))
    lw.barrier_before_shared()
    with b.if_then(lw.owner_predicate(None)):
        b.store(value, smem)
    lw.barrier()
    return b.load(smem, typ=value.type)


def _lower_atomic(lw, op, one) -> None:
    t = scalar_type(op.result)
    ptr = lw.get(op.ptr)
    mask = lw.get(op.mask) if getattr(op, "mask", None) is not None else None
    others = [lw.get(v) for v in op.operands[1:] if v is not getattr(op, "mask", None)]
    b = lw.builder
    if not isinstance(ptr, TVal):
        pred = lw.owner_predicate(None)
        if mask is not None:
            pred = b.and_(pred, mask)
        pred = check_access(lw, op, "atomic", ptr, pred)
        old = one(lw, op, ptr, *others, pred, t)
        lw.set(op.result, _broadcast_scalar(lw, old))
        return
    layout = ptr.layout
    owner = lw.owner_predicate(layout)
    # every lane taken once, here: each atomic below opens blocks, and a value held as one vector
    # (the cpu target) gives its lanes per block, so reading them in the loop extracted every lane
    # again per lane (quadratic: a 32x32 block's compile ran out of memory)
    ptrs = ptr.vals
    masks = mask.vals if isinstance(mask, TVal) else None
    lanes = [v.vals if isinstance(v, TVal) else None for v in others]
    out = []
    for r in range(layout.num_regs):
        pred = owner
        if mask is not None:
            pred = b.and_(pred, masks[r] if masks is not None else mask)
        args = [v if lane is None else lane[r] for v, lane in zip(others, lanes)]
        pred = check_access(lw, op, "atomic", ptrs[r], pred)
        out.append(one(lw, op, ptrs[r], *args, pred, t))
    result = TVal(out, layout)
    if has_copies(layout) and lw.users.get(id(op.result)):
        result = _share_owned(lw, result, op)
    lw.set(op.result, result)


def _share_owned(lw, value: TVal, op) -> TVal:
    """The owners' old values to the threads that hold copies (which did no atomic)."""
    shape = op.result.type.shape
    nbytes = byte_size(element_type(op.result.type))
    numel = 1
    for s in shape:
        numel *= s
    smem = lw.shared_memory(numel * nbytes)
    lw.barrier_before_shared()
    write_shared(lw, value, shape, 0, nbytes, smem, owners_only=True)
    lw.barrier()
    st = strides(shape)
    vals = read_shared(
        lw,
        value.layout,
        lambda c: sum(x * s for x, s in zip(c, st)),
        0,
        nbytes,
        smem,
        value.vals[0].type,
    )
    return TVal(vals, value.layout)


@lowers(tt.AtomicRMWOp)
def lower_atomic_rmw(lw, op) -> None:
    _lower_atomic(lw, op, lw.hooks.atomic_rmw)


@lowers(tt.AtomicCASOp)
def lower_atomic_cas(lw, op) -> None:
    _lower_atomic(lw, op, lw.hooks.atomic_cas)
