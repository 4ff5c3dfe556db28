"""GPU probe for branch s7i14 (issue 14): Triton's test_core.py, unmodified, compiled on the GPU through
tools/run_test_core.py, for the test functions that failed there in session 6 and a few that passed
(controls). Prints the counts per function and each failing case; exits 1 if a case that Triton's own
interpreter passes fails here, or if a function this branch fixed (FIXED) or a control has a failing
case. The other functions (INFORMATION) are printed only: their checks read Triton-only TTGIR/PTX
patterns or knobs (see notes/s7i14_issue14.md for each). Then, on the GPU, debug mode's launch tests
(tests/runtime/test_debug_launch.py on the `cuda` target: out-of-bounds load, store and atomic at their
line) and `bench/debug_cost.py --quick` (its JSON to $OUT when set).

    PYTHONPATH=. python3 tools/probe_test_core.py
    PROBE_MODE=interpreter PYTHONPATH=. python3 tools/probe_test_core.py   # the same selection, no GPU
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "bench" / "results" / "cpu-2026-12-01-s6-test-core-triton-interpreter.json"
CASES_PER_FUNCTION = 10

FIXED = ["test_permute", "test_vectorization_hints", "test_tl_range_num_stages",
         "test_optimize_thread_locality", "test_no_rematerialization_op", "test_num_warps_pow2",
         "test_pointer_arguments", "test_constexpr_assignment", "test_scaled_dot", "test_unroll_attr",
         "test_disable_licm", "test_inline_asm_packed", "test_inline_asm_packed_multiple_outputs",
         # session 8 (branch s8opts): Triton's CUDA options and knobs (test_override_arch[*-sm70] is
         # by design: run_test_core.BY_DESIGN)
         "test_maxnreg", "test_enable_reflect_ftz", "test_override_arch", "test_enable_fp_fusion",
         "test_num_ctas_pre_sm90"]
CONTROLS = ["test_bin_op", "test_dot", "test_reduce1d", "test_atomic_rmw", "test_cast",
            "test_load_store_same_ptr", "test_vectorization", "test_tl_range_option_none"]
# test_dot_mulbroadcasted: right result since the combine; it also reads Triton's TTIR/TTGIR text
INFORMATION = ["test_dot_mulbroadcasted", "test_poison_return", "test_tl_range_fuse",
               "test_tl_range_fuse_dependent", "test_trans_reshape", "test_call"]


def test_core_path() -> Path:
    if os.environ.get("TRITON_TEST_CORE"):
        return Path(os.environ["TRITON_TEST_CORE"])
    for folder in [ROOT, *ROOT.parents]:
        candidate = folder / ".triton_tests" / "test_core.py"
        if candidate.is_file():
            return candidate
    return Path("/tmp/triton_tests/test_core.py")


def run(names: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "counts.json"
        cmd = [sys.executable, str(ROOT / "tools" / "run_test_core.py"), str(test_core_path()),
               "--mode", os.environ.get("PROBE_MODE", "gpu"), "--jobs", str(min(8, os.cpu_count() or 2)),
               "--max-cases", str(CASES_PER_FUNCTION), "--functions", ",".join(names),
               "--json", str(out), "--timeout", "60", "--compare", str(REFERENCE), "--quiet"]
        subprocess.run(cmd, timeout=230, check=False)
        return json.loads(out.read_text())


def gpu_tests() -> int:
    """Debug mode's launch tests and this branch's gpu tests, on the GPU (the `cuda` target)."""
    env = {**os.environ, "TILEWORKBENCH_TEST_CUDA": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", "-rfE",
           "-k", "cuda or gpu or pinned", "tests/runtime/test_debug_launch.py",
           "tests/runtime/test_triton_error_types.py", "tests/nvptx/test_target_options.py",
           "tests/nvptx/test_libdevice_lowering.py"]
    print("\n$ TILEWORKBENCH_TEST_CUDA=1 " + " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, cwd=ROOT, env=env, timeout=180, check=False, capture_output=True,
                          text=True)
    print("\n".join(done.stdout.strip().splitlines()[-15:]))
    return done.returncode


def debug_cost() -> int:
    """bench/debug_cost.py --quick; its JSON goes to $OUT (the device machine's) when set."""
    out = Path(os.environ.get("OUT", tempfile.gettempdir())) / "h200-2026-12-01-s7-debug-cost.json"
    cmd = [sys.executable, str(ROOT / "bench" / "debug_cost.py"), "--quick", "--rounds", "5",
           "--out", str(out)]
    print("\n$ " + " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=150,
                          check=False, capture_output=True, text=True)
    print("\n".join((done.stdout + done.stderr).strip().splitlines()[-12:]))
    return done.returncode


def main() -> int:
    failed = test_core()
    if os.environ.get("PROBE_MODE", "gpu") == "gpu":
        failed |= gpu_tests() != 0
        failed |= debug_cost() != 0
    return 1 if failed else 0


def test_core() -> bool:
    result = run(FIXED + CONTROLS + INFORMATION)
    reference = json.loads(REFERENCE.read_text())["cases"]
    kind = {**{n: "info" for n in INFORMATION}, **{n: "control" for n in CONTROLS},
            **{n: "fixed" for n in FIXED}}
    columns = ("passed", "failed", "error", "skipped", "by_design")
    print(f"{'function':<42} {'kind':<8}" + "".join(f"{c:>10}" for c in columns))
    for name, counts in sorted(result["counts"].items()):
        print(f"{name:<42} {kind.get(name, '?'):<8}" + "".join(f"{counts.get(c, 0):>10}" for c in columns))
    totals = collections.Counter()
    for counts in result["counts"].values():
        totals.update(counts)
    print(f"{'TOTAL':<51}" + "".join(f"{totals.get(c, 0):>10}" for c in columns))
    bad = []
    for case, info in sorted(result["cases"].items()):
        if info["outcome"] not in ("failed", "error"):
            continue
        name = case.split("[")[0]
        theirs = reference.get(case, {}).get("outcome")
        wrong = theirs == "passed" or kind.get(name) in ("fixed", "control")
        if wrong and by_design(case):
            wrong = False
        print(f"  {'WRONG' if wrong else 'known'} {case} (Triton's interpreter: {theirs}): "
              f"{info['why'][:150]}")
        if wrong:
            bad.append(case)
    print(f"\nprobe_test_core: {len(result['cases'])} cases, {len(bad)} wrong, {result['seconds']} s")
    return bool(bad)


def by_design(case: str) -> bool:
    sys.path.insert(0, str(ROOT / "tools"))
    from run_test_core import by_design as listed

    return listed(case, os.environ.get("PROBE_MODE", "gpu")) is not None


if __name__ == "__main__":
    sys.exit(main())
