"""`lower_descriptors`: every target-neutral descriptor op (`tt.make_tensor_descriptor`,
`tt.descriptor_load`, `tt.descriptor_store`) becomes either a TMA copy (`ttng.*`, sm_90+) or
masked pointer loads and stores (block_tiles.py), as the TargetInfo allows. First in `TILE_GPU`:
every later GPU pass sees `ttng` ops or pointers only.

TMA is used only where it cannot fault or write past the tensor (tma_rules.py):
- a host descriptor (a kernel parameter) takes a tensor map where the target has TMA, the launch
  guaranteed its base, strides and innermost extent whole 16-byte chunks (`:16`), TMA can copy its
  block and any NaN padding is a float of 16 bits or more; the pass then adds the parameter
  `<name>.tensormap` after its strides (the launch ABI that `descriptor_args.expand_arg` builds);
- a descriptor made in the kernel builds its map in global scratch where the target can
  (`tensormap_create`, sm_90a), it is made at the top level (a map rewritten in a loop would race
  with copies in flight), and its base, strides and innermost extent are known multiples of 16
  bytes (divisibility.py);
- each access of such a descriptor needs its innermost offset on a 16-byte chunk (TMA traps on
  one that is not).
Descriptors the compiler's retry keeps off TMA for shared memory (`TargetInfo.tma_fallback`) take
pointers too. Each pointer choice on a TMA target leaves a `ttng.tma_fallback` note saying why.
A pointer load read only through `.T` builds its tile transposed, so `pipeline` can copy it into
the shared tile its dot reads with cp.async, as it does hand-written pointer loads.
Where anything changed, the cleanup passes run again, so the IR is what the frontend once wrote.
"""

from __future__ import annotations

from ..ir.builder import Builder
from ..ir.ops import arith, tt, ttng
from ..ir.ops.base import Op
from ..dtypes import BY_IR, tma_element_code
from ..ir.types import PointerType, i8, i32, i64
from ..ir.values import BlockArgument, Value
from ..target import TargetInfo, target_pass
from ..tma_rules import (
    CHUNK,
    box_refusal,
    host_refusal,
    inner_offset_aligned,
    nan_refusal,
    swizzle_bytes,
    tma_box,
)
from .block_tiles import block_tile, padding_value
from .canonicalize import canonicalize
from .cse import cse
from .dce import dce
from .divisibility import known_multiple, pointer_multiple
from .licm import licm

MAP_BYTES = 128  # a CUtensorMap, 128-byte aligned (Triton's TMA_SIZE_BYTES / TMA_ALIGN)
TENSOR_MAP_TYPE = PointerType(i8)  # passed by value: the arg attribute `tt.tensormap` says so
# after the rewrite, as TILE_OPT ends: the expansion folds, merges and leaves loops as it did there
CLEANUP = (canonicalize, cse, licm, cse, dce)


@target_pass
def lower_descriptors(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Rewrite each descriptor op to TMA or pointers; returns whether there was any."""
    makes = [op for op in func.walk() if isinstance(op, tt.MakeTensorDescOp)]
    if not makes:
        return False
    maps = {id(make.result): _choose(func, make, target) for make in makes}
    for op in list(func.walk()):
        if isinstance(op, (tt.DescriptorLoadOp, tt.DescriptorStoreOp)):
            _lower_access(func, op, maps[id(op.desc)])
    for make in makes:
        make.erase()
    for cleanup in CLEANUP:
        cleanup(func)
    return True


# -- the choice per descriptor ---------------------------------------------------------------------


def _choose(func: tt.FuncOp, make: tt.MakeTensorDescOp, target: TargetInfo) -> Value | None:
    """The tensor map `make`'s accesses copy through, or None (pointers; noted on a TMA target)."""
    if not target.tma or not (make.host or target.tensormap_create):
        return None  # no TMA for it on this target at all: nothing to note
    reason = _host_refusal(make, target) if make.host else _device_refusal(make, target)
    builder = Builder(loc=make.loc)
    with builder.before_op(make):
        if reason is not None:
            what = f"descriptor {make.host}" if make.host else "descriptor made in the kernel"
            builder.create(ttng.TMAFallbackOp, reason=f"{what}: {reason}")
            return None
        if make.host:
            return _host_tensor_map(func, make)
        return _device_tensor_map(builder, make)


def _block(make: tt.MakeTensorDescOp):
    return make.result.type.block


def _host_refusal(make: tt.MakeTensorDescOp, target: TargetInfo) -> str | None:
    block = _block(make)
    element = block.element
    aligned = isinstance(make.base, BlockArgument) and pointer_multiple(make.base) % CHUNK == 0
    reason = host_refusal(
        block.shape,
        BY_IR[element.name].triton,
        element.is_float,
        element.bitwidth,
        make.padding,
        aligned,
    )
    if reason is None and make.host in target.tma_fallback.host:
        reason = target.tma_fallback.reason
    return reason


def _host_tensor_map(func: tt.FuncOp, make: tt.MakeTensorDescOp) -> Value:
    """The parameter `<name>.tensormap`, added after the descriptor's last part (base, shape,
    strides), where the runtime passes it."""
    last = max(v.index for v in make.operands if isinstance(v, BlockArgument))
    return func.insert_arg(
        last + 1, TENSOR_MAP_TYPE, f"{make.host}.tensormap", {"tt.tensormap": MAP_BYTES}
    )


def _device_refusal(make: tt.MakeTensorDescOp, target: TargetInfo) -> str | None:
    """Why TMA cannot take descriptor `make` made in the kernel (the module docstring), or None."""
    block = _block(make)
    element, nbytes = block.element, max(1, block.element.bitwidth // 8)
    if not isinstance(make.parent.parent_op, tt.FuncOp):
        return "made inside a loop or branch (its map would be rewritten while copies read it)"
    reason = nan_refusal(make.padding, element.is_float, element.bitwidth) or box_refusal(
        block.shape, BY_IR[element.name].triton, element.bitwidth
    )
    if reason is not None:
        return reason
    if pointer_multiple(make.base) % CHUNK:
        return "the base is not known to be 16-byte aligned"
    for what, value in [("a stride", s) for s in make.strides] + [
        ("the innermost extent", make.shape[-1])
    ]:
        multiple = known_multiple(value)
        if multiple * nbytes % CHUNK:
            return (
                f"{what} is not known to be a multiple of {CHUNK} bytes (known multiple: "
                f"{multiple} elements of {nbytes} bytes)"
            )
    if target.tma_fallback.device:
        return target.tma_fallback.reason
    return None


def _device_tensor_map(builder: Builder, make: tt.MakeTensorDescOp) -> Value:
    """The map of `make` written into global scratch in the kernel (`tensormap.replace`)."""
    block = _block(make)
    nbytes = max(1, block.element.bitwidth // 8)
    inner, swizzle = tma_box(block.shape, nbytes)
    scratch = builder.value(
        ttng.GlobalScratchOp,
        TENSOR_MAP_TYPE,
        "tensormap_scratch",
        nbytes=MAP_BYTES,
        align=MAP_BYTES,
    )
    shape = [_cast(builder, s, i64) for s in make.shape]
    strides = [_cast(builder, s, i64) for s in make.strides]
    return builder.value(
        ttng.TensormapCreateOp,
        TENSOR_MAP_TYPE,
        "tensormap",
        desc_ptr=scratch,
        base=make.base,
        shape=shape,
        strides=strides,
        box=(*block.shape[:-1], inner),
        elem_type=tma_element_code(block.element.name, in_kernel=True),  # PTX's codes
        swizzle=swizzle,
        fill=make.padding,
    )


def _cast(builder: Builder, value: Value, to) -> Value:
    """A scalar integer as `to` (i32 or i64), as the frontend's cast does."""
    if value.type == to:
        return value
    if value.type.bitwidth == to.bitwidth:  # u32 -> i32
        return builder.value(arith.BitcastOp, to, operand=value)
    if value.type.bitwidth > to.bitwidth:
        return builder.value(arith.TruncIOp, to, operand=value)
    ext = arith.ExtUIOp if value.type.name.startswith("u") else arith.ExtSIOp
    return builder.value(ext, to, operand=value)


# -- each access -----------------------------------------------------------------------------------


def _lower_access(func: tt.FuncOp, op: Op, tensor_map: Value | None) -> None:
    """One load or store: a TMA copy through `tensor_map` where its offset allows, else pointers."""
    make = op.desc.op
    block = _block(make)
    builder = Builder(loc=op.loc)
    with builder.before_op(op):
        if tensor_map is not None and not _inner_offset_aligned(builder, op, block):
            tensor_map = None
        if tensor_map is not None:
            return _tma_access(func, builder, op, tensor_map, make)
    _pointer_access(func, op, make)


def _inner_offset_aligned(builder: Builder, op: Op, block) -> bool:
    """Whether the innermost offset is a known multiple of 16 bytes; else a note says why not."""
    nbytes = max(1, block.element.bitwidth // 8)
    multiple = known_multiple(op.offsets[-1])
    if inner_offset_aligned(multiple, nbytes):
        return True
    builder.create(
        ttng.TMAFallbackOp,
        reason=(
            f"innermost offset not provably a multiple of {CHUNK} bytes (known multiple: {multiple} "
            f"elements of {nbytes} bytes); TMA traps on an unaligned box"
        ),
    )
    return False


def _tma_access(
    func: tt.FuncOp, builder: Builder, op: Op, tensor_map: Value, make: tt.MakeTensorDescOp
) -> None:
    block = _block(make)
    swizzle = swizzle_bytes(block.shape, max(1, block.element.bitwidth // 8))
    offsets = [_cast(builder, o, i32) for o in op.offsets]  # TMA coordinates are signed 32-bit
    if isinstance(op, tt.DescriptorLoadOp):
        load = builder.value(
            ttng.TMALoadOp,
            op.result.type,
            op.result.name_hint,
            desc=tensor_map,
            offsets=offsets,
            padding=make.padding,
            swizzle=swizzle,
        )
        _replace(func, op, load)
    else:
        builder.create(
            ttng.TMAStoreOp, desc=tensor_map, value=op.value, offsets=offsets, swizzle=swizzle
        )
        op.erase()


def _pointer_access(func: tt.FuncOp, op: Op, make: tt.MakeTensorDescOp) -> None:
    block = _block(make)
    # a store's value conversions came after the pointer tile in the frontend's order
    builder = Builder(loc=op.loc)
    first = _conversions_before(op) if isinstance(op, tt.DescriptorStoreOp) else op
    trans = _sole_transpose(func, op)
    order = tuple(trans.order) if trans is not None else tuple(range(len(block.shape)))
    with builder.before_op(first):
        one = builder.value(arith.ConstantOp, i32, value=1)  # the innermost stride
        strides = [*make.strides, one]
        pointers, mask = block_tile(
            builder,
            make.base,
            *(_permute(part, order) for part in (make.shape, strides, op.offsets, block.shape)),
            shape_fits_i32=_shape_fits_i32(make),
        )
    with builder.before_op(op):
        if isinstance(op, tt.DescriptorLoadOp):
            result = op.result if trans is None else trans.result
            shape = _permute(block.shape, order)
            other = padding_value(builder, block.element, make.padding, shape)
            load = builder.value(
                tt.LoadOp,
                result.type,
                result.name_hint or op.result.name_hint,
                ptr=pointers,
                mask=mask,
                other=other,
            )
            if trans is not None:
                _replace(func, trans, load)
            return _replace(func, op, load)
        builder.create(tt.StoreOp, ptr=pointers, value=op.value, mask=mask)
    op.erase()


def _shape_fits_i32(make: tt.MakeTensorDescOp) -> bool:
    """Whether every extent of the descriptor is below 2**31: a host descriptor's launch checks it
    (`descriptor_args.flatten_descriptor`; Triton's descriptors take int32 shapes), and an int32
    extent made in the kernel is."""
    return bool(make.host) or all(s.type == i32 for s in make.shape)


def _sole_transpose(func: tt.FuncOp, op: Op) -> tt.TransOp | None:
    """The `tt.trans` that is the only user of load `op`, if any. Its pointer tile then reads the
    block transposed itself (`fold_tma_transpose` does the same for TMA): `desc.load(...).T` is the
    tile a pointer kernel writes for K^T, whose load coalesce vectorizes along the rows it reads
    and `pipeline` copies straight into the shared tile the dot reads (cp.async)."""
    if not isinstance(op, tt.DescriptorLoadOp):
        return None
    users = [user for user in func.walk() if op.result in user.operands]
    if len(users) == 1 and isinstance(users[0], tt.TransOp):
        return users[0]
    return None


def _permute(values, order: tuple[int, ...]) -> list:
    """`values` (one per block dimension) in the order of a `tt.trans` result."""
    return [values[axis] for axis in order]


def _conversions_before(store: tt.DescriptorStoreOp) -> Op:
    """The first of the `store.converts` ops that made the stored value, where they still directly
    precede `store` (cleanup passes may have moved them); else `store`."""
    first, value = store, store.value
    for _ in range(store.converts):
        ops = first.parent.ops
        index = ops.index(first)
        prev = ops[index - 1] if index else None
        if prev is None or getattr(value, "op", None) is not prev or not prev.operands:
            return first
        first, value = prev, prev.operands[0]
    return first


def _replace(func: tt.FuncOp, op: Op, new: Value) -> None:
    """Every use of `op`'s result becomes `new`; `op` goes."""
    old = op.result
    for user in func.walk():
        if old in user.operands:
            user.replace_operand(old, new)
    op.erase()
