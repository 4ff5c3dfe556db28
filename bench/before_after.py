"""Warm launch and cold compile time of this tree against another checkout of the project (a refactor
must keep both within 5%), side by side in one run: each round runs `bench/warm_launch.py` and
`bench/compile_time.py` once per tree, in fresh processes, the trees alternating so a slow moment of
the host hits both alike. Each tree runs its own copy of the two scripts.

    git worktree add /tmp/before <commit>
    PYTHONPATH=. python bench/before_after.py --before /tmp/before --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from result_file import default_path

HERE = Path(__file__).resolve().parent.parent


def _run(tree: Path, *args: str) -> str:
    """The output of a bench script of `tree`, run with `tree` first on the path."""
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode:
        raise RuntimeError(f"{args[0]} in {tree} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def _warm_row(tree: Path, launches: str) -> dict:
    """Host microseconds per launch, per contender (the JSON line `bench/warm_launch.py` prints)."""
    out = _run(tree, "bench/warm_launch.py", launches)
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def _compile_row(tree: Path, scratch: Path) -> dict:
    """One cold compile per kind of `bench/compile_time.py` (fresh processes, empty caches), as
    "kind.phase_s" -> seconds; Triton's first call rides along as the control (the same both times)."""
    out = scratch / f"compile-{tree.name}.json"
    _run(tree, "bench/compile_time.py", "--runs", "1", "--out", str(out))
    summary = json.loads(out.read_text())["summary"]
    return {f"{kind}.{k}": v["median"] for kind, phases in summary.items() for k, v in phases.items()
            if isinstance(v, dict)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the earlier tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", default="1000", help="launches per warm-launch sample")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE}
    warm: dict[str, list[dict]] = {name: [] for name in trees}
    cold: dict[str, list[dict]] = {name: [] for name in trees}
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    for _ in range(args.rounds):
        for name, tree in trees.items():
            warm[name].append(_warm_row(tree, args.launches))
            cold[name].append(_compile_row(tree, scratch))

    def medians(rows: list[dict]) -> dict:
        return {k: statistics.median(r[k] for r in rows) for k in rows[0]}

    summary = {name: {"warm_launch_us": medians(warm[name]), "compile_s": medians(cold[name])}
               for name in trees}
    ratios = {f"warm_launch.{k}": summary["after"]["warm_launch_us"][k] / summary["before"]["warm_launch_us"][k]
              for k in summary["after"]["warm_launch_us"]}
    ratios.update({f"compile_{k}": summary["after"]["compile_s"][k] / summary["before"]["compile_s"][k]
                   for k in summary["after"]["compile_s"]})
    import cupy as cp
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": device,
              "before": str(trees["before"]), "rounds": args.rounds, "summary": summary,
              "after_over_before": ratios, "warm": warm, "cold": cold}
    for key, value in ratios.items():
        print(f"{key:<28} after/before {value:.3f}")
    out = args.out or default_path(device, "launch-compile-before-after")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
