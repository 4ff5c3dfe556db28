"""The memory access picture (interpreter recording hook), the mismatch map of a failed check and the
out-of-bounds view: program id and the offsets that went wrong."""

from __future__ import annotations

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends.interpreter.recording import RecordingMemory, record_program
from tileworkbench.workbench.mismatch import MismatchSection

pytest.importorskip("IPython")


@tw.jit
def copy_tail(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_recording_one_program_sees_its_offsets_and_masked_lanes():
    compiled = tw.compile(
        copy_tail, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64},
        target="interpreter",
    )
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    seen = record_program(compiled.ir, [x, out, 100], (2,), (1, 0, 0), ["x_ptr", "out_ptr", "n"])
    assert seen.error is None and [a.kind for a in seen.accesses] == ["load", "store"]
    load = seen.accesses[0]
    assert load.argument == "x_ptr" and load.offsets.tolist() == list(range(64, 128))
    assert load.mask.sum() == 36 and load.out_of_bounds().size == 0  # lanes past 100 masked off
    assert np.array_equal(out[64:], x[64:]) and np.isnan(out[:64]).all()  # only program 1 ran


def test_ordinary_runs_do_not_record():
    from tileworkbench.backends.interpreter import executor

    assert executor.Memory is not RecordingMemory  # the interpreter's hot path keeps plain Memory


CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + SHIFT, mask=MASK)
    tl.store(out_ptr + offs, x, mask=offs < n)

rng = np.random.default_rng()
n = 1000
x = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
shift_kernel[(tw.cdiv(n, 256),)](x, out, n, BLOCK=256)
"""


def test_launch_report_has_access_picture_and_mismatch_map(tilekernel):
    cell = CELL.replace("SHIFT", "0").replace("MASK", "offs < n - 300")  # last 300 never loaded
    reports = tilekernel("--target interpreter --ref x", cell)
    report = reports[0]
    titles = [s.title for s in report.sections]
    assert "where the check fails" in titles and "memory accesses of program (0, 0, 0)" in titles
    mismatch = next(s for s in report.sections if isinstance(s, MismatchSection))
    assert mismatch.bad.sum() == 300 and mismatch.block == 256
    assert "elements: 700-999" in mismatch.text() and "program ids): 2-3" in mismatch.text()[-1]
    page = report._repr_html_()
    assert 'alt="mismatch map"' in page and 'alt="access map"' in page
    assert "load x_ptr[1000] (line" in repr(report)


def test_out_of_bounds_launch_shows_program_and_offsets(tilekernel, capsys):
    from IPython.utils.capture import capture_output

    cell = CELL.replace("SHIFT", "8").replace("MASK", "offs < n")  # reads 8 past the end
    from tileworkbench.errors import OutOfBoundsError

    with capture_output() as captured, pytest.raises(OutOfBoundsError):  # the cell fails, after
        tilekernel("--target interpreter", cell)                    # showing the views
    views = [o.data.get("text/plain", "") for o in captured.outputs]
    text = "\n".join(views)
    assert "the out-of-bounds access: program (3, 0, 0)" in text, text
    assert "OUT OF BOUNDS at element offsets 1000, 1001" in text and "1007" in text


def test_mismatch_rows_and_columns_of_2d():
    bad = np.zeros((40, 30), bool)
    bad[5:7, 10] = True
    text = MismatchSection(bad).text()
    assert text == ["2 of 1200 elements differ", "rows: 5-6", "columns: 10"]


def test_any_program_on_request_and_sweep_needs_launches(tilekernel, capsys):
    cell = CELL.replace("SHIFT", "0").replace("MASK", "offs < n")
    report = tilekernel("--target interpreter", cell)[0]
    last = report.access_map((3,))
    assert last.title == "memory accesses of program (3, 0, 0)"
    assert "768..999" in repr(last) and "24 lanes masked off" in repr(last)
    with pytest.raises(Exception, match="does not combine with --signature"):  # the cell fails
        tilekernel('--signature "x_ptr=*fp32,out_ptr=*fp32,n=i32" --kernel shift_kernel '
                        '--sweep BLOCK=64,128', cell)


def test_out_of_bounds_picture_of_a_large_array_zooms_to_the_program():
    """1,000,003 elements binned whole would be 163 elements a cell: the program a thin line. The
    picture shows the program's rows and its neighbours', one element a cell, in the array's
    rows."""
    from tileworkbench.backends.interpreter.recording import Access
    from tileworkbench.workbench.access_map import COLORS, access_image, draw

    n, block, pid = 1_000_003, 1024, 976
    offsets = pid * block + np.arange(block)
    access = Access("load", "x_ptr", (n,), 7, "k.py:7", offsets, None)
    image, bins, (first, end) = access_image(access)
    assert bins == (1, 1) and image.shape[1] == 64
    assert first == (pid - 1) * block // 64 and end - first == image.shape[0] <= 96
    red = (image == COLORS["out of bounds"]).all(axis=2)
    loaded = (image == COLORS["load"]).all(axis=2)
    assert red.sum() == offsets[-1] + 1 - n and loaded.sum() == n - pid * block  # one cell each
    assert (image[: block // 64] == COLORS["untouched"]).all()  # the neighbour before, untouched
    small = Access("load", "x_ptr", (1000,), 7, "k.py:7", np.arange(768, 1024), None)
    assert access_image(small)[2] == (0, 16)  # a small array is drawn whole, as before
    assert draw(type("P", (), {"accesses": [access], "pid": (pid, 0, 0)})())
