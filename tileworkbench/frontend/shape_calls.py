"""Shape builtins: broadcasting, expand/squeeze, reshape and views, transposes, join/split/cat,
gather, flip, sort/topk and histogram, registered by name like every builtin (see calls.py)."""

from __future__ import annotations

from ..errors import TileTypeError
from ..ir import tt
from ..language import core
from ..language.core import block_type, tensor
from .calls import arange, check_shape, constexpr_int, dims_arg, impl, normalize_axis
from .semantics import shape_str, unwrap


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
    normalized = [wrap_axis(constexpr_int(a, "axis"), rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise TileTypeError(
            f"expand_dims received duplicate axes, normalized axes = {normalized}",
            hint="name each new axis once",
        )
    for a in sorted(normalized):
        input = cg.sem.expand_dims(input, a)
    return input


def wrap_axis(axis: int, rank: int) -> int:
    """`axis` in 0..rank-1 (negative counts from the end); Triton's wording when out of range."""
    if not -rank <= axis < rank:
        raise TileTypeError(f"invalid axis {axis}. Expected {-rank} <= axis < {rank}")
    return axis % rank


@impl("unsqueeze")
def unsqueeze(cg, input, dim):
    return cg.sem.expand_dims(cg.sem.to_tensor(input), constexpr_int(dim, "dim"))


@impl("squeeze")
def squeeze(cg, input, dim):
    input = cg.sem.to_tensor(input)
    dim = normalize_axis(dim, len(input.shape))
    if input.shape[dim] != 1:
        raise TileTypeError(f"cannot squeeze dimension {dim} of size {input.shape[dim]}")
    return cg.sem.reshape(input, input.shape[:dim] + input.shape[dim + 1 :])


@impl("reshape")
def reshape(cg, input, *shape, can_reorder=False):
    return cg.sem.reshape(
        cg.sem.to_tensor(input), check_shape(dims_arg(shape)), bool(unwrap(can_reorder))
    )


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
        raise TileTypeError(
            f"permute order {order} is not a permutation of the {len(input.shape)} dims"
        )
    if order == tuple(range(len(order))):
        return input
    shape = tuple(input.shape[d] for d in order)
    return cg.sem.make(tt.TransOp, block_type(input.dtype, shape), src=input.handle, order=order)


@impl("trans")
def trans(cg, input, *dims):
    input = cg.sem.to_tensor(input)
    if dims:
        return permute(cg, input, *dims_arg(dims))
    rank = len(input.shape)  # Triton's default: swap the last two axes (a batched 2-D transpose)
    if rank < 2:
        raise TileTypeError(
            "tl.trans invoked with a 0- or 1-dimensional tensor",
            hint="give the order, tl.trans(x, 0), or drop the call",
        )
    return permute(cg, input, *range(rank - 2), rank - 1, rank - 2)


@impl("join")
def join(cg, a, b):
    a, b = cg.sem.broadcast_pair(cg.sem.to_tensor(a), cg.sem.to_tensor(b))
    if a.dtype != b.dtype:
        raise TileTypeError(f"tl.join needs equal dtypes, got {a.dtype} and {b.dtype}")
    if not a.shape:  # two scalars join into a tile of 2, as in Triton
        return cg.sem.reshape(join(cg, cg.sem.reshape(a, (1,)), cg.sem.reshape(b, (1,))), (2,))
    return cg.sem.make(tt.JoinOp, block_type(a.dtype, a.shape + (2,)), lhs=a.handle, rhs=b.handle)


@impl("split")
def split(cg, a):
    a = cg.sem.to_tensor(a)
    if not a.shape or a.shape[-1] != 2:
        raise TileTypeError(
            f"tl.split needs a last dimension of size 2, got shape {shape_str(a.shape)}"
        )
    shape = a.shape[:-1]
    if not shape:  # to scalars: split a (1, 2) tile and take each one-element half, so every back
        # end lowers it as tiles (the NVPTX lowering keeps the two elements in different threads)
        from .reductions import unsplat

        halves = split(cg, cg.sem.reshape(a, (1, 2)))
        return unsplat(cg, halves[0]), unsplat(cg, halves[1])
    out = block_type(a.dtype, shape)
    op = cg.builder.create(tt.SplitOp, [out.to_ir(), out.to_ir()], src=a.handle)
    return tensor(op.results[0], out), tensor(op.results[1], out)


@impl("interleave")
def interleave(cg, a, b):
    joined = join(cg, a, b)
    if len(joined.shape) == 1:  # from scalars: already (2,)
        return joined
    return cg.sem.reshape(joined, joined.shape[:-2] + (joined.shape[-2] * 2,))


@impl("cat")
def cat(cg, input, other, can_reorder=False, dim=0):
    a, b = cg.sem.to_tensor(input), cg.sem.to_tensor(other)
    if a.type != b.type:
        raise TileTypeError(f"tl.cat needs tiles of one type, got {a.type!r} and {b.type!r}")
    dim = wrap_axis(constexpr_int(dim, "dim"), len(a.shape))
    if dim == 0 or unwrap(can_reorder):
        shape = (a.shape[0] * 2,) + a.shape[1:]
        return cg.sem.make(tt.CatOp, block_type(a.dtype, shape), lhs=a.handle, rhs=b.handle)
    # as Triton: join adds a minor axis of 2; move it in front of `dim` and merge the two
    rank = len(a.shape)
    order = list(range(rank))
    order.insert(dim, rank)
    joined = permute(cg, join(cg, a, b), tuple(order))
    shape = a.shape[:dim] + (2 * a.shape[dim],) + a.shape[dim + 1 :]
    return cg.sem.reshape(joined, shape)


@impl("gather")
def gather(cg, src, index, axis):
    src, index = cg.sem.to_tensor(src), cg.sem.to_tensor(index)
    axis = normalize_axis(axis, len(src.shape))
    if len(index.shape) != len(src.shape) or not index.dtype.is_int():
        raise TileTypeError("tl.gather's index must be an integer tile of the same rank as src")
    return cg.sem.make(
        tt.GatherOp,
        block_type(src.dtype, index.shape),
        src=src.handle,
        indices=index.handle,
        axis=axis,
    )


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
    return cg.sem.make(
        tt.SortOp, x.type, src=x.handle, axis=dim, descending=bool(unwrap(descending))
    )


@impl("topk")
def topk(cg, x, k, dim=None):
    x = cg.sem.to_tensor(x)
    _last_dim(x, dim, "topk")
    k = constexpr_int(k, "topk's k")
    check_shape((k,), "topk's k")
    if k > x.shape[-1]:
        raise TileTypeError(f"topk's k={k} is larger than the last dimension {x.shape[-1]}")
    return cg.sem.make(
        tt.TopKOp, block_type(x.dtype, x.shape[:-1] + (k,)), src=x.handle, largest=True
    )


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
