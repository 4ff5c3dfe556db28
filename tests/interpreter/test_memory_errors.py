"""Bounds checks: every bad access raises OutOfBoundsError naming the kernel, the argument, the element
offset, the program id and the kernel line; masked-off lanes never touch memory."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kernels import KernelBuilder, f32, i32, i64, poisoned, ptr, tensor

from tileworkbench.backends.interpreter import run
from tileworkbench.errors import InterpreterError, OutOfBoundsError
from tileworkbench.ir.ops import arith, tt

pytestmark = pytest.mark.only_on("interpreter")  # about the interpreter itself

RNG = np.random.default_rng(7)


def _copy(block: int, masked: bool, shift: int = 0):
    """out[pid*block + i + shift] = x[pid*block + i + shift], masked by < n when `masked`."""
    kb = KernelBuilder("copy_kernel", [("x_ptr", ptr(f32)), ("out_ptr", ptr(f32)), ("n", i32)])
    start = kb.binary(arith.MulIOp, kb.pid(0), kb.const(block, i32))
    offs = kb.binary(arith.AddIOp, kb.splat(start, (block,)), kb.arange(block))
    offs = kb.binary(arith.AddIOp, offs, kb.const(shift, tensor((block,), i32)))
    mask = kb.cmpi("slt", offs, kb.splat(kb["n"], (block,))) if masked else None
    x = kb.load(kb.addptr(kb["x_ptr"], offs), mask)  # LOAD LINE
    kb.store(kb.addptr(kb["out_ptr"], offs), x, mask)  # STORE LINE
    return kb.finish()


NAMES = ["x_ptr", "out_ptr", "n"]


def test_unmasked_load_past_the_end_names_everything():
    x, out = RNG.standard_normal(100).astype(np.float32), poisoned(100)
    with pytest.raises(OutOfBoundsError) as info:
        run(_copy(64, masked=False), [x, out, 100], (2,), NAMES)
    message = str(info.value)
    assert "out-of-bounds load" in message
    assert "'copy_kernel'" in message
    assert "'x_ptr'" in message
    assert "element offset 100" in message
    assert "program id (1, 0, 0)" in message
    assert "test_memory_errors.py:" in message and "# LOAD LINE" in message  # the source text
    np.testing.assert_array_equal(out[:64], x[:64])  # program 0 ran before program 1 failed


def test_masked_tail_runs_cleanly():
    x, out = RNG.standard_normal(100).astype(np.float32), poisoned(100)
    run(_copy(64, masked=True), [x, out, 100], (2,), NAMES)
    np.testing.assert_array_equal(out, x)


def test_store_past_the_end_names_the_output():
    x, out = RNG.standard_normal(128).astype(np.float32), poisoned(100)
    with pytest.raises(OutOfBoundsError) as info:
        run(_copy(64, masked=False), [x, out, 100], (2,), NAMES)
    message = str(info.value)
    assert "out-of-bounds store" in message and "'out_ptr'" in message
    assert "element offset 100" in message and "# STORE LINE" in message


def test_negative_offset():
    x, out = RNG.standard_normal(64).astype(np.float32), poisoned(64)
    with pytest.raises(OutOfBoundsError) as info:
        run(_copy(64, masked=False, shift=-3), [x, out, 64], (1,), NAMES)
    assert "element offset -3" in str(info.value) and "'x_ptr'" in str(info.value)


def test_an_in_bounds_view_cannot_reach_the_rest_of_its_base_array():
    base = RNG.standard_normal(200).astype(np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        run(_copy(64, masked=False), [base[:100], poisoned(128), 128], (2,), NAMES)
    assert "element offset 100" in str(info.value)


def test_misaligned_access_raises():
    """A pointer bitcast from f32* to i64* at an odd f32 offset is not 8-byte aligned."""
    kb = KernelBuilder("misaligned", [("x_ptr", ptr(f32)), ("out_ptr", ptr(i64))])
    shifted = kb.addptr(kb["x_ptr"], kb.const(1, i32))
    wide = kb.op(tt.PtrBitcastOp, [ptr(i64)], operand=shifted)
    kb.store(kb["out_ptr"], kb.load(wide))
    x, out = np.zeros(8, np.float32) + 1, np.zeros(1, np.int64)
    with pytest.raises(OutOfBoundsError) as info:
        run(kb.finish(), [x, out], (1,), ["x_ptr", "out_ptr"])
    message = str(info.value)
    assert "misaligned load" in message and "'x_ptr'" in message and "byte offset 4" in message


def test_pointer_to_no_argument():
    kb = KernelBuilder("wild", [("x_ptr", ptr(f32))])
    wild = kb.op(tt.IntToPtrOp, [ptr(f32)], operand=kb.const(4096, i64))
    kb.store(wild, kb.const(1.0, f32))
    with pytest.raises(OutOfBoundsError, match="does not point into any array argument"):
        run(kb.finish(), [np.zeros(4, np.float32)], (1,))


def test_a_host_address_made_a_pointer_is_named_not_blamed_on_an_argument():
    """A real address (tensor.data_ptr() in a device array, Triton tutorial 08) lands in some
    argument's region by chance; the error says the interpreter cannot follow it, not
    'offset -10^12 of x_ptr'."""
    from tileworkbench.backends.interpreter.memory import REGION_BITS

    kb = KernelBuilder("host_address", [("x_ptr", ptr(f32)), ("addr", i64)])
    foreign = kb.op(tt.IntToPtrOp, [ptr(f32)], operand=kb["addr"])
    kb.store(foreign, kb.const(1.0, f32))
    x = np.zeros(4, np.float32)
    address = (1 << REGION_BITS) + 12345 * 4  # region of x_ptr, far below its bytes
    with pytest.raises(InterpreterError, match="not derived from any array argument") as info:
        run(kb.finish(), [x, np.int64(address)], (1,))
    assert "'host_address'" in str(info.value) and "run the kernel on a GPU" in str(info.value)
    assert not x.any()


def test_atomic_out_of_bounds():
    kb = KernelBuilder("atomic_oob", [("x_ptr", ptr(f32))])
    kb.atomic("fadd", kb.addptr(kb["x_ptr"], kb.arange(8)), kb.const(1.0, tensor((8,), f32)))
    x = np.zeros(4, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        run(kb.finish(), [x], (1,), ["x_ptr"])
    assert "out-of-bounds atomic" in str(info.value) and "element offset 4" in str(info.value)
    assert (x == 0).all()  # nothing was applied


def test_zero_size_argument_rejects_every_access():
    x = np.zeros(0, np.float32)
    with pytest.raises(OutOfBoundsError, match="element offset 0"):
        run(_copy(4, masked=False), [x, poisoned(4), 0], (1,), NAMES)


def test_wrong_argument_count_and_kind():
    with pytest.raises(InterpreterError, match="takes 3 arguments, got 2"):
        run(_copy(4, masked=True), [np.zeros(4, np.float32), 4], (1,))
    with pytest.raises(InterpreterError, match="'x_ptr' is a pointer parameter"):
        run(_copy(4, masked=True), [1.0, poisoned(4), 4], (1,), NAMES)


def test_store_into_a_read_only_array_is_refused():
    x = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    out.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only argument 'out_ptr'"):
        run(_copy(64, masked=False), [x, out, 64], (1,), NAMES)
    assert (out == 0).all()
    readable = x.copy()
    readable.flags.writeable = False
    result = poisoned(64)
    run(_copy(64, masked=False), [readable, result, 64], (1,), NAMES)  # reading is fine
    np.testing.assert_array_equal(result, x)
