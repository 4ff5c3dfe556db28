"""tools/run_test_core.py on a small stand-in for Triton's test_core.py (written here, in Triton's
style): `triton` resolves to tileworkbench, `_internal_testing` and the `device` fixture work, kernels
built with `exec` compile, the per-function case limit holds and the counts and JSON are right."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STAND_IN = textwrap.dedent('''
    import numpy as np
    import pytest
    import triton
    import triton.language as tl
    from triton._internal_testing import numpy_random, to_triton, to_numpy, is_interpreter
    from triton.runtime.errors import InterpreterError


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


    @pytest.mark.interpreter
    @pytest.mark.parametrize("dtype_str", ["float32", "int32", "int16", "float16"])
    def test_add(dtype_str, device):
        x = numpy_random(64, dtype_str=dtype_str)
        y = numpy_random(64, dtype_str=dtype_str, rs=np.random.RandomState(3))
        out = to_triton(np.empty_like(x), device=device)
        add_kernel[(1,)](to_triton(x, device=device), to_triton(y, device=device), out, 64)
        np.testing.assert_allclose(to_numpy(out), x + y, rtol=1e-3)


    @pytest.mark.interpreter
    def test_patched_kernel(device):
        src = "@triton.jit\\ndef k(out):\\n    tl.store(out + tl.arange(0, 8), tl.arange(0, 8) * 3)\\n"
        scope = {}
        exec(src, globals(), scope)
        out = to_triton(np.zeros(8, np.int32), device=device)
        scope["k"][(1,)](out)
        assert is_interpreter() and list(to_numpy(out)) == [3 * i for i in range(8)]


    @pytest.mark.interpreter
    def test_wrong_on_purpose(device):  # the runner must count this case as failed
        assert sum(range(3)) == 4


    @pytest.mark.interpreter
    def test_skipped(device):
        pytest.skip("not here")


    def test_gpu_only(device):
        raise AssertionError("not selected in the interpreter")
''')


def test_counts_on_a_stand_in(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "test_core.py"
    path.write_text(STAND_IN)
    out = tmp_path / "counts.json"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "run_test_core.py"), str(path),
                           "--mode", "interpreter", "--max-cases", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(out.read_text())["counts"]
    assert counts == {"test_add": {"passed": 3}, "test_patched_kernel": {"passed": 1},
                      "test_skipped": {"skipped": 1}, "test_wrong_on_purpose": {"failed": 1}}
    assert "TOTAL" in done.stdout and "test_wrong_on_purpose" in done.stdout


def test_compare_lists_what_the_reference_passes_and_we_do_not():
    import run_test_core

    ours = {"cases": {"test_a[1]": {"outcome": "passed"}, "test_a[2]": {"outcome": "failed", "why": "E"},
                      "test_b": {"outcome": "passed"}, "test_c": {"outcome": "skipped"}}}
    reference = {"cases": {"test_a[1]": {"outcome": "passed"}, "test_a[2]": {"outcome": "passed"},
                           "test_b": {"outcome": "failed"}, "test_c": {"outcome": "passed"},
                           "test_d": {"outcome": "passed"}}}
    rows = run_test_core.compare(ours, reference)
    assert [case for case, _, _ in rows["test_a"]["work"]] == ["test_a[2]"]
    assert rows["test_c"]["work"][0][1] == "skipped" and rows["test_d"]["work"][0][1] == "not run"
    assert [case for case, _, _ in rows["test_b"]["beyond"]] == ["test_b"]


COMPILE_STAND_IN = textwrap.dedent('''
    import re
    import pytest
    import torch
    import triton
    import triton.language as tl
    from triton._internal_testing import is_cuda


    @triton.jit
    def scale_kernel(x_ptr, out_ptr):
        offs = tl.arange(0, 64)
        tl.store(out_ptr + offs, tl.math.exp2(tl.load(x_ptr + offs)) * 3.0 + 1.0)


    @pytest.mark.parametrize("ftz", [False, True])
    def test_ftz_option(ftz, device):
        x = torch.zeros(64, device=device)
        k = scale_kernel.warmup(x, x, grid=(1,), enable_reflect_ftz=ftz)
        assert is_cuda() and ("ex2.approx.ftz.f32" in k.asm["ptx"]) == ftz


    @pytest.mark.parametrize("arch", ["sm80", "sm90"])
    @pytest.mark.parametrize("with_knob", [False, True])
    def test_arch(arch, with_knob, device, fresh_knobs):
        x = torch.zeros(64, device=device)
        if with_knob:
            fresh_knobs.runtime.override_arch = arch
            k = scale_kernel.warmup(x, x, grid=(1,))
        else:
            k = scale_kernel.warmup(x, x, grid=(1,), arch=arch)
        assert re.search(r"cuda:(\\d+)", k.asm["ttgir"]).group(1) == arch[2:]


    def test_fusion_knob(device, fresh_knobs):
        fresh_knobs.language.default_fp_fusion = False
        x = torch.zeros(64, device=device)
        assert not re.search(r"\\bfma\\.rn", scale_kernel.warmup(x, x, grid=(1,)).asm["ptx"])


    def test_knobs_restored(device):  # runs after test_fusion_knob and test_arch
        x = torch.zeros(64, device=device)
        k = scale_kernel.warmup(x, x, grid=(1,))
        assert re.search(r"\\bfma\\.rn", k.asm["ptx"]) and "cuda:90" in k.asm["ttgir"]


    def test_maxnreg_on_entry(device):
        x = torch.zeros(64, device=device)
        k = scale_kernel.warmup(x, x, grid=(1,), maxnreg=40)
        assert re.search(r"\\.visible \\.entry [^{;]*\\.maxnreg 40", k.asm["ptx"])


    def test_launch(device):  # compile mode has no GPU to launch on: counted as failed
        x = torch.zeros(64, device=device)
        scale_kernel[(1,)](x, x)
''')


def test_compile_mode_runs_compile_only_cases_without_a_gpu(tmp_path):
    """`--mode compile`: `is_cuda()`, kernels compiled for the NVPTX back end on CPU tensors;
    Triton's launch options (arch=, enable_reflect_ftz=, maxnreg=) and knobs (override_arch,
    default_fp_fusion, restored after each case) reach the compiler; a launch fails."""
    pytest.importorskip("torch")
    path = tmp_path / "test_core.py"
    path.write_text(COMPILE_STAND_IN)
    out = tmp_path / "counts.json"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "run_test_core.py"), str(path),
                           "--mode", "compile", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    want = {"test_arch": {"passed": 4}, "test_ftz_option": {"passed": 2},
            "test_fusion_knob": {"passed": 1}, "test_knobs_restored": {"passed": 1},
            "test_launch": {"failed": 1}, "test_maxnreg_on_entry": {"passed": 1}}
    not_passed = [case for case, info in result["cases"].items() if info["outcome"] != "passed"]
    assert result["counts"] == want, not_passed
