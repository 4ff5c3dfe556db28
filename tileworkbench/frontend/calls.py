"""The meaning of each `tl` builtin: typing checks and the Tile IR it builds, registered by name.

Every implementation takes the code generator first (`cg`: its `sem` builds typed ops, its `call` calls
user combine functions) and then the builtin's own arguments, exactly as `language/builtins.py` declares.
"""

from __future__ import annotations

import builtins as py
import inspect
from typing import Any, Callable

from ..errors import TileTypeError
from ..ir import arith, math, tt
from ..language import core
from ..language.core import block_type, dtype, tensor
from ..language.descriptor import block_pointer
from ..language.extra.libdevice import FUNCTIONS as LIBDEVICE_FUNCTIONS
from ..language.extra.libdevice import PREDICATES as LIBDEVICE_PREDICATES
from .semantics import is_number, shape_str, unwrap

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
        raise TileTypeError(f"{what} must be a tl.constexpr, but it is only known at run time",
                            hint="annotate the kernel parameter with `: tl.constexpr`")
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
            raise TileTypeError(f"{what} {shape_str(dims)} has a dimension that is not a power of two",
                                hint="round the block size up with triton.next_power_of_2 and mask the tail")
        numel *= d
    if numel > MAX_TILE_NUMEL:
        raise TileTypeError(f"{what} {shape_str(dims)} has {numel} elements, more than the "
                            f"{MAX_TILE_NUMEL} a tile may hold")
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
        raise TileTypeError(f"program_id axis must be 0, 1 or 2, got {axis}")
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
        raise TileTypeError(f"arange's range must be a power of 2, got {size} (from {start} to {end})",
                            hint="use the next power of two (triton.next_power_of_2) and mask the tail")
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


@impl("to_tensor")
def to_tensor(cg, x):
    return cg.sem.to_tensor(x)


@impl("where")
def where(cg, condition, x, y):
    return cg.sem.where(condition, x, y)


# -- memory ------------------------------------------------------------------------------------------------


@impl("load")
def load(cg, pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    if isinstance(unwrap(pointer), block_pointer):
        from .descriptors import block_load

        return block_load(cg, unwrap(pointer), boundary_check, padding_option)
    if unwrap(boundary_check):
        raise TileTypeError("boundary_check applies to block pointers (tl.make_block_ptr) only",
                            hint="pass a mask with a tile of pointers")
    return cg.sem.load(pointer, unwrap(mask), unwrap(other), unwrap(cache_modifier),
                       unwrap(eviction_policy), unwrap(volatile))


@impl("store")
def store(cg, pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    if isinstance(unwrap(pointer), block_pointer):
        from .descriptors import block_store

        return block_store(cg, unwrap(pointer), value, boundary_check)
    if unwrap(boundary_check):
        raise TileTypeError("boundary_check applies to block pointers (tl.make_block_ptr) only",
                            hint="pass a mask with a tile of pointers")
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
    elem = pointer.dtype.element_ty
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
        pointer, val, mask, sem, scope, elem = _atomic_prep(cg, pointer, val, mask, sem, scope, name)
        kind = float_kind if elem.is_floating() else int_kind if elem.is_int_signed() else uint_kind
        if kind is None or elem.is_fp8() or (elem.is_floating() and elem.primitive_bitwidth < 16):
            raise TileTypeError(f"tl.{name} does not support {elem}")
        return cg.sem.make(tt.AtomicRMWOp, val.type, kind=kind, ptr=pointer.handle, val=val.handle,
                           mask=mask, sem=sem, scope=scope)

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
    pointer, val, _, sem, scope, elem = _atomic_prep(cg, pointer, val, None, sem, scope, "atomic_cas")
    cmp = cg.sem.broadcast_to(cg.sem.cast(cg.sem.to_tensor(unwrap(cmp)), elem), val.shape)
    return cg.sem.make(tt.AtomicCASOp, val.type, ptr=pointer.handle, cmp=cmp.handle, val=val.handle,
                       sem=sem, scope=scope)


# -- shapes ------------------------------------------------------------------------------------------------


@impl("broadcast")
def broadcast(cg, input, other):
    return cg.sem.broadcast_pair(cg.sem.to_tensor(input), cg.sem.to_tensor(other))


@impl("broadcast_to")
def broadcast_to(cg, input, *shape):
    return cg.sem.broadcast_to(cg.sem.to_tensor(input), dims_arg(shape))


@impl("expand_dims")
def expand_dims(cg, input, axis):
    input = cg.sem.to_tensor(input)
    axes = unwrap(axis)
    axes = [axes] if not isinstance(axes, (tuple, list)) else list(axes)
    rank = len(input.shape) + len(axes)
    for a in sorted(constexpr_int(a, "axis") % rank for a in axes):
        input = cg.sem.expand_dims(input, a)
    return input


@impl("unsqueeze")
def unsqueeze(cg, input, dim):
    return cg.sem.expand_dims(cg.sem.to_tensor(input), constexpr_int(dim, "dim"))


@impl("squeeze")
def squeeze(cg, input, dim):
    input = cg.sem.to_tensor(input)
    dim = normalize_axis(dim, len(input.shape))
    if input.shape[dim] != 1:
        raise TileTypeError(f"cannot squeeze dimension {dim} of size {input.shape[dim]}")
    return cg.sem.reshape(input, input.shape[:dim] + input.shape[dim + 1:])


@impl("reshape")
def reshape(cg, input, *shape, can_reorder=False):
    return cg.sem.reshape(cg.sem.to_tensor(input), check_shape(dims_arg(shape)), bool(unwrap(can_reorder)))


@impl("view")
def view(cg, input, *shape):
    return cg.sem.reshape(cg.sem.to_tensor(input), check_shape(dims_arg(shape)), True)


@impl("ravel")
def ravel(cg, x, can_reorder=False):
    x = cg.sem.to_tensor(x)
    return cg.sem.reshape(x, (x.numel,), bool(unwrap(can_reorder)))


@impl("permute")
def permute(cg, input, *dims):
    input = cg.sem.to_tensor(input)
    order = dims_arg(dims)
    if sorted(order) != list(range(len(input.shape))):
        raise TileTypeError(f"permute order {order} is not a permutation of the {len(input.shape)} dims")
    if order == tuple(range(len(order))):
        return input
    shape = tuple(input.shape[d] for d in order)
    return cg.sem.make(tt.TransOp, block_type(input.dtype, shape), src=input.handle, order=order)


@impl("trans")
def trans(cg, input, *dims):
    input = cg.sem.to_tensor(input)
    order = dims_arg(dims) if dims else tuple(reversed(range(len(input.shape))))
    return permute(cg, input, *order)


@impl("join")
def join(cg, a, b):
    a, b = cg.sem.broadcast_pair(cg.sem.to_tensor(a), cg.sem.to_tensor(b))
    if a.dtype != b.dtype:
        raise TileTypeError(f"tl.join needs equal dtypes, got {a.dtype} and {b.dtype}")
    return cg.sem.make(tt.JoinOp, block_type(a.dtype, a.shape + (2,)), lhs=a.handle, rhs=b.handle)


@impl("split")
def split(cg, a):
    a = cg.sem.to_tensor(a)
    if not a.shape or a.shape[-1] != 2:
        raise TileTypeError(f"tl.split needs a last dimension of size 2, got shape {shape_str(a.shape)}")
    shape = a.shape[:-1]
    out = block_type(a.dtype, shape) if shape else a.dtype
    op = cg.builder.create(tt.SplitOp, [out.to_ir(), out.to_ir()], src=a.handle)
    return tensor(op.results[0], out), tensor(op.results[1], out)


@impl("interleave")
def interleave(cg, a, b):
    joined = join(cg, a, b)
    return cg.sem.reshape(joined, joined.shape[:-2] + (joined.shape[-2] * 2,))


@impl("cat")
def cat(cg, input, other, can_reorder=False):
    a, b = cg.sem.to_tensor(input), cg.sem.to_tensor(other)
    if a.type != b.type:
        raise TileTypeError(f"tl.cat needs tiles of one type, got {a.type!r} and {b.type!r}")
    shape = (a.shape[0] * 2,) + a.shape[1:]
    return cg.sem.make(tt.CatOp, block_type(a.dtype, shape), lhs=a.handle, rhs=b.handle)


@impl("gather")
def gather(cg, src, index, axis):
    src, index = cg.sem.to_tensor(src), cg.sem.to_tensor(index)
    axis = normalize_axis(axis, len(src.shape))
    if len(index.shape) != len(src.shape) or not index.dtype.is_int():
        raise TileTypeError("tl.gather's index must be an integer tile of the same rank as src")
    return cg.sem.make(tt.GatherOp, block_type(src.dtype, index.shape), src=src.handle,
                       indices=index.handle, axis=axis)


@impl("flip")
def flip(cg, x, dim=None):
    x = cg.sem.to_tensor(x)
    dim = len(x.shape) - 1 if unwrap(dim) is None else normalize_axis(dim, len(x.shape))
    n = x.shape[dim]
    rev = cg.sem.sub(n - 1, arange(cg, 0, n))
    for _ in range(dim):
        rev = cg.sem.expand_dims(rev, 0)
    for _ in range(len(x.shape) - dim - 1):
        rev = cg.sem.expand_dims(rev, len(rev.shape))
    return gather(cg, x, cg.sem.broadcast_to(rev, x.shape), dim)


def _last_dim(x: tensor, dim, what: str) -> int:
    if not x.shape:
        raise TileTypeError(f"tl.{what} needs a tile")
    dim = len(x.shape) - 1 if unwrap(dim) is None else normalize_axis(dim, len(x.shape))
    if dim != len(x.shape) - 1:
        raise TileTypeError(f"tl.{what} only supports the last dimension (as Triton)")
    return dim


@impl("sort")
def sort(cg, x, dim=None, descending=False):
    x = cg.sem.to_tensor(x)
    dim = _last_dim(x, dim, "sort")
    return cg.sem.make(tt.SortOp, x.type, src=x.handle, axis=dim, descending=bool(unwrap(descending)))


@impl("topk")
def topk(cg, x, k, dim=None):
    x = cg.sem.to_tensor(x)
    _last_dim(x, dim, "topk")
    k = constexpr_int(k, "topk's k")
    check_shape((k,), "topk's k")
    if k > x.shape[-1]:
        raise TileTypeError(f"topk's k={k} is larger than the last dimension {x.shape[-1]}")
    return cg.sem.make(tt.TopKOp, block_type(x.dtype, x.shape[:-1] + (k,)), src=x.handle, largest=True)


@impl("histogram")
def histogram(cg, input, num_bins, mask=None):
    input = cg.sem.to_tensor(input)
    num_bins = constexpr_int(num_bins, "histogram's num_bins")
    check_shape((num_bins,), "histogram's num_bins")
    if len(input.shape) != 1 or not input.dtype.is_int():
        raise TileTypeError("tl.histogram needs a 1-D integer tile")
    if unwrap(mask) is not None:
        input = cg.sem.where(mask, input, cg.sem.constant(-1, input.dtype, input.shape))
    return cg.sem.make(tt.HistogramOp, block_type(core.int32, (num_bins,)), src=input.handle)


# -- math ------------------------------------------------------------------------------------------------


def _float_input(cg, x, what: str) -> tensor:
    x = cg.sem.to_tensor(x)
    if not x.dtype.is_floating():
        raise TileTypeError(f"tl.{what} needs a floating-point input, got {x.dtype}",
                            hint="convert first with .to(tl.float32)")
    return x


def _unary_math(name: str, cls):
    def fn(cg, x):
        x = _float_input(cg, x, name)
        return cg.sem.make(cls, x.type, operand=x.handle)

    impl(name)(fn)


for _name, _cls in (("exp", math.ExpOp), ("exp2", math.Exp2Op), ("log", math.LogOp),
                    ("log2", math.Log2Op), ("sqrt", math.SqrtOp), ("sqrt_rn", tt.PreciseSqrtOp),
                    ("rsqrt", math.RsqrtOp), ("sin", math.SinOp), ("cos", math.CosOp),
                    ("floor", math.FloorOp), ("ceil", math.CeilOp), ("erf", math.ErfOp)):
    _unary_math(_name, _cls)


@impl("abs")
def abs_(cg, x):
    x = cg.sem.to_tensor(x)
    if x.dtype.is_floating():
        return cg.sem.make(math.AbsFOp, x.type, operand=x.handle)
    if x.dtype.is_int_unsigned():
        return x
    return cg.sem.make(math.AbsIOp, x.type, operand=x.handle)


def _float_operands(cg, values, what: str) -> list[tensor]:
    from .promotion import computation_type

    tensors = [cg.sem.to_tensor(unwrap(v)) for v in values]
    common, common_scalar = tensors[0].dtype, is_number(unwrap(values[0]))
    for v, t in zip(values[1:], tensors[1:]):
        common = computation_type(common, common_scalar, t.dtype, is_number(unwrap(v)), False)
        common_scalar = common_scalar and is_number(unwrap(v))
    if not common.is_floating():
        raise TileTypeError(f"tl.{what} needs floating-point inputs, got {common}")
    tensors = [cg.sem.cast(t, common) for t in tensors]
    shape = ()
    for t in tensors:
        shape = cg.sem.broadcast_shape(shape, t.shape)
    return [cg.sem.broadcast_to(t, shape) for t in tensors]


@impl("fma")
def fma(cg, x, y, z):
    x, y, z = _float_operands(cg, [x, y, z], "fma")
    return cg.sem.make(math.FmaOp, x.type, a=x.handle, b=y.handle, c=z.handle)


@impl("maximum")
def maximum(cg, x, y, propagate_nan=0):
    return cg.sem.minmax("max", x, y, unwrap(propagate_nan))


@impl("minimum")
def minimum(cg, x, y, propagate_nan=0):
    return cg.sem.minmax("min", x, y, unwrap(propagate_nan))


@impl("clamp")
def clamp(cg, x, min, max, propagate_nan=0):
    xt = cg.sem.to_tensor(unwrap(x))
    if xt.dtype.is_floating():
        x, lo, hi = _float_operands(cg, [x, min, max], "clamp")
        return cg.sem.make(tt.ClampFOp, x.type, x=x.handle, lo=lo.handle, hi=hi.handle,
                           propagate_nan=bool(unwrap(propagate_nan)))
    return cg.sem.minmax("min", cg.sem.minmax("max", x, min), max)


@impl("fdiv")
def fdiv(cg, x, y, ieee_rounding=False):
    x, y = _float_operands(cg, [x, y], "fdiv")
    if unwrap(ieee_rounding):
        return cg.sem.make(tt.PreciseDivFOp, x.type, lhs=x.handle, rhs=y.handle)
    return cg.sem.make(arith.DivFOp, x.type, lhs=x.handle, rhs=y.handle)


@impl("div_rn")
def div_rn(cg, x, y):
    x, y = _float_operands(cg, [x, y], "div_rn")
    return cg.sem.make(tt.PreciseDivFOp, x.type, lhs=x.handle, rhs=y.handle)


@impl("umulhi")
def umulhi(cg, x, y):
    x, y, common = cg.sem._operands(x, y)
    if not common.is_int() or common.int_bitwidth not in (32, 64):
        raise TileTypeError(f"tl.umulhi needs 32- or 64-bit integers, got {common}")
    return cg.sem.make(tt.MulhiUIOp, x.type, lhs=x.handle, rhs=y.handle)


def _libdevice(name: str):
    def fn(cg, *args):
        if len(args) != LIBDEVICE_FUNCTIONS[name]:
            raise TileTypeError(f"libdevice.{name} takes {LIBDEVICE_FUNCTIONS[name]} argument(s)")
        values = _float_operands(cg, list(args), f"extra.libdevice.{name}")
        original = values[0].dtype
        compute = original if original in (core.float32, core.float64) else core.float32
        values = [cg.sem.cast(v, compute) for v in values]
        base = "fabs" if name == "abs" else name
        if name in ("finitef", "isfinited"):
            base = "finitef" if compute == core.float32 else "isfinited"
            symbol = f"__nv_{base}"
        elif name == "div_rn":
            symbol = "__nv_fdiv_rn" if compute == core.float32 else "__nv_ddiv_rn"
        elif name in ("isnan", "isinf", "signbit"):
            symbol = f"__nv_{name}{'f' if compute == core.float32 else 'd'}"
        elif name.startswith("fast_"):
            if compute != core.float32:
                raise TileTypeError(f"libdevice.{name} is fp32 only")
            symbol = f"__nv_{name}"
        else:
            symbol = f"__nv_{base}{'f' if compute == core.float32 else ''}"
        out_dt = core.int1 if name in LIBDEVICE_PREDICATES else compute
        out = block_type(out_dt, values[0].shape) if values[0].shape else out_dt
        result = cg.sem.make(tt.ExternElementwiseOp, out, symbol=symbol, args=[v.handle for v in values])
        return result if out_dt == core.int1 or compute == original else cg.sem.cast(result, original)

    impl(f"libdevice.{name}")(fn)


for _name in LIBDEVICE_FUNCTIONS:
    _libdevice(_name)


@impl("extern_elementwise")
def extern_elementwise(cg, lib_name, lib_path, args, arg_type_symbol_dict, is_pure):
    tensors = [cg.sem.to_tensor(unwrap(a)) for a in unwrap(args)]
    key = tuple(t.dtype for t in tensors)
    table = unwrap(arg_type_symbol_dict)
    if key not in table:
        raise TileTypeError(f"no extern function for argument types {key}; known: {list(table)}")
    symbol, ret = table[key]
    shape = ()
    for t in tensors:
        shape = cg.sem.broadcast_shape(shape, t.shape)
    tensors = [cg.sem.broadcast_to(t, shape) for t in tensors]
    out = block_type(ret, shape) if shape else ret
    return cg.sem.make(tt.ExternElementwiseOp, out, symbol=symbol, args=[t.handle for t in tensors],
                       pure=bool(unwrap(is_pure)))


# -- debugging, hints and inline asm ---------------------------------------------------------------------


@impl("static_assert")
def static_assert(cg, cond, msg=""):
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        raise TileTypeError("tl.static_assert needs a compile-time condition", hint="use tl.device_assert")
    if not cond:
        raise TileTypeError(f"static_assert failed: {unwrap(msg)}")


@impl("static_print")
def static_print(cg, *values, sep=" ", end="\n", file=None, flush=False):
    print(*[repr(v) if isinstance(v, tensor) else unwrap(v) for v in values], sep=sep, end=end, flush=True)


@impl("device_print")
def device_print(cg, prefix, *args, hex=False):
    tensors = [cg.sem.to_tensor(unwrap(a)) for a in args]
    cg.builder.create(tt.PrintOp, args=[t.handle for t in tensors], prefix=str(unwrap(prefix)),
                      hex=bool(unwrap(hex)))


@impl("device_assert")
def device_assert(cg, cond, msg="", mask=None):
    cond = unwrap(cond)
    if not isinstance(cond, tensor):
        if not cond:
            raise TileTypeError(f"device_assert is always false: {unwrap(msg)}")
        return
    cond = cg.sem.cast(cond, core.int1)
    if unwrap(mask) is not None:
        cond = cg.sem.logical("or", cond, cg.sem.not_(cg.sem.cast(cg.sem.to_tensor(unwrap(mask)), core.int1)))
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
            raise TileTypeError(f"expected {rank} hint value(s) for a tile of rank {rank}, got {len(values)}")
        return cg.sem.make(tt.HintOp, input.type, src=input.handle, **{field: values})

    return fn


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
    op = cg.builder.create(tt.ElementwiseInlineAsmOp, [t.to_ir() for t in types], asm_string=str(unwrap(asm)),
                           constraints=str(unwrap(constraints)), args=[t.handle for t in tensors],
                           pure=bool(unwrap(is_pure)), packed_element=int(unwrap(pack)))
    results = tuple(tensor(r, t) for r, t in zip(op.results, types))
    return results if many else results[0]


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
        return True, isinstance(values[0], tuple(values[1]) if isinstance(values[1], list) else values[1])
    if fn is py.len and values and isinstance(values[0], tensor):
        if not values[0].shape:
            raise TileTypeError("len() of a scalar")
        return True, values[0].shape[0]
    if fn is py.abs and has_tensor:
        return True, abs_(cg, values[0])
    if getattr(fn, "__module__", None) == "builtins" and not has_tensor:
        return True, fn(*values, **{k: unwrap(v) for k, v in kwargs.items()})
    if getattr(fn, "__module__", None) == "builtins" and has_tensor and fn in (py.int, py.float, py.bool):
        raise TileTypeError(f"{fn.__name__}() of a runtime value", hint="use .to(tl.int32) / .to(tl.float32)")
    return False, None


