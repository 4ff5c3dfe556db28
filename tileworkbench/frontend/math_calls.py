"""Math builtins: transcendental and rounding functions, fma, min/max/clamp, the division forms,
umulhi, libdevice calls and extern_elementwise, registered by name like every builtin (see calls.py)."""

from __future__ import annotations

from ..errors import TileTypeError
from ..ir import arith, math, tt
from ..language import core
from ..language.core import block_type, tensor
from ..language.extra.libdevice import FUNCTIONS as LIBDEVICE_FUNCTIONS
from ..language.extra.libdevice import PREDICATES as LIBDEVICE_PREDICATES
from .calls import impl
from .semantics import is_number, unwrap


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
