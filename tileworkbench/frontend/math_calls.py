"""Math builtins: transcendental and rounding functions, fma, min/max/clamp, the division forms,
umulhi, libdevice calls and extern_elementwise, registered by name like every builtin (see calls.py)."""

from __future__ import annotations

from typing import Any

from ..errors import TileTypeError
from ..ir import arith, math, tt
from ..language import core
from ..language.core import block_type, tensor
from ..language.extra.libdevice import FUNCTIONS as LIBDEVICE_FUNCTIONS
from ..language.extra.libdevice import SIGNATURES as LIBDEVICE_SIGNATURES
from .calls import impl
from .promotion import computation_type
from .semantics import is_number, unwrap


# -- math ------------------------------------------------------------------------------------------------


def _float_input(cg, x, what: str) -> tensor:
    x = cg.sem.to_tensor(x)
    if not x.dtype.is_floating():
        raise TileTypeError(
            f"tl.{what} needs a floating-point input, got {x.dtype}",
            hint="convert first with .to(tl.float32)",
        )
    return x


def _unary_math(name: str, cls):
    def fn(cg, x):
        x = _float_input(cg, x, name)
        return cg.sem.make(cls, x.type, operand=x.handle)

    impl(name)(fn)


for _name, _cls in (
    ("exp", math.ExpOp),
    ("exp2", math.Exp2Op),
    ("log", math.LogOp),
    ("log2", math.Log2Op),
    ("sqrt", math.SqrtOp),
    ("sqrt_rn", tt.PreciseSqrtOp),
    ("rsqrt", math.RsqrtOp),
    ("sin", math.SinOp),
    ("cos", math.CosOp),
    ("floor", math.FloorOp),
    ("ceil", math.CeilOp),
    ("erf", math.ErfOp),
):
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
        return cg.sem.make(
            tt.ClampFOp,
            x.type,
            x=x.handle,
            lo=lo.handle,
            hi=hi.handle,
            propagate_nan=bool(unwrap(propagate_nan)),
        )
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
        values = [unwrap(a) for a in args]
        tensors = [cg.sem.to_tensor(v) for v in values]
        overload, widened = _pick_overload(name, values, tensors)
        types, symbol, result = overload
        shape = ()
        for t in tensors:
            shape = cg.sem.broadcast_shape(shape, t.shape)
        operands = [
            cg.sem.broadcast_to(cg.sem.cast(t, core.dtype(ty)), shape)
            for t, ty in zip(tensors, types.split(","))
        ]
        out_dt = core.dtype(result)
        out = block_type(out_dt, shape) if shape else out_dt
        value = cg.sem.make(
            tt.ExternElementwiseOp, out, symbol=symbol, args=[t.handle for t in operands]
        )
        # fp16/bf16 arguments were computed in fp32: a float result goes back to their type
        return (
            cg.sem.cast(value, widened) if widened is not None and out_dt.is_floating() else value
        )

    impl(f"libdevice.{name}")(fn)


def _pick_overload(
    name: str, values: list, tensors: list[tensor]
) -> tuple[tuple[str, str, str], Any]:
    """The overload of libdevice `name` that fits the arguments: exact types first, then Python numbers
    and narrow integers converted, fp16/bf16/fp8 computed in fp32, then the arguments' common type (as
    Triton's arithmetic promotion). Returns (overload, the low float type widened to fp32 or None)."""
    overloads = LIBDEVICE_SIGNATURES[name]
    have = [t.dtype for t in tensors]
    for overload in overloads:
        if [core.dtype(ty) for ty in overload[0].split(",")] == have:
            return overload, None
    low = next((d for d in have if d.is_floating() and d.primitive_bitwidth < 32), None)
    for overload in overloads:
        wants = [core.dtype(ty) for ty in overload[0].split(",")]
        if all(_converts(v, d, w) for v, d, w in zip(values, have, wants)):
            return overload, low
    common = have[0]
    for v, d in zip(values[1:], have[1:]):
        common = computation_type(common, False, d, False, False)
    if common.is_floating() and common.primitive_bitwidth < 32:
        common = core.float32
    for overload in overloads:
        if all(core.dtype(ty) == common for ty in overload[0].split(",")):
            return overload, low
    accepted = "; ".join(f"({types})" for types, _, _ in overloads)
    raise TileTypeError(
        f"libdevice.{name} has no version for arguments of type "
        f"({', '.join(str(d) for d in have)}); it takes {accepted}",
        hint="cast the arguments with .to(...)",
    )


def _converts(value, have: core.dtype, want: core.dtype) -> bool:
    """Whether an argument of type `have` may be converted to `want` when picking an overload."""
    if have == want:
        return True
    if is_number(value):  # a Python constant takes the parameter's type (of the same kind)
        return want.is_floating() or (want.is_int() and not isinstance(value, float))
    if have.is_floating():
        return want.is_fp32() and have.primitive_bitwidth < 32
    if (
        have.is_int() and want.is_int()
    ):  # int8/int16/bool widen to the 32-bit type of their signedness
        return (
            have.int_bitwidth < 32
            and want.int_bitwidth == 32
            and (have.is_int_signed() == want.is_int_signed() or have.is_int1())
        )
    return False


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
    return cg.sem.make(
        tt.ExternElementwiseOp,
        out,
        symbol=symbol,
        args=[t.handle for t in tensors],
        pure=bool(unwrap(is_pure)),
    )
