"""Control flow in kernels: constexpr `if` folded away (no scf.if in the IR), runtime `if`/elif/else as
scf.if, `for` over range / tl.range / tl.static_range with positive and negative steps, `while`, tuples,
augmented assignment and early `return` in @jit helpers."""

from __future__ import annotations

import numpy as np
import pytest
from fe_util import assert_close, compile_tile, poisoned, randn

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def branch_kernel(x_ptr, out_ptr, flag, MODE: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if MODE == 0:
        y = x + 1
    elif MODE == 1:
        y = x * 2
    else:
        y = -x
    if flag > 10:  # runtime: scf.if carrying y
        y = y * 10
    elif flag > 0:
        y = y + 100
    else:
        y = y - 100
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("flag", [20, 5, -3])
def test_if_elif_else(rng, mode, flag):
    x = randn(rng, 16)
    out = poisoned(16, np.float32)
    branch_kernel[(1,)](x, out, flag, MODE=mode, N=16)
    x64 = x.astype(np.float64)
    y = [x64 + 1, x64 * 2, -x64][mode]
    y = y * 10 if flag > 10 else y + 100 if flag > 0 else y - 100
    assert_close(out, y, dtype=np.float32)


def test_constexpr_if_is_folded_and_runtime_if_is_scf_if():
    tile = compile_tile(branch_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "flag": "i32"},
                        {"MODE": 1, "N": 16})
    assert tile.count("scf.if") == 2  # the runtime if and its elif; the MODE chain left no branch
    assert "arith.mulf" in tile and "arith.negf" not in tile


@tw.jit
def constexpr_only_kernel(out_ptr, MODE: tl.constexpr):
    if MODE:
        v = 1
    else:
        v = 2
    tl.store(out_ptr, v)


def test_constexpr_only_branches_leave_no_scf():
    tile = compile_tile(constexpr_only_kernel, {"out_ptr": "*i32"}, {"MODE": True})
    assert "scf." not in tile


@tw.jit
def ifexp_kernel(x_ptr, out_ptr, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 2 if flag > 0 else x * 3)


@pytest.mark.parametrize("flag", [1, -1])
def test_runtime_if_expression(rng, flag):
    x = randn(rng, 16)
    out = poisoned(16, np.float32)
    ifexp_kernel[(1,)](x, out, flag, N=16)
    assert_close(out, x.astype(np.float64) * (2 if flag > 0 else 3), dtype=np.float32)


@tw.jit
def loops_kernel(x_ptr, out_ptr, start, stop, step, N: tl.constexpr):
    offs = tl.arange(0, N)
    acc = tl.zeros((N,), tl.float32)
    count = 0
    for i in range(start, stop, step):  # runtime bounds and step (positive here)
        acc += tl.load(x_ptr + i * N + offs)
        count += 1
    for j in tl.range(stop - 1, start - 1, -2):  # runtime bounds, constant negative step
        acc -= tl.load(x_ptr + j * N + offs) * 0.5
        count += 1
    for k in tl.static_range(3, 0, -1):
        acc += k
    tl.store(out_ptr + offs, acc + count.to(tl.float32) * 1000)


@pytest.mark.parametrize("start,stop,step", [(0, 7, 1), (1, 7, 2), (5, 3, 1), (2, 6, 3)])
def test_for_loops(rng, start, stop, step):
    n = 16
    x = randn(rng, (8, n))
    out = poisoned(n, np.float32)
    loops_kernel[(1,)](x, out, start, stop, step, N=n)
    x64 = x.astype(np.float64)
    first, second = list(range(start, stop, step)), list(range(stop - 1, start - 1, -2))
    want = sum((x64[i] for i in first), np.zeros(n)) - 0.5 * sum((x64[j] for j in second), np.zeros(n))
    want = want + 6 + 1000 * (len(first) + len(second))
    assert_close(out, want, rtol=1e-5, atol=1e-4)


@tw.jit
def while_kernel(out_ptr, n, limit):
    # Collatz steps of n (scalar loop-carried values of two types)
    steps = 0
    value = n.to(tl.int64)
    while value != 1 and steps < limit:
        if value % 2 == 0:
            value = value // 2
        else:
            value = 3 * value + 1
        steps += 1
    tl.store(out_ptr, steps)
    tl.store(out_ptr + 1, value.to(tl.int32))


@pytest.mark.parametrize("n", [1, 6, 27, 97])
def test_while_loop(n):
    steps, value = 0, n
    while value != 1 and steps < 1000:
        value = value // 2 if value % 2 == 0 else 3 * value + 1
        steps += 1
    out = poisoned(2, np.int32)
    while_kernel[(1,)](out, n, 1000)
    np.testing.assert_array_equal(out, [steps, value])


@tw.jit
def tuples_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    pair = (tl.load(x_ptr + offs), tl.load(x_ptr + N + offs))
    a, b = pair
    b, a = a, b  # swap through a tuple
    acc = (a * 0, b * 0)
    for i in range(3):
        acc = (acc[0] + a, acc[1] + b)  # a tuple carried through a loop
    x = acc[0]
    x -= b
    x *= 2.0
    x /= 4.0
    tl.store(out_ptr + offs, x)


def test_tuples_and_augmented_assignment(rng):
    x = randn(rng, (2, 16))
    out = poisoned(16, np.float32)
    tuples_kernel[(1,)](x, out, N=16)
    a, b = x[1].astype(np.float64), x[0].astype(np.float64)
    assert_close(out, (3 * a - b) * 2 / 4, rtol=1e-5, atol=1e-5)  # 3a - b may cancel


@tw.jit
def pick(a, b, USE_A: tl.constexpr):
    if USE_A:
        return a
    return b


@tw.jit
def pick_runtime(a, b, flag):
    if flag > 0:
        return a * 2
    else:
        return b


@tw.jit
def clipped(x, lo):
    if lo > 0:
        return tl.maximum(x, lo)
    return x


@tw.jit
def return_kernel(x_ptr, y_ptr, out_ptr, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    r = pick(x, y, True) + pick(x, y, False) * 10
    r += pick_runtime(x, y, flag) * 100
    r += clipped(x, flag.to(tl.float32)) * 1000
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("flag", [2, -1])
def test_early_return_in_helpers(rng, flag):
    x, y = randn(rng, 16), randn(rng, 16)
    out = poisoned(16, np.float32)
    return_kernel[(1,)](x, y, out, flag, N=16)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = x64 + 10 * y64 + 100 * (x64 * 2 if flag > 0 else y64)
    want += 1000 * (np.maximum(x64, flag) if flag > 0 else x64)
    assert_close(out, want, rtol=1e-5, atol=1e-3)  # terms up to ~1000 may cancel


@tw.jit
def tuple_counter_kernel(out_ptr, n):
    state = (tl.zeros((4,), tl.float32), 0)  # a plain int inside a carried tuple
    for i in range(n):
        state = (state[0] + 1, state[1] + 2)
    k = (0, 1.5)
    while k[0] < n:
        k = (k[0] + 1, k[1] * 2)
    tl.store(out_ptr + tl.arange(0, 4), state[0] + state[1] + k[1])


@pytest.mark.parametrize("n", [0, 3])
def test_numbers_inside_carried_tuples_are_loop_values(n):
    """The int inside the tuple used to keep its initial value after the loop (a silent wrong answer)."""
    out = poisoned(4, np.float32)
    tuple_counter_kernel[(1,)](out, n)
    np.testing.assert_array_equal(out, np.full(4, n + 2 * n + 1.5 * 2**n))
