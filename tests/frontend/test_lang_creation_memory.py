"""Program ids, tile creation (arange, zeros, zeros_like, full), load/store with masks, `other` and
pointer arithmetic, and tl.where, each checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import BF16, assert_close, poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def program_ids_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    flat = (z * ny + y) * nx + x
    offs = tl.arange(0, 8)
    vals = tl.where(offs == 0, x, tl.where(offs == 1, y, tl.where(offs == 2, z, tl.where(
        offs == 3, nx, tl.where(offs == 4, ny, nz)))))
    tl.store(out_ptr + flat * 8 + offs, vals, mask=offs < 6)


def test_program_id_and_num_programs():
    grid = (3, 2, 4)
    out = poisoned((4, 2, 3, 8), np.int32)
    program_ids_kernel[grid](out)
    z, y, x = np.meshgrid(range(4), range(2), range(3), indexing="ij")
    want = np.stack([x, y, z, np.full_like(x, 3), np.full_like(x, 2), np.full_like(x, 4)], -1)
    np.testing.assert_array_equal(out[..., :6], want)
    assert (out[..., 6:] == np.iinfo(np.int32).max - 3).all()  # masked lanes stay untouched


@tw.jit
def arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr):
    r = tl.arange(START, END)
    tl.store(out_ptr + r - START, r)


@pytest.mark.parametrize("start,end", [(0, 1), (0, 64), (5, 13), (-4, 4)])
def test_arange(start, end):
    out = poisoned(end - start, np.int32)
    arange_kernel[(1,)](out, START=start, END=end)
    np.testing.assert_array_equal(out, np.arange(start, end, dtype=np.int32))


@tw.jit
def fill_kernel(z_ptr, zl_ptr, f_ptr, x_ptr, VALUE: tl.constexpr, DTYPE: tl.constexpr):
    rows = tl.arange(0, 4)[:, None]
    cols = tl.arange(0, 8)[None, :]
    offs = rows * 8 + cols
    z = tl.zeros((4, 8), DTYPE)
    tl.static_assert(z.dtype == DTYPE)
    tl.store(z_ptr + offs, z)
    x = tl.load(x_ptr + offs)
    zl = tl.zeros_like(x)
    tl.static_assert(zl.dtype == x.dtype and zl.shape == x.shape)
    tl.store(zl_ptr + offs, zl + 1)
    f = tl.full([4, 8], VALUE, DTYPE)
    tl.static_assert(f.dtype == DTYPE)
    tl.store(f_ptr + offs, f)


@pytest.mark.parametrize("np_dtype,tl_dtype,value", [
    (np.float32, tl.float32, 2.5), (np.float16, tl.float16, -1.25), (BF16, tl.bfloat16, 3.0),
    (np.int8, tl.int8, -7), (np.uint16, tl.uint16, 60000), (np.int64, tl.int64, 2**40 + 3),
])
def test_zeros_zeros_like_full(rng, np_dtype, tl_dtype, value):
    z, zl, f = (poisoned((4, 8), np_dtype) for _ in range(3))
    x = randn(rng, (4, 8), np_dtype) if np.dtype(np_dtype).kind == "f" or np_dtype == BF16 \
        else randint(rng, (4, 8), np_dtype, 0, 100)
    fill_kernel[(1,)](z, zl, f, x, VALUE=value, DTYPE=tl_dtype)
    np.testing.assert_array_equal(z.astype(np.float64), 0)
    np.testing.assert_array_equal(zl.astype(np.float64), 1)
    np.testing.assert_array_equal(f.astype(np.float64), value)


@tw.jit
def masked_copy_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # `other` fills masked-off lanes; the store writes every lane of the padded output.
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER, cache_modifier=".cg",
                eviction_policy="evict_last")
    tl.store(out_ptr + offs, x * 2, cache_modifier=".cs", eviction_policy="evict_first")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_load_mask_other_and_cache_hints(rng, dtype):
    n, block = 37, 16
    x = randn(rng, n, np.float32, 10).astype(dtype)
    out = poisoned(48, dtype)
    masked_copy_kernel[(3,)](x, out, n, OTHER=-3, BLOCK=block)
    want = np.concatenate([x.astype(np.float64) * 2, np.full(48 - n, -6.0)])
    assert_close(out, want, rtol=0 if dtype == np.int32 else 1e-3)


@tw.jit
def strided_gather_kernel(x_ptr, out_ptr, stride, n_rows, BLOCK: tl.constexpr):
    # pointer arithmetic: a tile of pointers built from a scalar pointer, a scalar offset and a tile
    row = tl.program_id(0)
    row_ptr = x_ptr + row * stride
    cols = tl.arange(0, BLOCK)
    ptrs = row_ptr + cols * 2 + 1  # every other element, starting at 1
    vals = tl.load(ptrs, mask=cols < stride // 2)
    back = ptrs - 1  # subtracting an offset from a pointer tile
    prev = tl.load(back, mask=cols < stride // 2, other=0.0)
    tl.store(out_ptr + row * BLOCK + cols, vals - prev, mask=cols < stride // 2)


def test_pointer_arithmetic(rng):
    rows, stride, block = 3, 12, 8
    x = randn(rng, (rows, stride))
    out = poisoned((rows, block), np.float32)
    strided_gather_kernel[(rows,)](x, out, stride, rows, BLOCK=block)
    want = x[:, 1::2].astype(np.float64) - x[:, 0::2]
    assert_close(out[:, :6], want, dtype=np.float32)
    assert np.isnan(out[:, 6:]).all()


@tw.jit
def scalar_load_store_kernel(x_ptr, out_ptr):
    # a scalar pointer loads and stores a scalar
    a = tl.load(x_ptr)
    b = tl.load(x_ptr + 1)
    tl.store(out_ptr, a * b)
    tl.store(out_ptr + 1, a - b)


def test_scalar_load_store(rng):
    x = randn(rng, 2)
    out = poisoned(2, np.float32)
    scalar_load_store_kernel[(1,)](x, out)
    x64 = x.astype(np.float64)
    assert_close(out, [x64[0] * x64[1], x64[0] - x64[1]], dtype=np.float32)


@tw.jit
def where_kernel(c_ptr, x_ptr, y_ptr, out_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + offs)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.where(c, x, y))
    # broadcasting of a scalar side, and a 2-D condition against 1-D values
    tl.store(s_ptr + offs, tl.where(x > y, x, 0.5))


def test_where(rng):
    n = 64
    c = rng.random(n) < 0.5
    x, y = randn(rng, n), randn(rng, n)
    out, s = poisoned(n, np.float32), poisoned(n, np.float32)
    where_kernel[(1,)](c, x, y, out, s, BLOCK=n)
    assert_close(out, np.where(c, x, y), dtype=np.float32)
    assert_close(s, np.where(x > y, x, 0.5), dtype=np.float32)


@tw.jit
def bool_store_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) > 0)


def test_int1_pointers_load_and_store_bytes(rng):
    x = randn(rng, 32)
    out = poisoned(32, np.bool_)
    bool_store_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, x > 0)
