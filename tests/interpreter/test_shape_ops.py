"""Shape ops: splat/broadcast/expand_dims/reshape/trans/join/split/cat, gather, histogram, sort, topk."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kernels import KernelBuilder, f32, i32, poisoned, ptr, tensor, run

from tileworkbench.errors import InterpreterError
from tileworkbench.ir import verify
from tileworkbench.ir.ops import tt

RNG = np.random.default_rng(3)


def _tile_ptrs(kb, name, shape, element):
    size = int(np.prod(shape))
    flat = kb.addptr(kb[name], kb.arange(size))
    if len(shape) == 1:
        return flat
    return kb.op(tt.ReshapeOp, [tensor(shape, ptr(element))], src=flat)


def _run_shape(build, inputs, in_elements, out_shape, out_element=f32, out_dtype=np.float32):
    """out = build(kb, *tiles) with each input loaded whole and the result stored row-major."""
    params = [(f"in{k}", ptr(e)) for k, e in enumerate(in_elements)] + [("out", ptr(out_element))]
    kb = KernelBuilder("shape_kernel", params)
    tiles = [
        kb.load(_tile_ptrs(kb, f"in{k}", x.shape, e))
        for k, (x, e) in enumerate(zip(inputs, in_elements))
    ]
    results = build(kb, *tiles)
    results = results if isinstance(results, list) else [results]
    outs = []
    for k, result in enumerate(results):
        out = poisoned(out_shape, out_dtype)
        offset = kb.const(k * int(np.prod(out_shape)), i32)
        flat_ptrs = _tile_ptrs(kb, "out", out_shape, out_element)
        kb.store(kb.addptr(flat_ptrs, kb.splat(offset, out_shape)), result)
        outs.append(out)
    func = kb.finish()
    verify(func)
    out = poisoned((len(results),) + tuple(out_shape), out_dtype)
    run(func, [*inputs, out], (1,))
    return out if len(results) > 1 else out[0]


def test_trans_and_reshape():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    got = _run_shape(
        lambda kb, t: kb.op(tt.TransOp, [tensor((8, 4), f32)], src=t, order=(1, 0)),
        [x],
        [f32],
        (8, 4),
    )
    np.testing.assert_array_equal(got, x.T)
    got = _run_shape(
        lambda kb, t: kb.op(tt.ReshapeOp, [tensor((2, 16), f32)], src=t), [x], [f32], (2, 16)
    )
    np.testing.assert_array_equal(got, x.reshape(2, 16))


def test_join_split_cat():
    a, b = (
        RNG.standard_normal((2, 8)).astype(np.float32),
        RNG.standard_normal((2, 8)).astype(np.float32),
    )
    joined = _run_shape(
        lambda kb, x, y: kb.op(tt.JoinOp, [tensor((2, 8, 2), f32)], lhs=x, rhs=y),
        [a, b],
        [f32, f32],
        (2, 8, 2),
    )
    np.testing.assert_array_equal(joined, np.stack([a, b], -1))
    halves = _run_shape(
        lambda kb, x: list(kb.op(tt.SplitOp, [tensor((2, 8), f32)] * 2, src=x)),
        [np.stack([a, b], -1)],
        [f32],
        (2, 8),
    )
    np.testing.assert_array_equal(halves[0], a)
    np.testing.assert_array_equal(halves[1], b)
    cat = _run_shape(
        lambda kb, x, y: kb.op(tt.CatOp, [tensor((4, 8), f32)], lhs=x, rhs=y),
        [a, b],
        [f32, f32],
        (4, 8),
    )
    np.testing.assert_array_equal(cat, np.concatenate([a, b]))


# the second half checks the interpreter's bounds error
@pytest.mark.only_on("interpreter")
def test_gather_along_axis_and_its_bounds_check():
    src = RNG.standard_normal((4, 8)).astype(np.float32)
    index = RNG.integers(0, 8, (4, 8), dtype=np.int32)

    def build(kb, s, i):
        return kb.op(tt.GatherOp, [tensor((4, 8), f32)], src=s, indices=i, axis=1)

    got = _run_shape(build, [src, index], [f32, i32], (4, 8))
    np.testing.assert_array_equal(got, np.take_along_axis(src, index, 1))
    index[2, 3] = 8
    with pytest.raises(InterpreterError, match="tl.gather index 8 out of range"):
        _run_shape(build, [src, index], [f32, i32], (4, 8))


def test_histogram_ignores_values_outside_the_bins():
    x = RNG.integers(-3, 20, 64, dtype=np.int32)
    got = _run_shape(
        lambda kb, t: kb.op(tt.HistogramOp, [tensor((16,), i32)], src=t),
        [x],
        [i32],
        (16,),
        i32,
        np.int32,
    )
    np.testing.assert_array_equal(got, np.bincount(x[(x >= 0) & (x < 16)], minlength=16))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_along_the_last_axis(descending):
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    got = _run_shape(
        lambda kb, t: kb.op(tt.SortOp, [t.type], src=t, axis=1, descending=descending),
        [x],
        [f32],
        (4, 16),
    )
    ref = np.sort(x, axis=1)
    np.testing.assert_array_equal(got, ref[:, ::-1] if descending else ref)


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    got = _run_shape(
        lambda kb, t: kb.op(tt.TopKOp, [tensor((4, 4), f32)], src=t, largest=largest),
        [x],
        [f32],
        (4, 4),
    )
    ref = np.sort(x, axis=1)
    np.testing.assert_array_equal(got, ref[:, ::-1][:, :4] if largest else ref[:, :4])


def test_hint_and_barrier_change_nothing():
    x = RNG.standard_normal(16).astype(np.float32)

    def build(kb, t):
        kb.op(tt.BarrierOp, [])
        return kb.op(tt.HintOp, [t.type], src=t, divisibility=(16,))

    np.testing.assert_array_equal(_run_shape(build, [x], [f32], (16,)), x)
