"""The meaning of each `tl` builtin: typing checks and the Tile IR it builds, registered by name. This
module holds the registry, programs, tiles, casts, memory, atomics, debugging and Python builtins;
shape_calls.py, math_calls.py and reductions.py register the rest.

Every implementation takes the code generator first (`cg`: its `sem` builds typed ops, its `call` calls
user combine functions) and then the builtin's own arguments, exactly as `language/builtins.py` declares.
"""

from __future__ import annotations

import builtins as py
import inspect
from typing import Any, Callable

from ..errors import CompileTimeAssertionFailure, TileTypeError
from ..ir import tt
from ..ir.values import OpResult
from ..language import core
from ..language.core import block_type, dtype, tensor
from ..language.descriptor import block_pointer
from .semantics import shape_str, unwrap

BUILTIN_IMPLS: dict[str, Callable] = {}
MAX_TILE_NUMEL = 1 << 20


def impl(name: str):
    def register(fn: Callable) -> Callable:
        fn.signature = inspect.signature(fn)
        BUILTIN_IMPLS[name] = fn
        return fn

    return register


def constexpr_int(value, what: str) -> int:
    value = unwrap(value)
    if isinstance(value, tensor):
        raise TileTypeError(
            f"{what} must be a tl.constexpr, but it is only known at run time",
            hint="annotate the kernel parameter with `: tl.constexpr`",
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise TileTypeError(f"{what} must be an integer, got {value!r}")
    return value


def check_shape(shape, what: str = "tile shape") -> tuple[int, ...]:
    shape = unwrap(shape)
    if isinstance(shape, (int, core.constexpr, tensor)):
        shape = (shape,)
    dims = tuple(constexpr_int(s, f"each dimension of a {what}") for s in shape)
    numel = 1
    for d in dims:
        if d <= 0 or d & (d - 1):
            raise TileTypeError(
                f"{what} {shape_str(dims)} has a dimension that is not a power of two",
                hint="round the block size up with tw.next_power_of_2 (triton.next_power_of_2) and mask the tail",
            )
        numel *= d
    if numel > MAX_TILE_NUMEL:
        raise TileTypeError(
            f"{what} {shape_str(dims)} has {numel} elements, more than the "
            f"{MAX_TILE_NUMEL} a tile may hold"
        )
    return dims


def as_dtype(value, what: str = "dtype") -> dtype:
    value = unwrap(value)
    if isinstance(value, str):
        return dtype(value)
    if not isinstance(value, dtype):
        raise TileTypeError(f"{what} must be a tl dtype such as tl.float32, got {value!r}")
    return value


def normalize_axis(axis, rank: int) -> int:
    axis = constexpr_int(axis, "axis")
    if not -rank <= axis < rank:
        raise TileTypeError(f"axis {axis} is out of range for a tile of rank {rank}")
    return axis % rank


def dims_arg(dims) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (tuple, list)):
        dims = tuple(unwrap(dims[0]))
    return tuple(constexpr_int(d, "dimension") for d in dims)


# -- programs, tiles and casts -------------------------------------------------------------------------


@impl("program_id")
def program_id(cg, axis):
    axis = constexpr_int(axis, "program_id's axis")
    if axis not in (0, 1, 2):
        raise TileTypeError(f"program_id axis must be 0, 1, or 2 but got {axis}")  # Triton's words
    return cg.sem.make(tt.GetProgramIdOp, core.int32, axis=axis)


@impl("num_programs")
def num_programs(cg, axis):
    axis = constexpr_int(axis, "num_programs' axis")
    if axis not in (0, 1, 2):
        raise TileTypeError(f"num_programs axis must be 0, 1 or 2, got {axis}")
    return cg.sem.make(tt.GetNumProgramsOp, core.int32, axis=axis)


@impl("arange")
def arange(cg, start, end):
    start, end = constexpr_int(start, "arange's start"), constexpr_int(end, "arange's end")
    if end <= start:
        raise TileTypeError(f"arange({start}, {end}) is empty: end must be greater than start")
    size = end - start
    if size & (size - 1):
        raise TileTypeError(
            f"arange's range must be a power of 2, got {size} (from {start} to {end})",
            hint="use the next power of two, tw.next_power_of_2(n), and mask the tail",
        )
    if start < -(2**31) or end > 2**31:
        raise TileTypeError("arange's bounds must fit in int32")
    return cg.sem.make(tt.MakeRangeOp, block_type(core.int32, (size,)), start=start, end=end)


@impl("zeros")
def zeros(cg, shape, dtype):
    return cg.sem.constant(0, as_dtype(dtype), check_shape(shape))


@impl("zeros_like")
def zeros_like(cg, input):
    input = cg.sem.to_tensor(input)
    return cg.sem.constant(0, input.dtype, input.shape)


@impl("full")
def full(cg, shape, value, dtype):
    shape, dt = check_shape(shape), as_dtype(dtype)
    value = unwrap(value)
    if isinstance(value, tensor):
        return cg.sem.splat(cg.sem.cast(value, dt), shape) if shape else cg.sem.cast(value, dt)
    return cg.sem.constant(value, dt, shape)


@impl("cast")
def cast(cg, input, dtype, fp_downcast_rounding=None, bitcast=False):
    return cg.sem.cast(input, as_dtype(dtype), bitcast=bool(unwrap(bitcast)))


@impl("item")
def item(cg, input):
    """`x.item()`: the one element of a tile with a single element, as a scalar (Triton's unsplat)."""
    from .reductions import unsplat

    x = cg.sem.to_tensor(input)
    if x.numel != 1:
        raise TileTypeError(
            f"x.item() needs a tile with one element, got shape {shape_str(x.shape)}",
            hint="reduce it first, e.g. tl.sum(x) or tl.max(x)",
        )
    return unsplat(cg, x)


@impl("logical_and")
def logical_and(cg, input, other):
    """`x.logical_and(y)`: elementwise `and` of the two (each nonzero is true), an int1 tile."""
    return cg.sem.logical("and", input, other)


@impl("logical_or")
def logical_or(cg, input, other):
    return cg.sem.logical("or", input, other)


@impl("map_elementwise")
def map_elementwise(cg, scalar_fn, *args, pack=1):
    """`tl.map_elementwise(fn, *tiles, pack=1)`: the @jit function `fn`, written for scalars (with
    `if`s on them), applied element by element; with `pack` > 1 it takes and returns `pack`
    neighbouring elements of each tile at once."""
    fn = unwrap(scalar_fn)
    fn = getattr(fn, "fn", fn)
    pack = constexpr_int(pack, "pack")
    tiles = [cg.sem.to_tensor(unwrap(a)) for a in args]
    shape = ()
    for t in tiles:
        shape = cg.sem.broadcast_shape(shape, t.shape)
    tiles = [cg.sem.broadcast_to(t, shape) for t in tiles]
    if pack < 1 or pack & (pack - 1) or (pack > 1 and (not shape or shape[-1] % pack)):
        raise TileTypeError(
            f"tl.map_elementwise: pack={pack} must be a power of two dividing the last "
            f"dimension {shape_str(shape)}"
        )
    parts = [piece for t in tiles for piece in _unpack(cg, t, pack)]
    result = cg.inline(fn, parts, {}, None, elementwise=True)
    results = list(result) if isinstance(result, tuple) else [result]
    part_shape = shape[:-1] + (shape[-1] // pack,) if pack > 1 else shape
    results = [cg.sem.broadcast_to(cg.sem.to_tensor(unwrap(r)), part_shape) for r in results]
    if len(results) % pack:
        raise TileTypeError(
            f"tl.map_elementwise: {fn.__name__} returned {len(results)} values, not a "
            f"multiple of pack={pack}"
        )
    outs = [_pack(cg, results[i : i + pack]) for i in range(0, len(results), pack)]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _unpack(cg, x: tensor, pack: int) -> list[tensor]:
    """[x[..., 0::pack], x[..., 1::pack], ...] by halving splits of the last dimension."""
    if pack == 1:
        return [x]
    even, odd = BUILTIN_IMPLS["split"](cg, cg.sem.reshape(x, x.shape[:-1] + (x.shape[-1] // 2, 2)))
    evens, odds = _unpack(cg, even, pack // 2), _unpack(cg, odd, pack // 2)
    return [p for pair in zip(evens, odds) for p in pair]


def _pack(cg, parts: list[tensor]) -> tensor:
    """The inverse of _unpack: parts[j] holds elements j, j + pack, ... of the result."""
    if len(parts) == 1:
        return parts[0]
    even, odd = _pack(cg, parts[0::2]), _pack(cg, parts[1::2])
    return BUILTIN_IMPLS["interleave"](cg, even, odd)


@impl("condition")
def condition(cg, arg1, disable_licm=False):
    """`while tl.condition(c, disable_licm=True)`: the condition itself; the hint goes to the loop."""
    cg.while_disable_licm = bool(unwrap(disable_licm))
    return arg1


@impl("to_tensor")
def to_tensor(cg, x):
    return cg.sem.to_tensor(x)


@impl("where")
def where(cg, condition, x, y):
    return cg.sem.where(condition, x, y)


# -- memory ------------------------------------------------------------------------------------------------


@impl("load")
def load(
    cg,
    pointer,
    mask=None,
    other=None,
    boundary_check=(),
    padding_option="",
    cache_modifier="",
    eviction_policy="",
    volatile=False,
):
    if isinstance(unwrap(pointer), block_pointer):
        from .descriptors import block_load

        return block_load(cg, unwrap(pointer), boundary_check, padding_option)
    if unwrap(boundary_check):
        raise TileTypeError(
            "boundary_check applies to block pointers (tl.make_block_ptr) only",
            hint="pass a mask with a tile of pointers",
        )
    return cg.sem.load(
        pointer,
        unwrap(mask),
        unwrap(other),
        unwrap(cache_modifier),
        unwrap(eviction_policy),
        unwrap(volatile),
    )


@impl("store")
def store(cg, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    if isinstance(unwrap(pointer), block_pointer):
        from .descriptors import block_store

        return block_store(cg, unwrap(pointer), value, boundary_check)
    if unwrap(boundary_check):
        raise TileTypeError(
            "boundary_check applies to block pointers (tl.make_block_ptr) only",
            hint="pass a mask with a tile of pointers",
        )
    cg.sem.store(pointer, value, unwrap(mask), unwrap(cache_modifier), unwrap(eviction_policy))


_SEMS = ("acq_rel", "acquire", "release", "relaxed")
_SCOPES = ("gpu", "cta", "sys")


def _atomic_prep(cg, pointer, val, mask, sem, scope, what):
    sem, scope = unwrap(sem) or "acq_rel", unwrap(scope) or "gpu"
    if sem not in _SEMS:
        raise TileTypeError(f"{what}: sem must be one of {_SEMS}, got {sem!r}")
    if scope not in _SCOPES:
        raise TileTypeError(f"{what}: scope must be one of {_SCOPES}, got {scope!r}")
    pointer = cg.sem.to_tensor(pointer)
    if not pointer.dtype.is_ptr():
        raise TileTypeError(f"{what} needs a pointer, got {pointer.dtype}")
    if pointer.dtype.const:
        raise TileTypeError(
            f"Cannot store to a constant pointer: {what} through a tl.const parameter"
        )
    elem = pointer.dtype.element_ty
    # Triton's rules (and the NVPTX back end has no 8/16-bit integer read-modify-write atomics)
    if what == "atomic_cas" and elem.primitive_bitwidth not in (16, 32, 64):
        raise TileTypeError(
            f"atomic_cas only supports elements with width {{16, 32, 64}}, not {elem}"
        )
    if what != "atomic_cas" and elem.is_int() and elem.int_bitwidth < 32:
        raise TileTypeError(
            f"{what} does not support {elem}", hint="use a 32- or 64-bit integer array"
        )
    val = cg.sem.cast(cg.sem.to_tensor(unwrap(val)), elem)
    shape = cg.sem.broadcast_shape(pointer.shape, val.shape)
    mask = unwrap(mask)
    if mask is not None:
        mask = cg.sem.cast(cg.sem.to_tensor(mask), core.int1)
        shape = cg.sem.broadcast_shape(shape, mask.shape)
        mask = cg.sem.broadcast_to(mask, shape).handle
    pointer, val = cg.sem.broadcast_to(pointer, shape), cg.sem.broadcast_to(val, shape)
    return pointer, val, mask, sem, scope, elem


def _atomic(name: str, int_kind: str | None, uint_kind: str | None, float_kind: str | None):
    def fn(cg, pointer, val, mask=None, sem=None, scope=None):
        pointer, val, mask, sem, scope, elem = _atomic_prep(
            cg, pointer, val, mask, sem, scope, name
        )
        kind = float_kind if elem.is_floating() else int_kind if elem.is_int_signed() else uint_kind
        if kind is None or elem.is_fp8() or (elem.is_floating() and elem.primitive_bitwidth < 16):
            raise TileTypeError(f"tl.{name} does not support {elem}")
        return cg.sem.make(
            tt.AtomicRMWOp,
            val.type,
            kind=kind,
            ptr=pointer.handle,
            val=val.handle,
            mask=mask,
            sem=sem,
            scope=scope,
        )

    impl(name)(fn)


_atomic("atomic_add", "add", "add", "fadd")
_atomic("atomic_max", "max", "umax", "fmax")
_atomic("atomic_min", "min", "umin", "fmin")
_atomic("atomic_and", "and", "and", None)
_atomic("atomic_or", "or", "or", None)
_atomic("atomic_xor", "xor", "xor", None)
_atomic("atomic_xchg", "xchg", "xchg", "xchg")


@impl("atomic_cas")
def atomic_cas(cg, pointer, cmp, val, sem=None, scope=None):
    pointer, val, _, sem, scope, elem = _atomic_prep(
        cg, pointer, val, None, sem, scope, "atomic_cas"
    )
    cmp = cg.sem.broadcast_to(cg.sem.cast(cg.sem.to_tensor(unwrap(cmp)), elem), val.shape)
    return cg.sem.make(
        tt.AtomicCASOp,
        val.type,
        ptr=pointer.handle,
        cmp=cmp.handle,
        val=val.handle,
        sem=sem,
        scope=scope,
    )


# -- debugging, hints and inline asm ---------------------------------------------------------------------


@impl("static_assert")
def static_assert(cg, cond, msg=""):
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        raise TileTypeError(
            "tl.static_assert needs a compile-time condition", hint="use tl.device_assert"
        )
    if not cond:
        raise CompileTimeAssertionFailure(f"static_assert failed: {unwrap(msg)}")


@impl("static_print")
def static_print(cg, *values, sep=" ", end="\n", file=None, flush=False):
    print(
        *[repr(v) if isinstance(v, tensor) else unwrap(v) for v in values],
        sep=sep,
        end=end,
        flush=True,
    )


@impl("device_print")
def device_print(cg, prefix, *args, hex=False):
    tensors = [cg.sem.to_tensor(unwrap(a)) for a in args]
    cg.builder.create(
        tt.PrintOp,
        args=[t.handle for t in tensors],
        prefix=str(unwrap(prefix)),
        hex=bool(unwrap(hex)),
    )


@impl("device_assert")
def device_assert(cg, cond, msg="", mask=None):
    cond = unwrap(cond)
    if not isinstance(cond, tensor):
        if not cond:
            raise TileTypeError(f"device_assert is always false: {unwrap(msg)}")
        return
    if not cg.debug:
        return  # as Triton: a run-time assert costs nothing unless the kernel is compiled with debug
    cond = cg.sem.cast(cond, core.int1)
    if unwrap(mask) is not None:
        cond = cg.sem.logical(
            "or", cond, cg.sem.not_(cg.sem.cast(cg.sem.to_tensor(unwrap(mask)), core.int1))
        )
    cg.builder.create(tt.AssertOp, condition=cond.handle, message=str(unwrap(msg)))


@impl("debug_barrier")
def debug_barrier(cg):
    cg.builder.create(tt.BarrierOp)


def _hint(field: str):
    def fn(cg, input, values):
        input = cg.sem.to_tensor(input)
        values = unwrap(values)
        values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        values = tuple(constexpr_int(v, f"{field} value") for v in values)
        rank = max(1, len(input.shape))
        if len(values) != rank:
            raise TileTypeError(
                f"expected {rank} hint value(s) for a tile of rank {rank}, got {len(values)}"
            )
        hinted = cg.sem.make(tt.HintOp, input.type, src=input.handle, **{field: values})
        if _defined_in(input.handle, cg.builder.block):
            # Triton marks the value itself, so `tl.multiple_of(x, 16)` as a statement hints every
            # later use of x (test_core's test_vectorization_hints). Here every name bound to this
            # tensor takes the hinted value from now on; only where x is defined in this block, so
            # no branch or loop sees a value defined inside another one.
            input.handle = hinted.handle
            return input
        return hinted

    return fn


def _defined_in(value, block) -> bool:
    # an op's result only: a loop's block argument (tutorial 08 hints its carried pointers) is also
    # the tensor the loop's own bookkeeping holds, and re-pointing it broke the loop's layouts
    return isinstance(value, OpResult) and value.op.parent is block


impl("multiple_of")(_hint("divisibility"))
impl("max_contiguous")(_hint("contiguity"))
impl("max_constancy")(_hint("constancy"))


@impl("assume")
def assume(cg, cond):
    cond = unwrap(cond)
    if not isinstance(cond, tensor):
        return
    cg.builder.create(tt.AssumeOp, condition=cg.sem.cast(cond, core.int1).handle)


@impl("inline_asm_elementwise")
def inline_asm_elementwise(cg, asm, constraints, args, dtype, is_pure, pack):
    tensors = [cg.sem.to_tensor(unwrap(a)) for a in unwrap(args)]
    shape = ()
    for t in tensors:
        shape = cg.sem.broadcast_shape(shape, t.shape)
    tensors = [cg.sem.broadcast_to(t, shape) for t in tensors]
    dtypes = unwrap(dtype)
    many = isinstance(dtypes, (tuple, list))
    outs = [as_dtype(d) for d in (dtypes if many else [dtypes])]
    types = [block_type(d, shape) if shape else d for d in outs]
    op = cg.builder.create(
        tt.ElementwiseInlineAsmOp,
        [t.to_ir() for t in types],
        asm_string=str(unwrap(asm)),
        constraints=str(unwrap(constraints)),
        args=[t.handle for t in tensors],
        pure=bool(unwrap(is_pure)),
        packed_element=int(unwrap(pack)),
    )
    results = tuple(tensor(r, t) for r, t in zip(op.results, types))
    return results if many else results[0]


# -- tl.extra.cuda ----------------------------------------------------------------------------------------
# PTX special-register reads; the interpreter evaluates these exact strings (eval_math.KNOWN_ASM).
GLOBALTIMER_ASM = "mov.u64 $0, %globaltimer;"
SMID_ASM = "mov.u32 $0, %smid;"
# Grid dependence control (sm_90+): no result, but inline asm has one; "$0" sits in a comment.
GDC_WAIT_ASM = "griddepcontrol.wait; // dummy $0"
GDC_LAUNCH_DEPENDENTS_ASM = "griddepcontrol.launch_dependents; // dummy $0"


@impl("globaltimer")
def globaltimer(cg):
    return inline_asm_elementwise(cg, GLOBALTIMER_ASM, "=l", [], core.int64, False, 1)


@impl("smid")
def smid(cg):
    return inline_asm_elementwise(cg, SMID_ASM, "=r", [], core.int32, True, 1)


@impl("gdc_wait")
def gdc_wait(cg):
    inline_asm_elementwise(cg, GDC_WAIT_ASM, "=r", [], core.int32, False, 1)


@impl("gdc_launch_dependents")
def gdc_launch_dependents(cg):
    inline_asm_elementwise(cg, GDC_LAUNCH_DEPENDENTS_ASM, "=r", [], core.int32, False, 1)


@impl("num_warps")
def num_warps(cg):
    return cg.num_warps


@impl("num_threads")
def num_threads(cg):
    return 32 * cg.num_warps


# -- Python builtins inside kernels ----------------------------------------------------------------------


def python_builtin(cg, fn, args, kwargs) -> tuple[bool, Any]:
    """Python builtins: evaluated on compile-time values; `min`/`max` of tensors lower to tl.minimum/maximum,
    `print` to tl.device_print. Returns (handled, result)."""
    values = [unwrap(a) for a in args]
    has_tensor = any(isinstance(v, tensor) for v in values)
    if fn in (py.min, py.max) and has_tensor:
        if len(values) == 1:
            return True, BUILTIN_IMPLS["min" if fn is py.min else "max"](cg, values[0])
        result = values[0]
        for v in values[1:]:
            result = cg.sem.minmax("min" if fn is py.min else "max", result, v)
        return True, result
    if fn is py.print:
        if has_tensor:
            prefix = " ".join(str(v) for v in values if not isinstance(v, tensor))
            device_print(cg, prefix, *[v for v in values if isinstance(v, tensor)])
        else:
            print(*values, flush=True)
        return True, None
    if fn is py.isinstance:
        return True, isinstance(
            values[0], tuple(values[1]) if isinstance(values[1], list) else values[1]
        )
    if fn is py.hasattr and values and isinstance(values[0], tensor):
        from .expressions import TENSOR_ATTRIBUTES, TENSOR_METHODS

        return True, values[1] in TENSOR_ATTRIBUTES or values[1] in TENSOR_METHODS
    if fn is py.len and values and isinstance(values[0], tensor):
        if not values[0].shape:
            raise TileTypeError("len() of a scalar")
        return True, values[0].shape[0]
    if fn is py.abs and has_tensor:
        return True, BUILTIN_IMPLS["abs"](cg, values[0])
    if getattr(fn, "__module__", None) == "builtins" and not has_tensor:
        return True, fn(*values, **{k: unwrap(v) for k, v in kwargs.items()})
    if (
        getattr(fn, "__module__", None) == "builtins"
        and has_tensor
        and fn in (py.int, py.float, py.bool)
    ):
        raise TileTypeError(
            f"{fn.__name__}() of a runtime value", hint="use .to(tl.int32) / .to(tl.float32)"
        )
    return False, None
