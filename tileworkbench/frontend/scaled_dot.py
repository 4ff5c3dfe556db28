"""`tl.dot_scaled`: the product of microscaling (MX) tiles, built as Triton does on GPUs without
MX tensor cores: each operand is upcast (fp4 e2m1 unpacked from its bytes, fp8 from its bits or its
own dtype, each group of K / scale columns along K (32 for MX, 16 for nvfp4) times its scale:
2**(s - 127) for e8m0 bytes, the value of a float8e4nv scale) to the 16-bit float the tensor cores
take, fp16 where an operand is fp16 and bf16 otherwise, then `tl.dot` accumulating in fp32. Every
back end runs it. The upcast is exact for bf16 (every fp4/fp8/bf16 value times a power of two is
one, bar under- and overflow past fp32's range); fp16 holds a scaled value only within its range,
as in Triton."""

from __future__ import annotations

from ..dtypes import TABLE as DTYPES
from ..errors import TileTypeError
from ..language import core
from ..language.core import tensor
from .calls import impl
from .reductions import dot
from .semantics import shape_str, unwrap
from .shape_calls import join, permute

# the fp8 formats by PTX's names (dtypes.TABLE's `mma`), and the 16-bit floats by Triton's
_FP8 = {
    row.mma: core.dtype(row.triton) for row in DTYPES if row.bits == 8 and row.is_float and row.mma
}
_FLOATS = {name: core.dtype(name) for name in ("bf16", "fp16")}
FORMATS = ("e2m1", *_FP8, *_FLOATS)
SCALE_GROUP = 32  # elements along K that share one scale


@impl("dot_scaled")
def dot_scaled(
    cg,
    lhs,
    lhs_scale,
    lhs_format,
    rhs,
    rhs_scale,
    rhs_format,
    acc=None,
    fast_math=False,
    lhs_k_pack=True,
    rhs_k_pack=True,
    out_dtype=core.float32,
):
    lhs_format, rhs_format = unwrap(lhs_format), unwrap(rhs_format)
    if not unwrap(lhs_k_pack) or not unwrap(rhs_k_pack):
        raise TileTypeError("tl.dot_scaled packs fp4 along K only (lhs_k_pack=rhs_k_pack=True)")
    lhs = cg.sem.to_tensor(lhs)
    # rhs (K x N) is upcast as N x K, the orientation of its scales (and, when it is `b.T` of an
    # N x K tile as in Triton's tutorial 10, of its data: the two transposes fold away), and turned
    # only as the dot operand, so no float32 tile is ever transposed
    rhs_t = _transpose(cg, cg.sem.to_tensor(rhs), "rhs")
    if lhs_format == rhs_format == "e2m1":
        # K in another order on both sides (the low nibbles, then the high ones) gives the same sum:
        # two dots of K/2, with no interleaving of the nibbles (it moves data on the GPU)
        pairs = zip(
            _e2m1_halves(cg, lhs, unwrap(lhs_scale), "lhs"),
            _e2m1_halves(cg, rhs_t, unwrap(rhs_scale), "rhs"),
        )
    else:
        pairs = [
            (
                _upcast(cg, lhs, unwrap(lhs_scale), lhs_format, what="lhs"),
                _upcast(cg, rhs_t, unwrap(rhs_scale), rhs_format, what="rhs"),
            )
        ]
    # test_core's test_scaled_dot reads an f16/bf16 mma in the PTX, as Triton's decomposition emits
    compute = core.float16 if "fp16" in (lhs_format, rhs_format) else core.bfloat16
    result = unwrap(acc)
    for a, b_t in pairs:
        result = _dot(cg, a, b_t, result, compute, out_dtype)
    return result


def _dot(cg, a: tensor, b_t: tensor, acc, compute, out_dtype) -> tensor:
    """acc + a @ b_t.T of float32 tiles, multiplied on `compute` (16-bit) tiles."""
    # lhs is narrowed in its transpose and turned back: the transpose (a relabelling of the
    # registers) keeps the GPU's layout assignment from pulling the dot-operand layout back through
    # the decoding to the bytes (a second trip through shared memory, where wgmma reads lhs anyway)
    a_t = cg.sem.cast(permute(cg, a, 1, 0), compute)
    b_t = cg.sem.cast(b_t, compute)
    return dot(cg, permute(cg, a_t, 1, 0), permute(cg, b_t, 1, 0), acc, out_dtype=out_dtype)


def _e2m1_halves(cg, x: tensor, scale, what: str) -> list[tensor]:
    """Packed e2m1 operand `x` (rows x K/2 bytes) as two float32 tiles, scaled: its elements 0, 2,
    4, ... (the low nibbles) and 1, 3, 5, ... (the high ones)."""
    if len(x.shape) != 2 or x.dtype != core.uint8:
        raise TileTypeError(
            f"tl.dot_scaled: {what} in e2m1 must be a 2-D uint8 tile of packed "
            f"pairs, got {x.dtype} {shape_str(x.shape)}"
        )
    sem = cg.sem
    halves = [_e2m1_numbers(cg, sem.and_(x, 0xF)), _e2m1_numbers(cg, sem.shr(x, 4))]
    if scale is None:
        return halves
    rows, half = x.shape
    factors = _scale_factors(cg, sem.to_tensor(scale), (rows, 2 * half), what, halves=True)
    return [sem.mul(numbers, factors) for numbers in halves]


def _transpose(cg, x: tensor, what: str) -> tensor:
    if len(x.shape) != 2:
        raise TileTypeError(
            f"tl.dot_scaled needs 2-D operands, got {what} of shape {shape_str(x.shape)}"
        )
    return permute(cg, x, 1, 0)


def _upcast(cg, x: tensor, scale, fmt: str, what: str) -> tensor:
    """Operand `x` (rows x K: M x K for lhs, N x K for rhs) in `fmt` as float32 numbers, scaled."""
    if fmt not in FORMATS:
        raise TileTypeError(
            f"tl.dot_scaled: {what}_format must be one of {', '.join(FORMATS)}, got {fmt!r}"
        )
    if len(x.shape) != 2:
        raise TileTypeError(
            f"tl.dot_scaled needs 2-D operands, got {what} of shape {shape_str(x.shape)}"
        )
    if fmt == "e2m1":
        if x.dtype != core.uint8:
            raise TileTypeError(
                f"tl.dot_scaled: {what} in e2m1 must be a uint8 tile of packed pairs, got {x.dtype}"
            )
        numbers = _unpack_e2m1(cg, x)
    else:
        numbers = cg.sem.cast(_as_format(cg, x, fmt, what), core.float32)
    if scale is None:
        return numbers
    factors = _scale_factors(cg, cg.sem.to_tensor(scale), numbers.shape, what)
    return cg.sem.mul(numbers, factors)


def _as_format(cg, x: tensor, fmt: str, what: str) -> tensor:
    """`x` as the float type of `fmt`: as it is, or bitcast from unsigned integers of its bits."""
    dtype = _FP8.get(fmt) or _FLOATS[fmt]
    if x.dtype == dtype:
        return x
    bits = core.uint8 if fmt in _FP8 else core.uint16
    if x.dtype != bits:
        raise TileTypeError(
            f"tl.dot_scaled: {what} in {fmt} must be a {dtype} tile or a {bits} "
            f"tile of its bits, got {x.dtype}"
        )
    return cg.sem.cast(x, dtype, bitcast=True)


def _unpack_e2m1(cg, x: tensor) -> tensor:
    """Two fp4 e2m1 values per byte along K, the last axis (the low nibble first), as float32.
    The nibbles are spread to rows x K as bytes and decoded after: a layout change the GPU passes
    place at the reshape then moves bytes, not floats."""
    sem = cg.sem
    pair = join(cg, sem.and_(x, 0xF), sem.shr(x, 4))  # (rows, K/2, 2)
    rows, cols = x.shape
    return _e2m1_numbers(cg, sem.reshape(pair, (rows, cols * 2)))


def _e2m1_numbers(cg, nibble: tensor) -> tensor:
    """fp4 e2m1: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0: 0, 0.5, 1, ..., 4, 6."""
    sem = cg.sem
    exponent = sem.and_(sem.shr(nibble, 1), 3)
    half_mantissa = sem.mul(sem.cast(sem.and_(nibble, 1), core.float32), 0.5)
    power = sem.where(
        sem.compare("==", exponent, 1), 1.0, sem.where(sem.compare("==", exponent, 2), 2.0, 4.0)
    )
    magnitude = sem.where(
        sem.compare("==", exponent, 0), half_mantissa, sem.mul(sem.add(half_mantissa, 1.0), power)
    )
    return sem.where(sem.compare("!=", sem.and_(nibble, 8), 0), sem.neg(magnitude), magnitude)


def _scale_factors(
    cg, scale: tensor, shape: tuple[int, int], what: str, halves: bool = False
) -> tensor:
    """Scales (rows x K/group: e8m0 uint8, 255 is NaN, or float8e4nv values) as one factor per
    element of the rows x K operand (the group is K over the scale's columns, as Triton deduces
    it); `halves`: per element of one of `_e2m1_halves` (rows x K/2; element p is 2p or 2p + 1)."""
    sem = cg.sem
    rows, k = shape
    columns = scale.shape[-1] if scale.shape and k % scale.shape[-1] == 0 else k // SCALE_GROUP
    if scale.dtype not in (core.uint8, core.float8e4nv) or scale.shape != (rows, columns):
        raise TileTypeError(
            f"tl.dot_scaled: {what}_scale must be a uint8 tile of shape "
            f"({rows}, {columns}) (e8m0; or float8e4nv, nvfp4's), got "
            f"{scale.dtype} {shape_str(scale.shape)}"
        )
    group = k // columns // (2 if halves else 1)
    if group < 1:
        raise TileTypeError(
            f"tl.dot_scaled: {what}_scale has more columns ({columns}) than "
            f"pairs of e2m1 values along K ({k // 2})"
        )
    # the scales are spread to rows x K as they are (bytes) and decoded after (see _unpack_e2m1)
    grouped = sem.broadcast_to(sem.expand_dims(scale, 2), (rows, columns, group))
    spread = sem.reshape(grouped, (rows, columns * group))
    if scale.dtype == core.float8e4nv:
        return sem.cast(spread, core.float32)
    bits = sem.shl(sem.cast(spread, core.uint32), 23)
    return sem.where(
        sem.compare("==", spread, 255), float("nan"), sem.cast(bits, core.float32, bitcast=True)
    )
