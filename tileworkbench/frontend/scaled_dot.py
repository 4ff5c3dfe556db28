"""`tl.dot_scaled`: the product of microscaling (MX) tiles, built as Triton does on GPUs without
MX tensor cores: each operand is upcast (fp4 e2m1 unpacked from its bytes, fp8 from its bits, each
group of 32 along K times 2**(scale - 127)) to the 16-bit float the tensor cores take, fp16 where an
operand is fp16 and bf16 otherwise, then one `tl.dot` accumulating in fp32. Every back end runs it.
The upcast is exact for bf16 (every MX value times a power of two is one, bar under- and overflow
past fp32's range); fp16 holds a scaled value only within its range, as in Triton."""

from __future__ import annotations

from ..errors import TileTypeError
from ..language import core
from ..language.core import tensor
from .calls import impl
from .reductions import dot
from .semantics import shape_str, unwrap
from .shape_calls import join, permute

_FP8 = {"e4m3": core.float8e4nv, "e5m2": core.float8e5}
_FLOATS = {"bf16": core.bfloat16, "fp16": core.float16}
FORMATS = ("e2m1", *_FP8, *_FLOATS)
SCALE_GROUP = 32  # elements along K that share one scale


@impl("dot_scaled")
def dot_scaled(cg, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=core.float32):
    lhs_format, rhs_format = unwrap(lhs_format), unwrap(rhs_format)
    if not unwrap(lhs_k_pack) or not unwrap(rhs_k_pack):
        raise TileTypeError("tl.dot_scaled packs fp4 along K only (lhs_k_pack=rhs_k_pack=True)")
    a = _upcast(cg, cg.sem.to_tensor(lhs), unwrap(lhs_scale), lhs_format, k_axis=1, what="lhs")
    b = _upcast(cg, cg.sem.to_tensor(rhs), unwrap(rhs_scale), rhs_format, k_axis=0, what="rhs")
    # test_core's test_scaled_dot reads an f16/bf16 mma in the PTX
    compute = core.float16 if "fp16" in (lhs_format, rhs_format) else core.bfloat16
    a, b = cg.sem.cast(a, compute), cg.sem.cast(b, compute)
    return dot(cg, a, b, unwrap(acc), input_precision="ieee", out_dtype=out_dtype)


def _upcast(cg, x: tensor, scale, fmt: str, k_axis: int, what: str) -> tensor:
    """Operand `x` (M x K for lhs, K x N for rhs) in `fmt` as float32 numbers, scaled."""
    if fmt not in FORMATS:
        raise TileTypeError(f"tl.dot_scaled: {what}_format must be one of {', '.join(FORMATS)}, "
                            f"got {fmt!r}")
    if len(x.shape) != 2:
        raise TileTypeError(f"tl.dot_scaled needs 2-D operands, got {what} of shape "
                            f"{shape_str(x.shape)}")
    if fmt in _FLOATS:
        numbers = cg.sem.cast(x, core.float32)
    elif x.dtype != core.uint8:
        raise TileTypeError(f"tl.dot_scaled: {what} in {fmt} must be a uint8 tile of its bits, "
                            f"got {x.dtype}")
    elif fmt == "e2m1":
        numbers = _unpack_e2m1(cg, x, k_axis)
    else:
        numbers = cg.sem.cast(cg.sem.cast(x, _FP8[fmt], bitcast=True), core.float32)
    if scale is None:
        return numbers
    factors = _scale_factors(cg, cg.sem.to_tensor(scale), numbers.shape, k_axis, what)
    return cg.sem.mul(numbers, factors)


def _unpack_e2m1(cg, x: tensor, k_axis: int) -> tensor:
    """Two fp4 e2m1 values per byte along K (the low nibble first), as float32."""
    sem = cg.sem
    low, high = sem.and_(x, 0xF), sem.and_(sem.shr(x, 4), 0xF)
    pair = join(cg, _e2m1_numbers(cg, low), _e2m1_numbers(cg, high))  # (.., .., 2)
    rows, cols = x.shape
    if k_axis == 1:  # (M, K/2, 2) -> (M, K)
        return sem.reshape(pair, (rows, cols * 2))
    return sem.reshape(permute(cg, pair, 0, 2, 1), (rows * 2, cols))  # (K/2, 2, N) -> (K, N)


def _e2m1_numbers(cg, nibble: tensor) -> tensor:
    """fp4 e2m1: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0: 0, 0.5, 1, ..., 4, 6."""
    sem = cg.sem
    exponent = sem.and_(sem.shr(nibble, 1), 3)
    half_mantissa = sem.mul(sem.cast(sem.and_(nibble, 1), core.float32), 0.5)
    power = sem.where(sem.compare("==", exponent, 1), 1.0,
                      sem.where(sem.compare("==", exponent, 2), 2.0, 4.0))
    magnitude = sem.where(sem.compare("==", exponent, 0), half_mantissa,
                          sem.mul(sem.add(half_mantissa, 1.0), power))
    return sem.where(sem.compare("!=", sem.and_(nibble, 8), 0), sem.neg(magnitude), magnitude)


def _scale_factors(cg, scale: tensor, shape: tuple[int, int], k_axis: int, what: str) -> tensor:
    """E8M0 scales (rows x K/32 uint8) as 2**(s - 127) per element of the operand (255 is NaN)."""
    sem = cg.sem
    rows = shape[1 - k_axis]
    k = shape[k_axis]
    if scale.dtype != core.uint8 or scale.shape != (rows, k // SCALE_GROUP):
        raise TileTypeError(f"tl.dot_scaled: {what}_scale must be a uint8 tile of shape "
                            f"({rows}, {k // SCALE_GROUP}), got {scale.dtype} "
                            f"{shape_str(scale.shape)}")
    bits = sem.shl(sem.cast(scale, core.uint32), 23)
    factor = sem.where(sem.compare("==", scale, 255), float("nan"),
                       sem.cast(bits, core.float32, bitcast=True))
    grouped = sem.broadcast_to(sem.expand_dims(factor, 2), (rows, k // SCALE_GROUP, SCALE_GROUP))
    per_element = sem.reshape(grouped, (rows, k))
    if k_axis == 1:
        return per_element
    return permute(cg, per_element, 1, 0)
