"""Typed operations on language values: conversion of Python numbers, casts, broadcasting, and the
binary/unary operators with Triton's promotion rules. Each builds Tile IR through the builder.

Values are `tl.tensor` (an IR value and its language type); Python numbers are accepted wherever a
tensor is, and follow the scalar promotion rule of promotion.py.
"""

from __future__ import annotations

import numbers

from ..errors import TileTypeError
from ..ir import arith
from ..ir import tt
from ..ir.builder import Builder
from ..language import core
from ..language.core import block_type, dtype, pointer_type, tensor
from .promotion import computation_type, python_scalar_dtype

_FLOAT_PRED = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}
_SINT_PRED = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_UINT_PRED = {"==": "eq", "!=": "ne", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge"}


def is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, complex)


def unwrap(x):
    return x.value if isinstance(x, core.constexpr) else x


def check_scalar_range(value, common: dtype) -> None:
    """A Python int computed in an integer dtype must fit it (Triton's rule): `x_i8 * 200` or
    `x_u32 - (-1)` would otherwise wrap silently."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not common.is_int()
        or common.is_int1()
    ):
        return
    bits = common.int_bitwidth
    low, high = (
        (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if common.is_int_signed()
        else (0, (1 << bits) - 1)
    )
    if not low <= value <= high:
        raise TileTypeError(
            f"the constant {value} is out of range for {common} ({low} to {high}), the dtype "
            "this operation computes in",
            hint="convert the tile first, e.g. x.to(tl.int64), or change the constant",
        )


def shape_str(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Semantics:
    """Builds typed IR for language operations at the builder's current location."""

    def __init__(self, builder: Builder):
        self.builder = builder

    # -- values ---------------------------------------------------------------------------------------
    def make(self, cls, type: dtype, name: str | None = None, **fields) -> tensor:
        return tensor(self.builder.value(cls, type.to_ir(), name, **fields), type)

    def constant(self, value, dt: dtype, shape: tuple[int, ...] = ()) -> tensor:
        """A constant of `dt` (splatted to `shape`); the value is converted as a cast would."""
        if dt.is_floating():
            value = float(value)
        elif dt.is_int1():
            value = bool(value)
        else:
            bits = dt.int_bitwidth
            value = int(value) & ((1 << bits) - 1)
            if dt.is_int_signed() and value >= 1 << (bits - 1):
                value -= 1 << bits
        ty = block_type(dt, shape) if shape else dt
        return self.make(arith.ConstantOp, ty, value=value)

    def to_tensor(self, x) -> tensor:
        x = unwrap(x)
        if isinstance(x, tensor):
            return x
        if is_number(x):
            return self.constant(x, python_scalar_dtype(x))
        raise TileTypeError(f"expected a tensor or a number, got {type(x).__name__} {x!r}")

    def zeros(self, shape, dt: dtype) -> tensor:
        return self.constant(0, dt, tuple(shape))

    # -- shapes -----------------------------------------------------------------------------------------
    def splat(self, x: tensor, shape: tuple[int, ...]) -> tensor:
        return self.make(tt.SplatOp, block_type(x.type.scalar, shape), operand=x.handle)

    def reshape(self, x: tensor, shape: tuple[int, ...], can_reorder: bool = False) -> tensor:
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not x.shape:
            return self.splat(x, shape)
        numel = 1
        for s in shape:
            numel *= s
        if numel != x.numel:
            raise TileTypeError(
                f"cannot reshape a tile of shape {shape_str(x.shape)} to {shape_str(shape)}: "
                f"{x.numel} elements vs {numel}"
            )
        if not shape:
            return self.make(tt.ReshapeOp, x.dtype, src=x.handle)
        return self.make(
            tt.ReshapeOp, block_type(x.dtype, shape), src=x.handle, allow_reorder=can_reorder
        )

    def broadcast_to(self, x: tensor, shape: tuple[int, ...]) -> tensor:
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if not x.shape:
            return self.splat(x, shape)
        if len(x.shape) > len(shape):
            raise TileTypeError(
                f"cannot broadcast shape {shape_str(x.shape)} to {shape_str(shape)}"
            )
        if len(x.shape) < len(shape):
            x = self.reshape(x, (1,) * (len(shape) - len(x.shape)) + x.shape)
        for have, want in zip(x.shape, shape):
            if have != want and have != 1:
                raise TileTypeError(
                    f"cannot broadcast shape {shape_str(x.shape)} to {shape_str(shape)}"
                )
        if x.shape == shape:
            return x
        return self.make(tt.BroadcastOp, block_type(x.dtype, shape), operand=x.handle)

    def broadcast_shape(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        if not a:
            return b
        if not b:
            return a
        rank = max(len(a), len(b))
        pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
        out = []
        for x, y in zip(pa, pb):
            if x != y and 1 not in (x, y):
                raise TileTypeError(
                    f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast",
                    hint="index one side with [:, None] or [None, :], or make the block sizes equal",
                )
            out.append(max(x, y))
        return tuple(out)

    def broadcast_pair(self, a: tensor, b: tensor) -> tuple[tensor, tensor]:
        shape = self.broadcast_shape(a.shape, b.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b, shape)

    def expand_dims(self, x: tensor, axis: int) -> tensor:
        rank = len(x.shape) + 1
        if not -rank <= axis < rank:
            raise TileTypeError(
                f"expand_dims axis {axis} is out of range for a result of rank {rank}"
            )
        axis %= rank
        if not x.shape:
            return self.splat(x, (1,))
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        return self.make(tt.ExpandDimsOp, block_type(x.dtype, shape), src=x.handle, axis=axis)

    # -- casts ------------------------------------------------------------------------------------------
    def with_scalar(self, x: tensor, dt: dtype) -> dtype:
        return block_type(dt, x.shape) if x.shape else dt

    def cast(self, x, dst: dtype, bitcast: bool = False) -> tensor:
        x = self.to_tensor(x)
        dst = unwrap(dst)
        if not isinstance(dst, dtype):
            raise TileTypeError(f"expected a dtype such as tl.float32, got {dst!r}")
        src = x.dtype
        if src == dst:
            return x
        out = self.with_scalar(x, dst)
        if bitcast:
            return self._bitcast(x, src, dst, out)
        if src.is_ptr() or dst.is_ptr():
            return self._pointer_cast(x, src, dst, out)
        if dst.is_int1():
            zero = self.constant(0, src, x.shape)
            return self.compare("!=", x, zero)
        if src.is_floating() and dst.is_floating():
            if src.primitive_bitwidth == dst.primitive_bitwidth or src.is_fp8() and dst.is_fp8():
                return self.cast(self.cast(x, core.float32), dst)
            wider = dst.primitive_bitwidth > src.primitive_bitwidth
            return self.make(arith.ExtFOp if wider else arith.TruncFOp, out, operand=x.handle)
        if src.is_int() and dst.is_int():
            if src.int_bitwidth == dst.int_bitwidth:
                return self.make(arith.BitcastOp, out, operand=x.handle)
            if dst.int_bitwidth < src.int_bitwidth:
                return self.make(arith.TruncIOp, out, operand=x.handle)
            ext = arith.ExtSIOp if src.is_int_signed() else arith.ExtUIOp
            return self.make(ext, out, operand=x.handle)
        if src.is_int() and dst.is_floating():
            op = arith.SIToFPOp if src.is_int_signed() else arith.UIToFPOp
            return self.make(op, out, operand=x.handle)
        if src.is_floating() and dst.is_int():
            op = arith.FPToSIOp if dst.is_int_signed() else arith.FPToUIOp
            return self.make(op, out, operand=x.handle)
        raise TileTypeError(f"cannot cast {src} to {dst}")

    def _bitcast(self, x: tensor, src: dtype, dst: dtype, out: dtype) -> tensor:
        if src.is_ptr() and dst.is_ptr():
            return self.make(tt.PtrBitcastOp, out, operand=x.handle)
        if src.is_ptr() or dst.is_ptr() or src.primitive_bitwidth != dst.primitive_bitwidth:
            raise TileTypeError(
                f"cannot bitcast {src} to {dst}: bit widths differ "
                f"({src.primitive_bitwidth} vs {dst.primitive_bitwidth})"
            )
        return self.make(arith.BitcastOp, out, operand=x.handle)

    def _pointer_cast(self, x: tensor, src: dtype, dst: dtype, out: dtype) -> tensor:
        if src.is_ptr() and dst.is_ptr():
            return self.make(tt.PtrBitcastOp, out, operand=x.handle)
        if src.is_ptr() and dst.is_int() and dst.int_bitwidth == 64:
            return self.make(tt.PtrToIntOp, out, operand=x.handle)
        if src.is_ptr() and dst.is_int1():
            as_int = self.make(tt.PtrToIntOp, self.with_scalar(x, core.int64), operand=x.handle)
            return self.compare("!=", as_int, self.constant(0, core.int64, x.shape))
        if dst.is_ptr() and src.is_int():
            return self.make(tt.IntToPtrOp, out, operand=self.cast(x, core.int64).handle)
        raise TileTypeError(f"cannot cast {src} to {dst}")

    # -- binary operators ---------------------------------------------------------------------------------
    def _operands(self, a, b, div_or_mod: bool = False, allow_ptr: bool = False):
        """Convert, promote and broadcast the operands of a binary operator."""
        a, b = unwrap(a), unwrap(b)
        a_scalar, b_scalar = is_number(a), is_number(b)
        ta, tb = self.to_tensor(a), self.to_tensor(b)
        if ta.dtype.is_ptr() or tb.dtype.is_ptr():
            if not allow_ptr:
                raise TileTypeError(
                    f"this operator is not defined for pointers ({ta.dtype}, {tb.dtype})"
                )
            return (*self.broadcast_pair(ta, tb), None)
        common = computation_type(ta.dtype, a_scalar, tb.dtype, b_scalar, div_or_mod)
        check_scalar_range(a, common)
        check_scalar_range(b, common)
        ta, tb = self.cast(ta, common), self.cast(tb, common)
        ta, tb = self.broadcast_pair(ta, tb)
        return ta, tb, common

    def _build(self, cls, a: tensor, b: tensor) -> tensor:
        return self.make(cls, a.type, lhs=a.handle, rhs=b.handle)

    def add(self, a, b) -> tensor:
        a, b, common = self._operands(a, b, allow_ptr=True)
        if common is None:
            return self._addptr(a, b)
        return self._build(arith.AddFOp if common.is_floating() else arith.AddIOp, a, b)

    def _addptr(self, a: tensor, b: tensor) -> tensor:
        if a.dtype.is_ptr() and b.dtype.is_ptr():
            raise TileTypeError("cannot add two pointers")
        ptr, offset = (a, b) if a.dtype.is_ptr() else (b, a)
        if not offset.dtype.is_int():
            raise TileTypeError(f"a pointer offset must be an integer, not {offset.dtype}")
        return self.make(tt.AddPtrOp, ptr.type, ptr=ptr.handle, offset=offset.handle)

    def sub(self, a, b) -> tensor:
        a, b, common = self._operands(a, b, allow_ptr=True)
        if common is None:
            if b.dtype.is_ptr():
                raise TileTypeError(
                    "subtracting pointers is not supported; subtract offsets instead"
                )
            return self._addptr(a, self.neg(b))
        return self._build(arith.SubFOp if common.is_floating() else arith.SubIOp, a, b)

    def mul(self, a, b) -> tensor:
        a, b, common = self._operands(a, b)
        return self._build(arith.MulFOp if common.is_floating() else arith.MulIOp, a, b)

    def truediv(self, a, b) -> tensor:
        a, b, common = self._operands(a, b, div_or_mod=True)
        if common.is_int():
            a, b = self.cast(a, core.float32), self.cast(b, core.float32)
        return self._build(arith.DivFOp, a, b)

    def floordiv(self, a, b) -> tensor:
        a, b, common = self._operands(a, b, div_or_mod=True)
        if not common.is_int():
            raise TileTypeError(
                f"`//` is only defined for integers, not {common}",
                hint="use tl.floor(x / y) for floats",
            )
        return self._build(arith.DivSIOp if common.is_int_signed() else arith.DivUIOp, a, b)

    def mod(self, a, b) -> tensor:
        a, b, common = self._operands(a, b, div_or_mod=True)
        if common.is_floating():
            return self._build(arith.RemFOp, a, b)
        return self._build(arith.RemSIOp if common.is_int_signed() else arith.RemUIOp, a, b)

    def _bitwise_operands(self, a, b, what: str):
        ta, tb = self.to_tensor(unwrap(a)), self.to_tensor(unwrap(b))
        for t in (ta, tb):
            if (
                not t.dtype.is_int()
            ):  # Triton's wording first: code matches on "invalid operands of type"
                raise TileTypeError(
                    f"invalid operands of type {ta.type!r} and {tb.type!r}: `{what}` needs "
                    f"integer operands, got {t.dtype}",
                    hint="bitwise operators take integers; use .to(tl.int32, bitcast=True) to "
                    "work on a float's bits",
                )
        # Triton promotes as for arithmetic: a Python int meeting an int1 tile makes an int32 result.
        a_scalar, b_scalar = is_number(unwrap(a)), is_number(unwrap(b))
        common = computation_type(ta.dtype, a_scalar, tb.dtype, b_scalar, False)
        check_scalar_range(unwrap(a), common)
        check_scalar_range(unwrap(b), common)
        return (*self.broadcast_pair(self.cast(ta, common), self.cast(tb, common)), common)

    def and_(self, a, b) -> tensor:
        return self._build(arith.AndIOp, *self._bitwise_operands(a, b, "&")[:2])

    def or_(self, a, b) -> tensor:
        return self._build(arith.OrIOp, *self._bitwise_operands(a, b, "|")[:2])

    def xor(self, a, b) -> tensor:
        return self._build(arith.XOrIOp, *self._bitwise_operands(a, b, "^")[:2])

    def shl(self, a, b) -> tensor:
        return self._build(arith.ShLIOp, *self._bitwise_operands(a, b, "<<")[:2])

    def shr(self, a, b) -> tensor:
        # As Triton's tensor.__rshift__: arithmetic when the left operand's own type is signed, even if
        # promotion made the operands unsigned (int32 >> uint32); a Python int on the left follows the
        # right tile (__rrshift__).
        left, right = unwrap(a), unwrap(b)
        operand = left if isinstance(left, tensor) else right
        a, b, common = self._bitwise_operands(a, b, ">>")
        signed = operand.dtype if isinstance(operand, tensor) else common
        return self._build(arith.ShRSIOp if signed.is_int_signed() else arith.ShRUIOp, a, b)

    def compare(self, op: str, a, b) -> tensor:
        a, b = unwrap(a), unwrap(b)
        ta, tb = self.to_tensor(a), self.to_tensor(b)
        if ta.dtype.is_ptr() or tb.dtype.is_ptr():
            a, b = self.cast(ta, core.uint64), self.cast(tb, core.uint64)
        a, b, common = self._operands(a, b)
        out = self.with_scalar(a, core.int1)
        if common.is_floating():
            return self.make(
                arith.CmpFOp, out, predicate=_FLOAT_PRED[op], lhs=a.handle, rhs=b.handle
            )
        table = _SINT_PRED if common.is_int_signed() else _UINT_PRED
        return self.make(arith.CmpIOp, out, predicate=table[op], lhs=a.handle, rhs=b.handle)

    def logical(self, op: str, a, b) -> tensor:
        """`and` / `or` on runtime values: both sides become int1 first."""
        ta, tb = (
            self.cast(self.to_tensor(unwrap(a)), core.int1),
            self.cast(self.to_tensor(unwrap(b)), core.int1),
        )
        ta, tb = self.broadcast_pair(ta, tb)
        return self._build(arith.AndIOp if op == "and" else arith.OrIOp, ta, tb)

    # -- unary operators ---------------------------------------------------------------------------------
    def neg(self, x) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_floating():
            return self.make(arith.NegFOp, x.type, operand=x.handle)
        if x.dtype.is_ptr():
            raise TileTypeError("cannot negate a pointer")
        return self._build(arith.SubIOp, self.constant(0, x.dtype, x.shape), x)

    def invert(self, x) -> tensor:
        x = self.to_tensor(x)
        if not x.dtype.is_int():
            raise TileTypeError(f"`~` needs an integer operand, got {x.dtype}")
        ones = self.constant(1 if x.dtype.is_int1() else -1, x.dtype, x.shape)
        return self._build(arith.XOrIOp, x, ones)

    def not_(self, x) -> tensor:
        x = self.to_tensor(x)
        return self.compare("==", x, self.constant(0, x.dtype, x.shape))

    # -- selection and min/max ---------------------------------------------------------------------------
    def where(self, condition, x, y) -> tensor:
        condition = self.cast(self.to_tensor(unwrap(condition)), core.int1)
        x, y = unwrap(x), unwrap(y)
        tx, ty = self.to_tensor(x), self.to_tensor(y)
        if tx.dtype.is_ptr() or ty.dtype.is_ptr():
            if tx.dtype != ty.dtype:
                raise TileTypeError(f"tl.where between {tx.dtype} and {ty.dtype}")
        else:
            common = computation_type(tx.dtype, is_number(x), ty.dtype, is_number(y), False)
            tx, ty = self.cast(tx, common), self.cast(ty, common)
        shape = self.broadcast_shape(self.broadcast_shape(condition.shape, tx.shape), ty.shape)
        condition, tx, ty = (self.broadcast_to(v, shape) for v in (condition, tx, ty))
        return self.make(
            arith.SelectOp,
            tx.type,
            condition=condition.handle,
            true_value=tx.handle,
            false_value=ty.handle,
        )

    def minmax(self, which: str, a, b, propagate_nan: int = 0) -> tensor:
        a, b, common = self._operands(a, b)
        if common.is_floating():
            if propagate_nan:
                cls = arith.MaximumFOp if which == "max" else arith.MinimumFOp
            else:
                cls = arith.MaxNumFOp if which == "max" else arith.MinNumFOp
        elif common.is_int_signed():
            cls = arith.MaxSIOp if which == "max" else arith.MinSIOp
        else:
            cls = arith.MaxUIOp if which == "max" else arith.MinUIOp
        return self._build(cls, a, b)

    # -- memory -------------------------------------------------------------------------------------------
    def load(
        self, ptr, mask=None, other=None, cache_modifier="", eviction_policy="", volatile=False
    ) -> tensor:
        _check_cache_options("tl.load", cache_modifier, eviction_policy)
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TileTypeError(
                f"tl.load needs a pointer, got {ptr.dtype}",
                hint="pass a pointer argument plus offsets, e.g. tl.load(x_ptr + offs)",
            )
        elem = ptr.dtype.element_ty
        shape = ptr.shape
        if mask is not None:
            mask = self.cast(self.to_tensor(unwrap(mask)), core.int1)
            if mask.shape and not ptr.shape:
                raise TileTypeError(
                    f"tl.load of a scalar pointer with a mask of shape {shape_str(mask.shape)}",
                    hint="add offsets to the pointer, e.g. x_ptr + tl.arange(0, BLOCK)",
                )
            shape = self.broadcast_shape(shape, mask.shape)
            mask = self.broadcast_to(mask, shape)
        ptr = self.broadcast_to(ptr, shape)
        storage = core.int8 if elem.is_int1() else elem
        if elem.is_int1():
            ptr = self.cast(ptr, pointer_type(core.int8), bitcast=True)
        if other is not None:
            other = self.broadcast_to(self.cast(self.to_tensor(unwrap(other)), storage), shape)
        out = block_type(storage, shape) if shape else storage
        value = self.make(
            tt.LoadOp,
            out,
            ptr=ptr.handle,
            mask=mask.handle if mask is not None else None,
            other=other.handle if other is not None else None,
            cache_modifier=cache_modifier or "",
            eviction_policy=eviction_policy or "",
            is_volatile=bool(volatile),
        )
        return self.cast(value, core.int1) if elem.is_int1() else value

    def store(self, ptr, value, mask=None, cache_modifier="", eviction_policy="") -> None:
        _check_cache_options("tl.store", cache_modifier, eviction_policy)
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TileTypeError(f"tl.store needs a pointer, got {ptr.dtype}")
        if ptr.dtype.const:
            raise TileTypeError(
                "Cannot store to a constant pointer (a parameter annotated tl.const)",
                hint="drop the tl.const annotation, or store through another pointer",
            )
        elem = ptr.dtype.element_ty
        value = self.to_tensor(unwrap(value))
        if value.shape and not ptr.shape:
            # Every lane would write the same address: Triton refuses this too.
            raise TileTypeError(
                f"tl.store of a tile of shape {shape_str(value.shape)} through a scalar pointer",
                hint="add offsets to the pointer (x_ptr + tl.arange(0, BLOCK)), or reduce "
                "the tile to a scalar first",
            )
        shape = self.broadcast_shape(ptr.shape, value.shape)
        if mask is not None:
            mask = self.cast(self.to_tensor(unwrap(mask)), core.int1)
            shape = self.broadcast_shape(shape, mask.shape)
            mask = self.broadcast_to(mask, shape)
        if elem.is_int1():
            ptr = self.cast(ptr, pointer_type(core.int8), bitcast=True)
            elem = core.int8
        ptr = self.broadcast_to(ptr, shape)
        value = self.broadcast_to(self.cast(value, elem), shape)
        self.builder.create(
            tt.StoreOp,
            ptr=ptr.handle,
            value=value.handle,
            mask=mask.handle if mask is not None else None,
            cache_modifier=cache_modifier or "",
            eviction_policy=eviction_policy or "",
        )


# Triton's accepted values (PTX cache operators and L1 eviction priorities)
CACHE_MODIFIERS = {
    "tl.load": ("", ".ca", ".cg", ".cs", ".cv"),
    "tl.store": ("", ".wb", ".cg", ".cs", ".wt"),
}
EVICTION_POLICIES = ("", "evict_normal", "evict_first", "evict_last")


def _check_cache_options(what: str, cache_modifier, eviction_policy) -> None:
    if (cache_modifier or "") not in CACHE_MODIFIERS[what]:
        raise TileTypeError(
            f"{what}: cache_modifier {cache_modifier!r} is not supported",
            hint="use one of " + ", ".join(repr(c) for c in CACHE_MODIFIERS[what][1:]),
        )
    if (eviction_policy or "") not in EVICTION_POLICIES:
        raise TileTypeError(
            f"{what}: eviction_policy {eviction_policy!r} is not supported",
            hint="use one of " + ", ".join(repr(e) for e in EVICTION_POLICIES[1:]),
        )
