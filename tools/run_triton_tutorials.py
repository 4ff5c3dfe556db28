"""Run Triton's tutorials 01-11 against tileworkbench (only their imports changed) and print a table.

    python tools/run_triton_tutorials.py --dir /path/to/triton/python/tutorials
    TRITON_TUTORIALS_DIR=... python tools/run_triton_tutorials.py 02 06

Each tutorial's kernels and wrappers run in the interpreter on CPU tensors (or, with --gpu, compiled
for the GPU on CUDA tensors) at small sizes, through the tutorial's own test function where it has
one, and are compared with torch in float64. The tutorial files are not part of this repository.
The work is in tests/tutorials/.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tutorials"))

from tutorial_checks import AUTOTUNE_CONFIGS_ENV, TutorialResult, gpu_missing, run_tutorial  # noqa: E402
from tutorial_loader import ENV_VAR, TUTORIALS  # noqa: E402


def _row(result: TutorialResult) -> list[str]:
    checks = f"{sum(c.ok for c in result.comparisons)}/{len(result.comparisons)}"
    worst = max((c.max_error / c.tolerance for c in result.comparisons if c.tolerance), default=0.0)
    return [
        result.tutorial.removesuffix(".py"),
        ", ".join(result.kernels) or "-",
        checks,
        f"{result.max_error:.3g}" if result.comparisons else "-",
        f"{worst:.3f}" if result.comparisons else "-",
        ", ".join(result.targets) or "-",
        "pass" if result.passed else "FAIL",
        f"{result.seconds:.1f}",
    ]


def print_table(results: list[TutorialResult]) -> None:
    header = ["tutorial", "kernels run", "checks ok", "max error", "worst err/tol", "ran on", "result",
              "s"]
    rows = [header] + [_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def print_details(results: list[TutorialResult], verbose: bool) -> None:
    for result in results:
        if verbose:
            print(f"\n{result.tutorial}:")
            for c in result.comparisons:
                mark = "ok  " if c.ok else "FAIL"
                print(f"  {mark} {c.what}: max error {c.max_error:.3g} (tolerance {c.tolerance:g})")
        for line in result.failures():
            print(f"  {result.tutorial}: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tutorials", nargs="*", help="numbers or names to run (default: all)")
    parser.add_argument(
        "--dir", default=os.environ.get(ENV_VAR), help=f"the tutorials' folder ({ENV_VAR})"
    )
    parser.add_argument(
        "--autotune-configs",
        type=int,
        default=0,
        help="keep only the first N configs of each autotuned kernel (0: all; timing them all in the "
        "interpreter takes a while)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="compile for the GPU and run on CUDA tensors (default: the interpreter, CPU tensors)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list every comparison")
    args = parser.parse_args(argv)
    if not args.dir or not Path(args.dir).is_dir():
        parser.error(f"give the folder of Triton's tutorials with --dir or {ENV_VAR}")
    if args.gpu and gpu_missing():
        parser.error(f"--gpu: {gpu_missing()}")
    if args.autotune_configs:
        os.environ[AUTOTUNE_CONFIGS_ENV] = str(args.autotune_configs)
    chosen = [
        t for t in TUTORIALS if not args.tutorials or any(t.startswith(a) for a in args.tutorials)
    ]
    results = []
    for name in chosen:
        if not (Path(args.dir) / name).is_file():
            print(f"{name}: not in {args.dir}, skipped", file=sys.stderr)
            continue
        results.append(run_tutorial(Path(args.dir), name, interpret=not args.gpu))
    print_table(results)
    print_details(results, args.verbose)
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
