"""The target-neutral descriptor ops, run directly: a descriptor is its base address, shape and
strides; a load or store moves the block at its offsets as masked pointer lanes (positions outside
the shape read the padding and are never written), checked like every other access (memory.py)."""

from __future__ import annotations

import numpy as np

from ...ir.ops import tt
from .dtypes import memory_dtype, numpy_dtype


def eval_make_tensor_descriptor(op, ctx):
    rank = len(op.shape)

    def make(base, *parts):
        shape = [int(s) for s in parts[:rank]]
        return np.int64(base), shape, [*(int(s) for s in parts[rank:]), 1]

    return make


def _lanes(desc, offsets, block_shape, itemsize: int):
    """The addresses of the block at `offsets` and the mask of those inside the shape (int64)."""
    base, shape, strides = desc
    address = np.full(block_shape, base, np.int64)
    mask = np.ones(block_shape, bool)
    for axis, (offset, size) in enumerate(zip(offsets, block_shape)):
        index = [1] * len(block_shape)
        index[axis] = size
        position = (np.arange(size, dtype=np.int64) + np.int64(offset)).reshape(index)
        mask &= (position >= 0) & (position < shape[axis])
        address = address + position * np.int64(strides[axis] * itemsize)
    return address, mask


def eval_descriptor_load(op, ctx):
    block = op.desc.type.block
    source, dtype = memory_dtype(block.element), numpy_dtype(op.result.type)
    memory, site = ctx.memory, ctx.site(op, "load")
    fill = np.nan if op.desc.op.padding == "nan" else 0

    def load(desc, *offsets):
        address, mask = _lanes(desc, offsets, block.shape, source.itemsize)
        values, active = memory.load(address, mask, source, site)
        full = np.full(mask.size, fill, source)
        full[active if active is not None else slice(None)] = values
        return full.reshape(block.shape).astype(dtype, copy=False)

    return load


def eval_descriptor_store(op, ctx):
    block = op.desc.type.block
    target = memory_dtype(block.element)
    memory, site = ctx.memory, ctx.site(op, "store")

    def store(desc, value, *offsets):
        address, mask = _lanes(desc, offsets, block.shape, target.itemsize)
        memory.store(address, value, mask, target, site)

    return store


EVALUATORS = {
    tt.MakeTensorDescOp: eval_make_tensor_descriptor,
    tt.DescriptorLoadOp: eval_descriptor_load,
    tt.DescriptorStoreOp: eval_descriptor_store,
}
