"""Debug mode in the NVPTX back end without a GPU: the PTX of a debug kernel holds a check of every load,
store and atomic and assembles with ptxas; the non-debug PTX has none; and, run on the CPU emulator,
a bad access or a failed device_assert raises the interpreter's error (kernel, line, argument,
element offset, program id) while masked-off lanes never count."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from cpu_emulator import Emulator
from debug_kernels import KERNELS, SIGNATURES, line_of, where

import tileworkbench as tw
from tileworkbench.errors import DeviceAssertionError, OutOfBoundsError

RNG = np.random.default_rng(14)
BLOCK = 32


def compile_debug(name: str, debug: bool = True, **constexprs):
    return tw.compile(KERNELS[name], signature=SIGNATURES[name], constexprs={"BLOCK": BLOCK, **constexprs},
                      target="sm_90", use_cache=False, debug=debug)


def entry_params(ptx: str) -> int:
    """The kernel's parameter count (the `.entry`'s, not the report function's)."""
    head = ptx[ptx.index(".entry "):]
    return head[: head.index(")")].count("_param_")


# -- the PTX ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kinds", [("shifted_copy", ["load", "store"]), ("histogram", ["load", "atomic"]),
                                         ("positive", ["load", "assert"])])
def test_debug_ptx_checks_each_access_and_assembles(name, kinds):
    kernel = compile_debug(name)
    ptx, info = kernel.asm["ptx"], kernel.metadata.debug_checks
    pointers = [i for i, kind in enumerate(SIGNATURES[name].values()) if kind.startswith("*")]
    assert info["pointer_params"] == pointers
    assert entry_params(ptx) == len(SIGNATURES[name]) + 2 * len(pointers) + 1  # ranges, error buffer
    assert [site["kind"] for site in info["sites"]] == kinds
    assert "tw_debug_report" in ptx and re.search(r"atom\.[\w.]*cas\.b32", ptx)
    assert ptx.count("setp.ge.u64") >= 1 and ptx.count("setp.le.u64") >= 1  # both ends of the range
    if shutil.which("ptxas"):
        assert kernel.cubin  # ptxas accepted it


def test_non_debug_ptx_is_unchanged_and_has_no_checks():
    plain, debug = compile_debug("shifted_copy", debug=False), compile_debug("shifted_copy")
    assert plain.metadata.debug_checks is None and not plain.metadata.debug
    assert entry_params(plain.asm["ptx"]) == len(SIGNATURES["shifted_copy"])
    assert "tw_debug_report" not in plain.asm["ptx"] and "cas" not in plain.asm["ptx"]
    assert debug.asm["ptx"] != plain.asm["ptx"]


def test_sites_name_the_line_and_the_argument():
    sites = compile_debug("shifted_copy").metadata.debug_checks["sites"]
    assert sites[0]["loc"][0][1] == line_of("BAD LOAD") and sites[0]["args"] == [0]
    assert sites[1]["loc"][0][1] == line_of("BAD STORE") and sites[1]["args"] == [1]


def test_a_pointer_picked_from_two_arguments_is_checked_against_both():
    sites = compile_debug("pick").metadata.debug_checks["sites"]
    assert sites[0]["kind"] == "load" and sites[0]["args"] == [0, 1]


def test_a_pointer_made_from_an_integer_is_left_unchecked_with_a_note():
    info = compile_debug("int_pointer").metadata.debug_checks
    assert [site["kind"] for site in info["sites"]] == ["store"]
    assert len(info["unchecked"]) == 1 and f"{where('UNCHECKED LOAD')}load not bounds-checked" in \
        info["unchecked"][0]


def test_debug_is_part_of_the_cache_key(wait_for_cache_entries):
    kernel = KERNELS["shifted_copy"]
    compile_args = dict(signature=SIGNATURES["shifted_copy"], constexprs={"BLOCK": BLOCK}, target="sm_90")
    plain, debug = tw.compile(kernel, **compile_args), tw.compile(kernel, **compile_args, debug=True)
    wait_for_cache_entries(2)
    again = tw.compile(kernel, **compile_args, debug=True)
    assert again.metadata.cache_hit and again.metadata.debug_checks == debug.metadata.debug_checks
    assert again.asm["ptx"] == debug.asm["ptx"] != plain.asm["ptx"]
    assert not tw.compile(kernel, **compile_args).metadata.debug


# -- run on the CPU emulator -------------------------------------------------------------------------
def emulate(name: str, grid, *args):
    emulator = Emulator(KERNELS[name], SIGNATURES[name], {"BLOCK": BLOCK}, num_warps=1, debug=True)
    emulator.launch(grid, *args)


def randn(n: int) -> np.ndarray:
    return RNG.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("shift, offset, pid", [(1, 2 * BLOCK, (1, 0, 0)), (-1, -1, (0, 0, 0))])
def test_out_of_bounds_load_is_caught(shift, offset, pid):
    x, out = randn(2 * BLOCK), np.full(2 * BLOCK, np.nan, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        emulate("shifted_copy", (2,), x, out, shift)
    message = str(info.value)
    assert message.startswith("out-of-bounds load in kernel 'shifted_copy_kernel' at ")
    assert where("BAD LOAD") in message.splitlines()[0]
    assert f"argument 'x_ptr' (float32[{2 * BLOCK}]) accessed at element offset {offset} " in message
    assert f"program id {pid}" in message
    good = np.arange(2 * BLOCK) + shift
    inside = (good >= 0) & (good < 2 * BLOCK)
    np.testing.assert_array_equal(out[inside], x[good[inside]])  # the other lanes ran
    assert np.all(out[~inside] == 0)  # the bad lane read 0 instead of memory past the array


def test_out_of_bounds_store_is_caught_and_suppressed():
    x = randn(2 * BLOCK)
    memory = np.full(2 * BLOCK, np.nan, np.float32)
    out = memory[: 2 * BLOCK - 1]  # one element short: the last lane stores past it
    with pytest.raises(OutOfBoundsError) as info:
        emulate("shifted_copy", (2,), x, out, 0)
    message = str(info.value)
    assert message.startswith("out-of-bounds store in kernel 'shifted_copy_kernel' at ")
    assert where("BAD STORE") in message.splitlines()[0]
    assert f"argument 'out_ptr' (float32[{2 * BLOCK - 1}]) accessed at element offset {2 * BLOCK - 1} " \
        in message and "program id (1, 0, 0)" in message
    np.testing.assert_array_equal(out, x[:-1])
    assert np.isnan(memory[-1])  # the bad store never happened


def test_out_of_bounds_atomic_is_caught():
    bins, n = 8, 2 * BLOCK - 5
    idx = RNG.integers(0, bins, n).astype(np.int32)
    idx[40] = bins + 3
    counts = np.zeros(bins, np.int32)
    with pytest.raises(OutOfBoundsError) as info:
        emulate("histogram", (2,), idx, counts, n)
    message = str(info.value)
    assert message.startswith("out-of-bounds atomic in kernel 'histogram_kernel' at ")
    assert where("BAD ATOMIC") in message.splitlines()[0]
    assert f"argument 'counts_ptr' (int32[{bins}]) accessed at element offset {bins + 3} " in message
    assert "program id (1, 0, 0)" in message
    np.testing.assert_array_equal(counts, np.bincount(np.delete(idx, 40), minlength=bins))


def test_two_dimensional_grid_names_the_program():
    rows, cols = 3, 48
    x, out = randn(rows * cols), np.full(rows * cols - 1, np.nan, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        emulate("rows", (2, rows), x, out, cols)
    message = str(info.value)
    assert where("BAD ROW STORE") in message and f"element offset {rows * cols - 1} " in message
    assert f"program id (1, {rows - 1}, 0)" in message


def test_masked_kernels_in_bounds_pass():
    n = 2 * BLOCK - 7  # a partial last block: its masked-off lanes point past the arrays
    x, y, out = randn(n), randn(n), np.full(n, np.nan, np.float32)
    emulate("masked_add", (2,), x, y, out, n)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    idx, counts = RNG.integers(0, 8, n).astype(np.int32), np.zeros(8, np.int32)
    emulate("histogram", (2,), idx, counts, n)
    np.testing.assert_array_equal(counts, np.bincount(idx, minlength=8))


def test_device_assert_names_message_line_program_and_index():
    x = np.abs(randn(2 * BLOCK)) + 0.5
    emulate("positive", (2,), x)
    x[BLOCK + 5] = -1.0
    with pytest.raises(DeviceAssertionError) as info:
        emulate("positive", (2,), x)
    message = str(info.value)
    assert message.startswith("device_assert failed: x must be positive in kernel 'positive_kernel' at ")
    assert where("ASSERT") in message.splitlines()[0]
    assert "program id (1, 0, 0), failing index (5,)" in message


def test_pointer_from_two_arguments():
    a, b, out = randn(BLOCK), randn(2 * BLOCK), np.full(BLOCK, np.nan, np.float32)
    emulate("pick", (1,), a, b, out, 1, 0)
    np.testing.assert_array_equal(out, a)
    emulate("pick", (1,), a, b, out, 0, BLOCK)  # in b, past a's end: fine, it may come from b
    np.testing.assert_array_equal(out, b[BLOCK:])
    with pytest.raises(OutOfBoundsError) as info:
        emulate("pick", (1,), a, b, out, 1, 1 << 26)
    message = str(info.value)
    assert where("PICK LOAD") in message and "note: the pointer may come from" in message


def test_a_vector_access_reports_its_first_bad_element():
    signature = {**SIGNATURES["masked_add"], "n": "i32:16"}  # n % 16 == 0: 16-byte vector accesses
    emulator = Emulator(KERNELS["masked_add"], signature, {"BLOCK": 128}, num_warps=1, debug=True)
    assert [site["vector"] for site in emulator.checks.sites] == [4, 4, 4]
    n = 256
    x, y, out = randn(n - 2), randn(n), np.full(n, np.nan, np.float32)  # x two elements short
    with pytest.raises(OutOfBoundsError) as info:
        emulator.launch((2,), x, y, out, n)
    assert f"argument 'x_ptr' (float32[{n - 2}]) accessed at element offset {n - 2} " in str(info.value)
    assert "program id (1, 0, 0)" in str(info.value)


def test_a_misaligned_access_is_caught():
    data = RNG.standard_normal(BLOCK + 1).astype(np.float32)
    raw, out = data.view(np.uint8), np.full(BLOCK, np.nan, np.float32)
    emulate("misaligned", (1,), raw, out, 4)
    np.testing.assert_array_equal(out, data[1:])
    with pytest.raises(OutOfBoundsError) as info:
        emulate("misaligned", (1,), raw, out, 2)
    message = str(info.value)
    assert message.startswith("misaligned load in kernel 'misaligned_kernel' at ")
    assert where("MISALIGNED LOAD") in message.splitlines()[0]
    assert f"argument 'bytes_ptr' (uint8[{4 * BLOCK + 4}]) accessed at byte offset " in message
    assert "not a multiple of the float32 element size 4" in message


def test_an_empty_array_takes_no_access():
    x, out = np.zeros(0, np.float32), np.full(BLOCK, np.nan, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"argument 'x_ptr' \(float32\[0\]\) accessed at element offset"):
        emulate("shifted_copy", (1,), x, out, 0)
