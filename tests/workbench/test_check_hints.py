"""The check's hints are earned: tf32 only for a kernel with an fp32 tl.dot, fp16/bf16 only where the
kernel holds such values, and a float64 kernel off by fp32 rounding hears about float literals."""

from __future__ import annotations

import numpy as np
import pytest

from tileworkbench.workbench.check import compare

pytest.importorskip("IPython")


def test_plain_fp32_kernel_off_by_one_percent_gets_no_rounding_hint():
    rng = np.random.default_rng(5)
    ref = rng.standard_normal(4096)
    out = (ref * 1.01).astype(np.float32)
    result = compare(out, ref)
    assert not result.passed and result.hint is None


def test_fp16_hint_needs_fp16_in_the_kernel():
    rng = np.random.default_rng(6)
    ref = rng.standard_normal(4096)
    out = ref.astype(np.float16).astype(np.float32)
    assert compare(out, ref).hint is None
    assert "fp16" in compare(out, ref, kernel_types=frozenset({"f16"})).hint


SCALE_CELL = """
import numpy as np
import tileworkbench as tw
import tileworkbench.language as tl

@tw.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 0.1, mask=mask)

x = np.random.default_rng(7).standard_normal(1000)
out = np.full_like(x, np.nan)
scale_kernel[(tw.cdiv(x.size, 256),)](x, out, x.size, BLOCK=256)
"""


def test_float64_kernel_with_a_float_literal_explains_the_fp32_rule(real_shell):
    real_shell.run_cell_magic(
        "tilekernel", "--target interpreter --no-roofline --ref 'x * 0.1'", SCALE_CELL
    )
    check = real_shell.user_ns["_tilekernel_reports"][0].check
    assert not check.passed and check.dtype == "float64"
    assert "fp32 constant" in check.hint and "np.float64(0.1)" in check.hint
