"""libdevice on the host: `__nv_<name>` calls become LLVM intrinsics where LLVM has the operation, a
few lines of IR for libdevice's predicates and integer helpers, and the C library's `<name>`
otherwise (same semantics: libdevice follows C99's math library). The `fast_` variants take the
exact path (within their error bound). What has none of these (erfinv, sinpi, mulhi, the
`_rz`/`_ru`/`_rd` rounded arithmetic, ...) calls back into the NumPy version the interpreter runs
too, lane by lane (host_calls.py)."""

from __future__ import annotations

from llvmlite import ir

from ...dtypes import BY_LLVM_FLOAT
from . import codegen

_INTRINSICS = {
    "fabs": "llvm.fabs",
    "sqrt": "llvm.sqrt",
    "floor": "llvm.floor",
    "ceil": "llvm.ceil",
    "trunc": "llvm.trunc",
    "rint": "llvm.rint",
    "nearbyint": "llvm.nearbyint",
    "round": "llvm.round",
    "fma": "llvm.fma",
    "fsqrt_rn": "llvm.sqrt",
    "dsqrt_rn": "llvm.sqrt",
    "fmin": "llvm.minnum",
    "fmax": "llvm.maxnum",
    "copysign": "llvm.copysign",
    "popc": "llvm.ctpop",
    "popcll": "llvm.ctpop",
    "brev": "llvm.bitreverse",
    "brevll": "llvm.bitreverse",
}
# LLVM float type -> the suffix of an overloaded intrinsic on it (`llvm.fabs.f32`): the IR's name
_FLOAT_SUFFIX = {name: row.ir for name, row in BY_LLVM_FLOAT.items()}


def _float_name(name: str, t: ir.Type) -> str:
    """libdevice's float variants end in `f` (`expf`), the double ones do not (`exp`)."""
    if isinstance(t, ir.FloatType) and name.endswith("f") and name[:-1] in _INTRINSICS:
        return name[:-1]
    return name


def _intrinsic(lw, name: str, ret, args):
    t = args[0].type
    suffix = _FLOAT_SUFFIX.get(str(t), f"i{getattr(t, 'width', 0)}")
    return lw.call_intrinsic(f"{_INTRINSICS[name]}.{suffix}", t, args)


def _as_ret(b, flag: ir.Value, ret: ir.Type) -> ir.Value:
    return b.zext(flag, ret) if isinstance(ret, ir.IntType) and ret.width > 1 else flag


def _predicate(lw, name: str, x, ret):
    b = lw.builder
    base = name[:-1]  # isnanf/isnand, isinff/isinfd, finitef, isfinited, signbitf/signbitd
    if base == "isnan":
        return _as_ret(b, b.fcmp_unordered("uno", x, x), ret)
    magnitude = lw.call_intrinsic(f"llvm.fabs.{_FLOAT_SUFFIX[str(x.type)]}", x.type, [x])
    infinity = ir.Constant(x.type, float("inf"))
    if base == "isinf":
        return _as_ret(b, b.fcmp_ordered("==", magnitude, infinity), ret)
    if base in ("finite", "isfinite"):
        return _as_ret(b, b.fcmp_ordered("<", magnitude, infinity), ret)
    width = 32 if isinstance(x.type, ir.FloatType) else 64
    sign = b.lshr(b.bitcast(x, ir.IntType(width)), ir.Constant(ir.IntType(width), width - 1))
    return b.zext(b.trunc(sign, ir.IntType(1)), ret) if isinstance(ret, ir.IntType) else sign


_PREDICATES = {
    "isnanf",
    "isnand",
    "isinff",
    "isinfd",
    "finitef",
    "isfinited",
    "signbitf",
    "signbitd",
}


def call(lw, symbol: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
    """The host value of libdevice's `symbol` on `args`."""
    b = lw.builder
    name = symbol.removeprefix("__nv_").removeprefix("fast_")
    if name in _PREDICATES:
        return _predicate(lw, name, args[0], ret)
    if name in ("fdiv_rn", "ddiv_rn", "div_rn"):
        return b.fdiv(args[0], args[1])
    if name in ("frcp_rn", "drcp_rn"):
        return b.fdiv(ir.Constant(args[0].type, 1.0), args[0])
    if name in ("rsqrtf", "rsqrt"):
        root = _intrinsic(lw, "sqrt", ret, args)
        return b.fdiv(ir.Constant(ret, 1.0), root)
    if name in ("saturatef",):
        low = lw.call_intrinsic("llvm.maxnum.f32", ret, [args[0], ir.Constant(ret, 0.0)])
        return lw.call_intrinsic("llvm.minnum.f32", ret, [low, ir.Constant(ret, 1.0)])
    if name in ("clz", "clzll"):
        t = args[0].type
        return lw.call_intrinsic(
            f"llvm.ctlz.i{t.width}", t, [args[0], ir.Constant(ir.IntType(1), 0)]
        )
    if name in ("abs", "llabs"):
        negative = b.icmp_signed("<", args[0], ir.Constant(args[0].type, 0))
        return b.select(negative, b.neg(args[0]), args[0])
    directed = name.endswith(("_rz", "_ru", "_rd"))
    name = _float_name(name, args[0].type)
    if name in _INTRINSICS and not directed:
        return _intrinsic(lw, name, ret, args)
    c_name = symbol.removeprefix("__nv_").removeprefix("fast_")
    if not directed and codegen.binding().address_of_symbol(c_name):
        return lw.call_intrinsic(c_name, ret, args)  # the C library's
    host = _host_call(lw, symbol)
    if host is not None:
        return lw.call_intrinsic(host, ret, args)
    if directed:
        raise lw.error(
            lw.current_op,
            f"`{symbol}` rounds toward a direction the cpu target cannot "
            "select; use the `_rn` variant",
        )
    return lw.call_intrinsic(c_name, ret, args)  # refused by name when the module is checked


def _host_call(lw, symbol: str) -> str | None:
    """The interpreter's implementation as a host callback (host_calls.py), where it has one."""
    from ...ir.types import element_type
    from . import host_calls

    op = lw.current_op
    if op is None or not hasattr(op, "symbol"):
        return None
    types = [getattr(element_type(v.type), "name", "") for v in [op.result, *op.operands]]
    return host_calls.symbol_for(symbol, types[0], types[1:])
