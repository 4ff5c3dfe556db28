"""Atomics (duplicates within a tile accumulate in lane order, results are old values) and the debugging
ops: device_print, device_assert and assume."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kernels import KernelBuilder, f32, i1, i32, poisoned, ptr, tensor, run

from tileworkbench.errors import InterpreterError
from tileworkbench.ir import verify
from tileworkbench.ir.ops import arith, tt

RNG = np.random.default_rng(11)
N = 64


def _atomic_kernel(kind, element, masked=False):
    """old[i] = atomic_<kind>(dst + index[i], val[i]) for one program of N lanes."""
    kb = KernelBuilder(
        "atomic_kernel",
        [
            ("dst", ptr(element)),
            ("index", ptr(i32)),
            ("val", ptr(element)),
            ("old", ptr(element)),
            ("mask", ptr(i1)),
        ],
    )
    offs = kb.arange(N)
    index = kb.load(kb.addptr(kb["index"], offs))
    value = kb.load(kb.addptr(kb["val"], offs))
    mask = kb.load(kb.addptr(kb["mask"], offs)) if masked else None
    old = kb.atomic(kind, kb.addptr(kb["dst"], index), value, mask)
    kb.store(kb.addptr(kb["old"], offs), old)
    func = kb.finish()
    verify(func)
    return func


_OPS = {
    "add": lambda a, b: a + b,
    "fadd": lambda a, b: a + b,
    "max": max,
    "min": min,
    "xchg": lambda a, b: b,
    "xor": lambda a, b: a ^ b,
}


def _sequential(kind, dst, index, val, mask):
    """The reference: lanes applied one after another."""
    dst, old = dst.copy(), np.zeros_like(val)
    for lane in range(len(index)):
        if mask[lane]:
            old[lane] = dst[index[lane]]
            dst[index[lane]] = _OPS[kind](dst[index[lane]], val[lane])
    return dst, old


def _some_order_explains(kind, start, index, val, mask, old, final) -> bool:
    """Whether some order of the lanes, applied one at a time, gives every lane's old value and the final
    values: what atomics promise where lanes share an address (the interpreter's order is the lanes'
    own; a GPU's is not defined)."""
    op = _OPS[kind]

    def explain(current, lanes, target) -> bool:
        if not lanes:
            return current == target
        tried = set()
        for i, lane in enumerate(lanes):
            if old[lane] == current and (old[lane], val[lane]) not in tried:
                tried.add((old[lane], val[lane]))
                if explain(op(current, val[lane]), lanes[:i] + lanes[i + 1:], target):
                    return True
        return False

    for address in range(len(start)):
        lanes = [lane for lane in range(len(index)) if mask[lane] and index[lane] == address]
        if not explain(start[address], lanes, final[address]):
            return False
    return True


@pytest.mark.parametrize(
    "kind, dtype, element",
    [
        ("fadd", np.float32, f32),
        ("add", np.int32, i32),
        ("max", np.int32, i32),
        ("min", np.int32, i32),
        ("xchg", np.int32, i32),
        ("xor", np.int32, i32),
    ],
)
@pytest.mark.parametrize("masked", [False, True])
def test_atomics_with_duplicate_addresses(kind, dtype, element, masked):
    index = RNG.integers(0, 8, N, dtype=np.int32)  # many lanes share each of 8 addresses
    if dtype == np.float32:
        val = RNG.integers(-8, 8, N).astype(np.float32)  # exact sums: order-independent check
        dst = RNG.integers(-8, 8, 8).astype(np.float32)
    else:
        val, dst = RNG.integers(-100, 100, N, dtype=dtype), RNG.integers(-100, 100, 8, dtype=dtype)
    mask = RNG.random(N) < 0.7 if masked else np.ones(N, np.bool_)
    start = dst.copy()
    ref_dst, ref_old = _sequential(kind, dst, index, val, mask)
    old = poisoned(N, dtype)
    run(_atomic_kernel(kind, element, masked), [dst, index, val, old, mask], (1,))
    if kind != "xchg":  # every order gives the same final values (exact sums for fadd)
        np.testing.assert_array_equal(dst, ref_dst)
    assert _some_order_explains(kind, start, index, val, mask, old, dst)
    # and the check can fail: an old value no order can produce (every value here stays within +-7000)
    wrong = old.copy()
    wrong[np.flatnonzero(mask)[0]] = 10**6
    assert not _some_order_explains(kind, start, index, val, mask, wrong, dst)


def test_atomic_add_across_programs_builds_a_histogram():
    values = RNG.integers(0, 10, N * 4, dtype=np.int32)
    kb = KernelBuilder("hist", [("x", ptr(i32)), ("bins", ptr(i32))])
    start = kb.binary(arith.MulIOp, kb.pid(0), kb.const(N, i32))
    x = kb.load(kb.addptr(kb["x"], kb.binary(arith.AddIOp, kb.splat(start, (N,)), kb.arange(N))))
    kb.atomic("add", kb.addptr(kb["bins"], x), kb.const(1, tensor((N,), i32)))
    bins = np.zeros(10, np.int32)
    run(kb.finish(), [values, bins], (4,))
    np.testing.assert_array_equal(bins, np.bincount(values, minlength=10))


def test_atomic_cas_swaps_only_where_equal():
    kb = KernelBuilder("cas", [("dst", ptr(i32)), ("old", ptr(i32))])
    offs = kb.arange(8)
    compare = kb.binary(arith.RemSIOp, offs, kb.const(2, tensor((8,), i32)))
    old = kb.op(
        tt.AtomicCASOp,
        [tensor((8,), i32)],
        ptr=kb.addptr(kb["dst"], offs),
        cmp=compare,
        val=kb.const(7, tensor((8,), i32)),
    )
    kb.store(kb.addptr(kb["old"], offs), old)
    dst, out = np.array([0, 0, 1, 1, 0, 1, 2, 1], np.int32), poisoned(8, np.int32)
    before = dst.copy()
    run(kb.finish(), [dst, out], (1,))
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(dst, np.where(before == np.arange(8) % 2, 7, before))


def _check_kernel(cls, **attrs):
    kb = KernelBuilder("checked", [("x", ptr(f32))])
    x = kb.load(kb.addptr(kb["x"], kb.arange(16)))
    positive = kb.cmpf("ogt", x, kb.const(0.0, tensor((16,), f32)))
    kb.op(cls, [], condition=positive, **attrs)  # CHECK LINE
    return kb.finish()


# the interpreter's own report (InterpreterError with the failing index)
@pytest.mark.only_on("interpreter")
def test_device_assert_reports_message_line_and_first_failing_index():
    x = np.abs(RNG.standard_normal(16)).astype(np.float32) + 1
    run(_check_kernel(tt.AssertOp, message="x must be positive"), [x], (2,))
    x[[5, 9]] = -1.0
    with pytest.raises(InterpreterError) as info:
        run(_check_kernel(tt.AssertOp, message="x must be positive"), [x], (2,))
    message = str(info.value)
    assert "device_assert failed: x must be positive" in message
    assert "# CHECK LINE" in message and "first failing index (5,)" in message
    assert "program id (0, 0, 0)" in message


@pytest.mark.only_on("interpreter")  # compiled, a false assume is undefined behaviour
def test_assume_is_checked():
    x = -np.abs(RNG.standard_normal(16)).astype(np.float32)
    with pytest.raises(InterpreterError, match="tl.assume condition is false"):
        run(_check_kernel(tt.AssumeOp), [x], (1,))


@pytest.mark.only_on("interpreter")  # the interpreter's stdout callback
def test_device_print_writes_one_line_per_element():
    kb = KernelBuilder("printer", [("x", ptr(i32)), ("n", i32)])
    x = kb.load(kb.addptr(kb["x"], kb.arange(4)))
    kb.op(tt.PrintOp, [], args=[x], prefix="x: ")
    kb.op(tt.PrintOp, [], args=[kb["n"]], prefix="n = ", hex=True)
    lines = []
    values = RNG.integers(-50, 50, 4, dtype=np.int32)
    run(kb.finish(), [values, 255], (2,), stdout=lines.append)
    assert len(lines) == 2 * (4 + 1)
    assert lines[0] == f"pid (0, 0, 0) idx (0) x: {values[0]}"
    assert lines[3] == f"pid (0, 0, 0) idx (3) x: {values[3]}"
    assert lines[4] == "pid (0, 0, 0) idx () n = ff"  # printf's %x, as on the GPU
    assert lines[5].startswith("pid (1, 0, 0) idx (0) x: ")


@pytest.mark.only_on("interpreter")  # the interpreter's stdout callback
def test_device_print_formats_floats_like_printf():
    kb = KernelBuilder("printer2d", [("x", ptr(f32))])
    offs = kb.arange(6)
    x = kb.load(kb.addptr(kb["x"], offs))
    kb.op(tt.PrintOp, [], args=[kb.op(tt.ReshapeOp, [tensor((2, 3), f32)], src=x)], prefix="v: ")
    lines = []
    values = np.array([1.5, -2.25, 0.0, 3.0, 1e-7, 100.125], np.float32)
    run(kb.finish(), [values], (1,), stdout=lines.append)
    assert lines[1] == "pid (0, 0, 0) idx (0, 1) v: -2.250000"
    assert lines[5] == "pid (0, 0, 0) idx (1, 2) v: 100.125000"
    assert len(lines) == 6
