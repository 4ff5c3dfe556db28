"""Kernels for the debug-mode tests (bounds checks and device asserts), shared by the PTX and emulator
tests (tests/nvptx/test_debug_checks.py) and the launch tests on every target
(tests/runtime/test_debug_launch.py). Each bad access is marked with a comment the tests look for in
the error's source text. `line_of(marker)` is the line a marker is on."""

from __future__ import annotations

from pathlib import Path

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def shifted_copy_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + shift)  # BAD LOAD
    tl.store(out_ptr + offs, x)  # BAD STORE


@tw.jit
def histogram_kernel(idx_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + idx, 1, mask=mask)  # BAD ATOMIC


@tw.jit
def rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """A 2-D grid: program (column block, row)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    row = tl.program_id(1) * n_cols
    x = tl.load(x_ptr + row + offs, mask=mask)
    tl.store(out_ptr + row + offs, x * 2.0, mask=mask)  # BAD ROW STORE


@tw.jit
def masked_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the lanes past n point out of bounds, and are masked off
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tw.jit
def positive_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.device_assert(x > 0, "x must be positive")  # ASSERT


@tw.jit
def pick_kernel(a_ptr, b_ptr, out_ptr, use_a, shift, BLOCK: tl.constexpr):
    """Loads through a pointer that is one of two arguments: checked against both."""
    offs = tl.arange(0, BLOCK)
    source = tl.where(use_a != 0, a_ptr, b_ptr)
    tl.store(out_ptr + offs, tl.load(source + offs + shift))  # PICK LOAD


@tw.jit
def int_pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Loads through a pointer made from an integer: not checked (a compile-time note says so)."""
    offs = tl.arange(0, BLOCK)
    source = x_ptr.to(tl.int64).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + offs, tl.load(source + offs))  # UNCHECKED LOAD


@tw.jit
def misaligned_kernel(bytes_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    """Reads float32 words from a byte array at a byte offset: misaligned unless it is a multiple of 4."""
    offs = tl.arange(0, BLOCK)
    words = (bytes_ptr + shift).to(tl.pointer_type(tl.float32), bitcast=True)
    tl.store(out_ptr + offs, tl.load(words + offs))  # MISALIGNED LOAD


SIGNATURES = {
    "shifted_copy": {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "shift": "i32"},
    "histogram": {"idx_ptr": "*i32:16", "counts_ptr": "*i32:16", "n": "i32"},
    "rows": {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n_cols": "i32"},
    "masked_add": {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"},
    "positive": {"x_ptr": "*fp32:16"},
    "pick": {"a_ptr": "*fp32:16", "b_ptr": "*fp32:16", "out_ptr": "*fp32:16", "use_a": "i32",
             "shift": "i32"},
    "int_pointer": {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16"},
    "misaligned": {"bytes_ptr": "*u8:16", "out_ptr": "*fp32:16", "shift": "i32"},
}
KERNELS = {
    "shifted_copy": shifted_copy_kernel, "histogram": histogram_kernel, "rows": rows_kernel,
    "masked_add": masked_add_kernel, "positive": positive_kernel, "pick": pick_kernel,
    "int_pointer": int_pointer_kernel, "misaligned": misaligned_kernel,
}


def line_of(marker: str) -> int:
    """The line number of the source line that ends with `# marker`."""
    for number, line in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"# {marker}"):
            return number
    raise KeyError(marker)


def where(marker: str) -> str:
    """`debug_kernels.py:<line>: `, as an error message names the place (after the folder)."""
    return f"debug_kernels.py:{line_of(marker)}: "
