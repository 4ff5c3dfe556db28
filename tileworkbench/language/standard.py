"""Standard functions written in the tile language itself (Triton's `standard.py`): the frontend inlines
them like `@jit` callees, so they work on every target."""

from __future__ import annotations

from . import builtins as tl_builtins
from .core import language_function

_b = tl_builtins


@language_function
def cdiv(x, div):
    """ceil(x / div) for integers."""
    return (x + div - 1) // div


@language_function
def sigmoid(x):
    """Elementwise 1 / (1 + exp(-x))."""
    return 1 / (1 + _b.exp(-x))


@language_function
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """Softmax along `dim` (dimension 0 when None, as Triton). Unlike Triton, the reductions keep their
    dimension internally, so dim=1 of a square tile does not broadcast the wrong way."""
    if dim is None:
        dim = 0
    z = x - _b.max(x, dim, keep_dims=True)
    num = _b.exp(z)
    den = _b.sum(num, dim, keep_dims=True)
    return _b.fdiv(num, den, ieee_rounding)


@language_function
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map (i, j) of a size_i x size_j grid to a grouped order of `size_g` rows (Triton's tl.swizzle2d)."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = _b.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return new_i, new_j


class PropagateNan:
    """`propagate_nan` values of maximum/minimum/clamp."""

    NONE = 0
    ALL = 0xFFFF
