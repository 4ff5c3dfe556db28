"""What Triton's test_core.py asks of the language: tensor methods, Triton's error wording (kept inside our
place/caret/hint format), `>>` signedness, NaN-skipping argmax, early returns under compile-time `if`s,
one-element conditions, `tl.cat(dim=)`, `number.dtype`, `hasattr`, void if-expressions, launch errors
that name the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import poisoned, randint, randn

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import CompilationError, LaunchError

HERE = "test_lang_test_core_items.py"


@tw.jit
def methods_kernel(x_ptr, y_ptr, out_ptr, count_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    both = (x > 0).logical_and(y > 0).cast(tl.float32)
    either = (x > 0).logical_or(y > 0).to(tl.float32)
    (out_ptr + offs).store(x.cast(tl.float16).cast(tl.float32) + 10 * both + 100 * either)
    seven = tl.full((1,), 7, tl.int32).item()
    count_ptr.atomic_add(seven.cdiv(2))  # 4 per program
    count_ptr.atomic_max(0)


def test_tensor_methods(rng):
    x, y = randn(rng, 16), randn(rng, 16)
    out, count = poisoned((16,), np.float32), np.zeros(1, np.int32)
    methods_kernel[(3,)](x, y, out, count, 16)
    want = x.astype(np.float16).astype(np.float64) + 10 * ((x > 0) & (y > 0)) + 100 * ((x > 0) | (y > 0))
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert count[0] == 3 * 4


@tw.jit
def item_of_tile_kernel(out_ptr):
    tl.store(out_ptr, tl.arange(0, 4).item())


def test_item_needs_one_element():
    with pytest.raises(CompilationError, match=f"{HERE}:.*item\\(\\) needs a tile with one element"):
        item_of_tile_kernel[(1,)](np.zeros(1, np.int32))


@tw.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 8)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    if OP == "&":
        z = x & y
    elif OP == "/":
        z = x / y
    else:
        z = x >> y
    tl.store(out_ptr + offs, z)


def test_triton_wording_invalid_operands_keeps_place_and_hint():
    x = np.ones(8, np.float32)
    with pytest.raises(tw.TritonError, match="invalid operands of type") as info:
        binary_kernel[(1,)](x, np.ones(8, np.int32), x, "&")
    assert f"{HERE}:" in str(info.value) and "^" in str(info.value) and info.value.hint


def test_triton_wording_different_signedness():
    with pytest.raises(tw.TritonError, match="Cannot use .* because they have different signedness"):
        binary_kernel[(1,)](np.ones(8, np.int32), np.ones(8, np.uint32), np.ones(8, np.float32), "/")


def test_shift_right_follows_the_left_operands_signedness(rng):
    x = randint(rng, 8, np.int32)
    s = rng.integers(0, 31, 8).astype(np.uint32)
    out = poisoned((8,), np.int32)
    binary_kernel[(1,)](x, s, out, ">>")  # int32 >> uint32 promotes to uint32, but shifts arithmetically
    np.testing.assert_array_equal(out, x >> s.astype(np.int32))


@tw.jit
def arg_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.argmax(x, 0))
    tl.store(out_ptr + 1, tl.argmin(x, 0))


@pytest.mark.parametrize("nan_at", [0, 3, 7])
def test_argmax_argmin_skip_nan(rng, nan_at):
    x = randn(rng, 8)
    x[nan_at] = np.nan
    out = np.full(2, -1, np.int32)
    arg_kernel[(1,)](x, out, 8)
    assert list(out) == [np.nanargmax(x), np.nanargmin(x)]
    arg_kernel[(1,)](np.full(8, np.nan, np.float32), out, 8)
    assert list(out) == [0, 0]  # all NaN: the first index


@tw.jit
def early_exit_kernel(exit_ptr, out_ptr, MODE: tl.constexpr):
    if MODE == "dynamic":
        if tl.load(exit_ptr + tl.arange(0, 1)) != 0:  # a one-element tile as the condition
            tl.store(out_ptr, 0)
            return
    tl.store(out_ptr, 1)


@pytest.mark.parametrize("exit_early", [1, 0])
def test_runtime_return_inside_compile_time_if(exit_early):
    out = np.full(1, -1, np.int32)
    early_exit_kernel[(1,)](np.array([exit_early], np.int32), out, "dynamic")
    assert out[0] == (0 if exit_early else 1)


@tw.jit
def cat_kernel(x_ptr, y_ptr, out_ptr, DIM: tl.constexpr):
    rows, cols = tl.arange(0, 4), tl.arange(0, 8)
    x = tl.load(x_ptr + rows[:, None] * 8 + cols[None, :])
    y = tl.load(y_ptr + rows[:, None] * 8 + cols[None, :])
    z = tl.cat(x, y, dim=DIM)
    out_rows, out_cols = tl.arange(0, z.shape[0]), tl.arange(0, z.shape[1])
    tl.store(out_ptr + out_rows[:, None] * z.shape[1] + out_cols[None, :], z)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_along_a_dimension(rng, dim):
    x, y = randn(rng, (4, 8)), randn(rng, (4, 8))
    want = np.concatenate([x, y], axis=dim)
    out = poisoned(want.shape, np.float32)
    cat_kernel[(1,)](x, y, out, dim)
    np.testing.assert_array_equal(out, want)


@tw.jit
def python_values_kernel(out_ptr, x_ptr):
    value = 1
    x = tl.load(x_ptr)
    tl.static_assert(value.dtype == tl.int32 and hasattr(x, "dtype") and not hasattr(x, "nothing"))
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, x) if pid % 2 == 0 else tl.store(out_ptr + pid, -x)


def test_numbers_have_a_dtype_and_void_if_expressions(rng):
    x = randn(rng, 1)
    out = poisoned((4,), np.float32)
    python_values_kernel[(4,)](out, x)
    np.testing.assert_array_equal(out, [x[0], -x[0], x[0], -x[0]])
    assert tl.constexpr(5).type == tl.constexpr_type(5) != tl.constexpr_type(6)


@tw.jit
def expand_dims_kernel(out_ptr, AXES: tl.constexpr):
    t = tl.expand_dims(tl.arange(0, 8), AXES)
    tl.store(out_ptr + tl.arange(0, 8), tl.reshape(t, (8,)))


@pytest.mark.parametrize("axes, message", [(-3, "invalid axis -3"), (2, "invalid axis 2"),
                                           ((0, 0), "duplicate axes"), ((0, -3), "duplicate axes")])
def test_expand_dims_refuses_bad_axes(axes, message):
    with pytest.raises(CompilationError, match=f"{HERE}:.*{message}"):
        expand_dims_kernel[(1,)](np.zeros(8, np.int32), axes)


def test_invalid_slice_has_tritons_wording():
    @tw.jit
    def slice_kernel(x_ptr):
        tl.load(x_ptr + tl.arange(0, 8))[2:]

    with pytest.raises(tw.TritonError, match="unsupported tensor index"):
        slice_kernel[(1,)](np.zeros(8, np.float32))


@tw.jit
def store_n_kernel(x_ptr, n, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), n)


def test_a_str_argument_names_its_parameter():
    with pytest.raises(LaunchError, match="argument 'n' of store_n_kernel \\(got str 'hello'\\)"):
        store_n_kernel[(1,)](np.zeros(4, np.int32), "hello", 4)


@tw.jit
def const_pointer_kernel(in_ptr: tl.const, out_ptr, c_out: tl.const, USE_CONST: tl.constexpr):
    offs = tl.arange(0, 8)
    target = c_out if USE_CONST else out_ptr
    tl.store(target + offs, tl.load(in_ptr + offs))


def test_tl_const_pointers_are_read_only(rng):
    x, out = randn(rng, 8), poisoned((8,), np.float32)
    const_pointer_kernel[(1,)](x, out, out, False)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(CompilationError, match=f"{HERE}:.*Cannot store to a constant pointer") as info:
        const_pointer_kernel[(1,)](x, out, out, True)
    assert "Cannot store to a constant pointer" in info.value.error_message  # Triton's attribute


@tw.jit
def scalars_and_loop_kernel(x, y, z_ptr, n):
    z = tl.interleave(x, y)  # two scalars make a tile of 2
    tl.static_assert(z.shape == (2,))
    tl.store(z_ptr + tl.arange(0, 2), z)
    i = 0
    while tl.condition(i < n, disable_licm=True):
        i += 1
    tl.store(z_ptr + 2, i + tl.load(z_ptr + 3, cache_modifier=".cs"))


def test_interleave_of_scalars_condition_and_streaming_loads(tmp_path):
    z = np.array([np.nan, np.nan, np.nan, 0.5], np.float32)
    scalars_and_loop_kernel[(1,)](10, 20, z, 5)
    np.testing.assert_array_equal(z, [10, 20, 5.5, 0.5])
    compiled = tw.compile(scalars_and_loop_kernel, signature={"x": "i32", "y": "i32", "z_ptr": "*fp32", "n": "i32"},
                          target="sm_90")
    assert "ld.global.cs" in compiled.asm["ptx"]


@tw.jit
def sum_in_dtype_kernel(out_ptr, init, IN: tl.constexpr, OUT: tl.constexpr):
    x = tl.full((32, 32), init, dtype=IN)
    tl.store(out_ptr, tl.sum(x, dtype=OUT).to(tl.int32))


@pytest.mark.parametrize("init, in_dtype, out_dtype, want", [
    (1, tl.int1, None, 1024),  # int1 sums in int32 by default
    (1, tl.int1, tl.int1, 0),  # in int1, addition wraps (xor): 1024 ones give 0
    (7, tl.int8, tl.int8, (7 * 1024) % 256),
])
def test_sum_wraps_in_the_requested_dtype(init, in_dtype, out_dtype, want):
    out = np.full(1, -1, np.int32)
    sum_in_dtype_kernel[(1,)](out, init, in_dtype, out_dtype)
    assert out[0] == want


@tw.jit
def atomic_add_kernel(in_ptr, out_ptr):
    tl.atomic_add(out_ptr, tl.load(in_ptr))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16])
def test_narrow_integer_atomics_are_refused_as_in_triton(dtype):
    # the NVPTX back end has no 8/16-bit integer atomics either: the interpreter now agrees with it
    with pytest.raises(tw.TritonError, match=f"atomic_add does not support {np.dtype(dtype).name}"):
        atomic_add_kernel[(1,)](np.ones(1, dtype), np.zeros(1, dtype))


@tw.jit
def compare_scalars(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@tw.jit
def divmod_pairs(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@tw.jit
def map_elementwise_kernel(a_ptr, b_ptr, sign_ptr, quotient_ptr, remainder_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    tl.store(sign_ptr + offs, tl.map_elementwise(compare_scalars, a, b))
    quotient, remainder = tl.map_elementwise(divmod_pairs, a, b, pack=2)
    tl.store(quotient_ptr + offs, quotient)
    tl.store(remainder_ptr + offs, remainder)


def test_map_elementwise_with_branches_and_pack(rng):
    a = rng.integers(1, 1000, 32).astype(np.uint32)
    b = rng.integers(1, 1000, 32).astype(np.uint32)
    b[:4] = a[:4]  # some ties
    sign, quotient, remainder = (poisoned((32,), t) for t in (np.int32, np.uint32, np.uint32))
    map_elementwise_kernel[(1,)](a, b, sign, quotient, remainder, 32)
    np.testing.assert_array_equal(sign, np.sign(a.astype(np.int64) - b))
    np.testing.assert_array_equal(quotient, a // b)
    np.testing.assert_array_equal(remainder, a % b)
