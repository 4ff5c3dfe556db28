"""GPU probe for Triton's tutorials 08 (grouped GEMM) and 10 (block-scaled matmul), with 09
(persistent matmul) as a control: each runs on the GPU on CUDA torch tensors against torch in
float64 (tests/tutorials/tutorial_checks.py, the smallest autotune config), in a subprocess of its
own (a device fault ends only that row). 10 runs one process per format, side by side, as a user
gets it (TMA on, the default: where TMA's tiles do not fit in shared memory the compiler keeps the
largest descriptors on pointers, runtime/compiler.py `_compile_fitting`; the `path` column says
what it chose), and mxfp8/mixed again with TMA off as [info] rows that do not count. Run from the
repo root, no arguments:

    PYTHONPATH=. python3 tools/probe_tutorials.py

10's fp4 kernels (128 x 256 fp32 accumulators on 4 warps: 255 registers and heavy spills) take
ptxas minutes on a loaded CPU; PROBE_TUTORIALS_SECONDS=N gives every row N seconds instead of its
own limit.

The tutorial files are not in this repository: TRITON_TUTORIALS_DIR, else `.tutorials/` in the
repo root, else /tmp/triton_tutorials. Prints one row per run (ok / WRONG / ERROR / TIMEOUT, the
worst error over its tolerance, or `assert ok` where the tutorial's own assert_close judged (atol
and rtol), the seconds, the error); exits 1 unless every row is ok.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "tutorials"))

# (label, tutorial, extra environment, seconds allowed, counts toward the exit status)
RUNS = [
    ("08 grouped gemm", "08-grouped-gemm.py", {}, 150, True),
    ("09 persistent (control)", "09-persistent-matmul.py", {}, 150, True),
    # 10 as the tutorial runs (TMA on): C's TMA store (staged over the rings); where a kernel's TMA
    # tiles do not fit, the compiler keeps descriptors on pointers (the path column says so)
    *[(f"10 {fmt}", "10-block-scaled-matmul.py", {"TUTORIAL_BLOCK_SCALED_FORMATS": fmt}, 170, True)
      for fmt in ("mxfp8", "mxfp4", "nvfp4", "mixed")],
    # ... and with TMA off (TILEWORKBENCH_TMA=0) where the default keeps a TMA store: [info] rows
    *[(f"10 {fmt} TMA off [info]", "10-block-scaled-matmul.py",
       {"TUTORIAL_BLOCK_SCALED_FORMATS": fmt, "TILEWORKBENCH_TMA": "0"}, 170, False)
      for fmt in ("mxfp8", "mixed")],
]


def tutorials_folder() -> Path | None:
    for candidate in (os.environ.get("TRITON_TUTORIALS_DIR"), ROOT / ".tutorials",
                      "/tmp/triton_tutorials"):
        if candidate and (Path(candidate) / "08-grouped-gemm.py").is_file():
            return Path(candidate).resolve()
    return None


def run_one(folder: Path, name: str) -> dict:
    """In the child: run one tutorial's check on the GPU; the result as a dict."""
    from tutorial_checks import gpu_missing, run_tutorial

    from tileworkbench.runtime.record import record_launches

    missing = gpu_missing()
    if missing:
        return {"status": "ERROR", "error": missing}
    with record_launches() as launches:
        result = run_tutorial(folder, name, interpret=False)
    # max |error| / tolerance over our own comparisons; the tutorial's own assert_close calls (10's)
    # judge by atol + rtol * |reference| themselves, so only their verdict counts ("assert ok")
    worst = max((c.max_error / c.tolerance for c in result.comparisons
                 if c.tolerance and c.verdict is None), default=None)
    status = "ok" if result.passed else ("ERROR" if result.error else "WRONG")
    failures = [line for line in result.failures()]
    return {"status": status, "worst": worst, "error": " | ".join(failures)[:600],
            "checks": f"{sum(c.ok for c in result.comparisons)}/{len(result.comparisons)}",
            "targets": result.targets, "path": _paths(launches)}


def _paths(launches) -> str:
    """What the compiled kernels copy with: `TMA xN` (the PTX's bulk tensor copies), the host
    descriptors the compiler kept on pointers for shared memory, or `pointers`."""
    paths = set()
    for launch in launches:
        md, ptx = launch.compiled.launch_metadata, launch.compiled.ptx or ""
        copies = ptx.count("cp.async.bulk.tensor")
        path = f"TMA x{copies}" if copies else "pointers"
        if md.tma_fallback and md.tma_fallback["host"]:
            path += f" ({','.join(md.tma_fallback['host'])} on pointers: shared memory)"
        paths.add(path)
    return "; ".join(sorted(paths)) or "-"


def main() -> int:
    folder = tutorials_folder()
    if folder is None:
        print("no tutorial files: set TRITON_TUTORIALS_DIR (or copy them to .tutorials/)")
        return 1
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_TUTORIALS_DIR": str(folder),
           "TUTORIAL_AUTOTUNE_CONFIGS": os.environ.get("TUTORIAL_AUTOTUNE_CONFIGS", "1"),
           "PYTHONUNBUFFERED": "1"}
    children = []
    for label, name, extra, limit, counts in RUNS:
        limit = int(os.environ.get("PROBE_TUTORIALS_SECONDS", limit))
        command = [sys.executable, __file__, "--one", name]
        child = subprocess.Popen(command, env={**env, **extra}, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        children.append((label, child, limit, time.perf_counter(), counts))
    rows, failed = [], False
    for label, child, limit, begin, counts in children:
        try:
            output, _ = child.communicate(timeout=max(1.0, limit - (time.perf_counter() - begin)))
            row = _parse(output)
        except subprocess.TimeoutExpired:
            child.kill()
            output, _ = child.communicate()
            row = {"status": "TIMEOUT", "error": f"over {limit} s; last output: "
                   f"{output.strip()[-300:]}"}
        row["seconds"] = time.perf_counter() - begin
        failed |= counts and row["status"] != "ok"
        rows.append((label, row))
    print(f"{'run':26} {'result':8} {'checks':7} {'worst/tol':10} {'s':>6}  path | error")
    for label, row in rows:
        worst = row.get("worst")
        worst_text = f"{worst:.3g}" if isinstance(worst, float) else (
            "assert ok" if row["status"] == "ok" else "-")
        print(f"{label:26} {row['status']:8} {row.get('checks', '-'):7} {worst_text:10} "
              f"{row['seconds']:6.1f}  {row.get('path', '-')} | {row.get('error', '')}")
    return 1 if failed else 0


def _parse(output: str) -> dict:
    for line in reversed(output.splitlines()):
        if line.startswith("PROBE_RESULT "):
            return json.loads(line[len("PROBE_RESULT "):])
    return {"status": "ERROR", "error": "the child died: " + output.strip()[-500:]}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        sys.path.insert(0, str(ROOT))
        try:
            outcome = run_one(tutorials_folder(), sys.argv[2])
        except Exception as error:  # noqa: BLE001 (reported as the row's error)
            outcome = {"status": "ERROR", "error": f"{type(error).__name__}: {error}"[:600]}
        print("PROBE_RESULT " + json.dumps(outcome), flush=True)
        sys.exit(0)
    sys.exit(main())
