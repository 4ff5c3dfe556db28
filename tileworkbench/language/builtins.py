"""The builtins kernels call as `tl.<name>`: stubs with Triton's signatures and docstrings. Their meaning
(typing and the Tile IR they build) lives in frontend/semantics.py, keyed by name."""

from __future__ import annotations

from .core import builtin, float32

__all__: list[str] = []  # filled below with every builtin

# -- programs and tiles -----------------------------------------------------------------------------


@builtin
def program_id(axis):
    """The id of the current program instance along `axis` (0, 1 or 2)."""


@builtin
def num_programs(axis):
    """The number of program instances launched along `axis`."""


@builtin
def arange(start, end):
    """The int32 values start, start+1, ..., end-1 as a 1-D tile; end - start must be a power of two."""


@builtin
def zeros(shape, dtype):
    """A tile of `shape` filled with 0 of `dtype`."""


@builtin
def zeros_like(input):
    """A tile of zeros with the shape and dtype of `input`."""


@builtin
def full(shape, value, dtype):
    """A tile of `shape` filled with the scalar `value` of `dtype`."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """`input` converted to `dtype` (value-preserving), or reinterpreted bit for bit when `bitcast`."""


# -- memory -----------------------------------------------------------------------------------------


@builtin
def load(
    pointer,
    mask=None,
    other=None,
    boundary_check=(),
    padding_option="",
    cache_modifier="",
    eviction_policy="",
    volatile=False,
):
    """Load a tile from the memory `pointer` points at (a pointer or a tile of pointers). Lanes where
    `mask` is false are not read and take `other`."""


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Store the tile `value` at `pointer`; lanes where `mask` is false are not written."""


def _atomic_doc(name: str) -> str:
    return (
        f"Atomically apply `{name}` of `val` at `pointer` (lanes where `mask` is false are skipped) "
        "and return the old values. `sem` is 'acq_rel' (default), 'acquire', 'release' or 'relaxed'; "
        "`scope` is 'gpu' (default), 'cta' or 'sys'."
    )


@builtin
def atomic_add(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_max(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_min(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_and(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_or(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_xor(pointer, val, mask=None, sem=None, scope=None): ...


@builtin
def atomic_xchg(pointer, val, mask=None, sem=None, scope=None): ...


for _f in (atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor, atomic_xchg):
    _f.__doc__ = _atomic_doc(_f.__name__.removeprefix("atomic_"))


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically store `val` at `pointer` where the value there equals `cmp`; return the old values."""


# -- shapes -----------------------------------------------------------------------------------------


@builtin
def broadcast(input, other):
    """`input` and `other` broadcast to their common shape."""


@builtin
def broadcast_to(input, *shape):
    """`input` broadcast to `shape`."""


@builtin
def expand_dims(input, axis):
    """`input` with a new size-1 dimension at `axis` (an int or a sequence of ints)."""


@builtin
def unsqueeze(input, dim):
    """`input` with a new size-1 dimension at `dim` (same as expand_dims)."""


@builtin
def squeeze(input, dim):
    """`input` without its size-1 dimension `dim`."""


@builtin
def reshape(input, *shape, can_reorder=False):
    """`input` reshaped to `shape` (row-major order; with can_reorder the order is unspecified)."""


@builtin
def view(input, *shape):
    """`input` viewed with `shape`; the element order is unspecified (prefer reshape)."""


@builtin
def ravel(x, can_reorder=False):
    """`x` flattened to one dimension."""


@builtin
def trans(input, *dims):
    """`input` with its dimensions permuted (reversed when `dims` is empty)."""


@builtin
def permute(input, *dims):
    """`input` with its dimensions permuted: result dim i is input dim `dims[i]`."""


@builtin
def flip(x, dim=None):
    """`x` reversed along `dim` (the last dimension when None)."""


@builtin
def join(a, b):
    """`a` and `b` stacked along a new last dimension of size 2."""


@builtin
def split(a):
    """The two halves of `a` along its last dimension, which must be 2."""


@builtin
def interleave(a, b):
    """The elements of `a` and `b` alternated along the last dimension."""


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """`scalar_fn` (a @jit function written for scalars, `if`s included) applied to the tiles `args`
    element by element; with `pack` > 1 it takes and returns `pack` neighbouring elements at once."""


@builtin
def condition(arg1, disable_licm=False):
    """A `while` loop's condition with options (`while tl.condition(i < n, disable_licm=True)`); the
    `disable_licm` hint is accepted and not used."""


@builtin
def cat(input, other, can_reorder=False, dim=0):
    """`input` and `other` (tiles of one shape) concatenated along `dim`."""


@builtin
def gather(src, index, axis):
    """`src` gathered along `axis` at `index`: out[i][j] = src[index[i][j]][j] for axis 0."""


@builtin
def sort(x, dim=None, descending=False):
    """`x` sorted along `dim` (the last dimension; only it is supported, as in Triton)."""


@builtin
def topk(x, k, dim=None):
    """The `k` largest values of `x` along its last dimension, in descending order."""


@builtin
def histogram(input, num_bins, mask=None):
    """Counts of the values 0..num_bins-1 in the 1-D tile `input` (int32)."""


@builtin
def where(condition, x, y):
    """Elementwise `x` where `condition` is true, else `y`."""


# -- math -------------------------------------------------------------------------------------------


@builtin
def exp(x):
    """Elementwise e**x (fast approximate on GPUs, as Triton)."""


@builtin
def exp2(x):
    """Elementwise 2**x."""


@builtin
def log(x):
    """Elementwise natural logarithm."""


@builtin
def log2(x):
    """Elementwise base-2 logarithm."""


@builtin
def sqrt(x):
    """Elementwise square root (approximate on GPUs; see sqrt_rn)."""


@builtin
def sqrt_rn(x):
    """Elementwise square root, correctly rounded."""


@builtin
def rsqrt(x):
    """Elementwise 1/sqrt(x)."""


@builtin
def sin(x):
    """Elementwise sine."""


@builtin
def cos(x):
    """Elementwise cosine."""


@builtin
def abs(x):
    """Elementwise absolute value."""


@builtin
def floor(x):
    """Elementwise floor."""


@builtin
def ceil(x):
    """Elementwise ceiling."""


@builtin
def erf(x):
    """Elementwise error function."""


@builtin
def fma(x, y, z):
    """Elementwise x * y + z with one rounding."""


@builtin
def maximum(x, y, propagate_nan=0):
    """Elementwise maximum; with propagate_nan=tl.PropagateNan.ALL a NaN operand gives NaN."""


@builtin
def minimum(x, y, propagate_nan=0):
    """Elementwise minimum; with propagate_nan=tl.PropagateNan.ALL a NaN operand gives NaN."""


@builtin
def clamp(x, min, max, propagate_nan=0):
    """Elementwise x clamped to [min, max]."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Elementwise x / y for floats (approximate unless ieee_rounding)."""


@builtin
def div_rn(x, y):
    """Elementwise x / y, correctly rounded."""


@builtin
def umulhi(x, y):
    """The high 32 bits of the 64-bit product of two uint32/int32 tiles."""


# -- reductions and scans -----------------------------------------------------------------------------


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce `input` (a tile or a tuple of tiles) along `axis` (all axes when None) with the @jit
    function `combine_fn`, which must be associative and commutative."""


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """The sum along `axis` (all axes when None); integers narrower than 32 bits accumulate in (u)int32,
    as Triton; floats accumulate in their own dtype unless `dtype` is given."""


@builtin
def max(
    input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False
):
    """The maximum along `axis`; with return_indices also the index of the first maximum."""


@builtin
def min(
    input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False
):
    """The minimum along `axis`; with return_indices also the index of the first minimum."""


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the maximum along `axis` (the first one when tied)."""


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The index of the minimum along `axis` (the first one when tied)."""


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    """The bitwise xor of the integers along `axis`."""


@builtin
def reduce_or(input, axis=None, keep_dims=False):
    """The bitwise or of the integers along `axis`."""


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """The inclusive scan of `input` (a tile or tuple of tiles) along `axis` with `combine_fn`."""


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """The inclusive prefix sum along `axis`."""


@builtin
def cumprod(input, axis=0, reverse=False):
    """The inclusive prefix product along `axis`."""


@builtin
def dot(
    input,
    other,
    acc=None,
    input_precision=None,
    allow_tf32=None,
    max_num_imprecise_acc=None,
    out_dtype=float32,
):
    """The matrix product of two 2-D tiles (M x K and K x N; dims >= 16), plus `acc` when given.
    fp32 inputs use tf32 unless input_precision="ieee"."""


@builtin
def dot_scaled(
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
    out_dtype=float32,
):
    """The matrix product of two microscaling (MX) tiles, plus `acc`: `lhs` (M x K) in `lhs_format`
    ("e2m1": two fp4 values per uint8 along K; "e4m3", "e5m2": fp8 bits as uint8; "bf16", "fp16"),
    each group of 32 along K times 2**(s - 127) for the uint8 `lhs_scale` (M x K/32, or None); `rhs`
    (K x N) and `rhs_scale` (N x K/32) alike. Computed as an fp32 dot of the upcast operands."""


# -- compile-time and debugging ----------------------------------------------------------------------


@builtin
def static_assert(cond, msg=""):
    """Fail compilation with `msg` if the constexpr `cond` is false."""


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Print compile-time values while the kernel compiles."""


@builtin
def device_print(prefix, *args, hex=False):
    """Print `args` from every program at run time, each line starting with `prefix`."""


@builtin
def device_assert(cond, msg="", mask=None):
    """Fail the launch with `msg` where `cond` is false at run time. As in Triton, only in kernels compiled
    with `debug=True` (or TILEWORKBENCH_DEBUG=1); otherwise it is compiled out."""


@builtin
def debug_barrier():
    """Synchronize all threads of the program (a CTA barrier)."""


@builtin
def multiple_of(input, values):
    """Promise the compiler that `input`'s values are multiples of `values`."""


@builtin
def max_contiguous(input, values):
    """Promise the compiler that the first `values` elements of `input` are contiguous."""


@builtin
def max_constancy(input, values):
    """Promise the compiler that groups of `values` elements of `input` are equal."""


@builtin
def assume(cond):
    """Promise the compiler that `cond` holds (checked by the interpreter)."""


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Apply inline PTX `asm` element by element (GPU only)."""


@builtin
def extern_elementwise(lib_name, lib_path, args, arg_type_symbol_dict, is_pure):
    """Call a device-library function element by element (used by tl.extra.libdevice)."""


@builtin
def to_tensor(x):
    """A Python number as a scalar tensor (int32/uint32/int64/uint64 or fp32/fp64 by its value)."""


__all__ = [
    name
    for name, value in list(globals().items())
    if getattr(value, "__tile_builtin__", None) == name
]
