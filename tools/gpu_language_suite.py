"""The language suites (tests/kernels, tests/frontend, tests/interpreter, debug mode's launch tests) on
the `cuda` target, run so that one bad kernel cannot hide the rest, and summarized as JSON for the GPU
session:

    PYTHONPATH=. python3 tools/gpu_language_suite.py --out $OUT/gpu_language_suite.json --budget 280

pytest runs with TILEWORKBENCH_TEST_CUDA=1, `-m gpu -k cuda` (each test's "cuda" parametrization)
and tools/pytest_outcomes.py recording every outcome as it happens. When the run stops early (the
CUDA context was lost: tests/cuda_guard.py stops the session; a crash; a test past --test-timeout,
which is killed) a new pytest process resumes after the test that stopped it, up to --restarts
times. The JSON holds passed/failed/skipped per test file, each failure with its first error line,
the restarts and why, and the tests left unrun when the budget ran out. Exit status 0 when nothing
failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytest_outcomes import read_records  # noqa: E402

ISOLATED_TIMEOUT_S = 120  # tests/cuda_guard.py's limit for a test run in a process of its own
# debug mode's launch tests (out-of-bounds load, store, atomic at their line; issue 14) and the unroll
# pass run on the `target` fixture too
SUITES = ["tests/kernels", "tests/frontend", "tests/interpreter", "tests/runtime/test_debug_launch.py",
          "tests/passes/test_unroll.py"]
SELECT = ["-m", "gpu", "-k", "cuda"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu_language_suite.json", help="the JSON summary")
    parser.add_argument("--log", default=None, help="pytest's output (default: OUT with .log)")
    parser.add_argument(
        "--records",
        default=None,
        help="the per-test JSON lines (default: a temporary file, not beside OUT)",
    )
    parser.add_argument("--budget", type=float, default=280, help="seconds for all runs together")
    parser.add_argument("--test-timeout", type=float, default=90, help="seconds one test may take")
    parser.add_argument("--restarts", type=int, default=6)
    parser.add_argument(
        "pytest_args", nargs="*", help="what pytest runs (default: the three suites)"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    log = Path(args.log or out.with_suffix(".log"))
    records_path = Path(args.records or tempfile.mkstemp(suffix=".jsonl")[1])
    for path in (records_path, log):
        path.unlink(missing_ok=True)
    targets = args.pytest_args or SUITES
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-header",
        "-rfE",
        "--tb=short",
        "-p",
        "pytest_outcomes",
        f"--outcomes={records_path}",
        *SELECT,
        *targets,
    ]
    start = time.monotonic()
    restarts: list[dict] = []
    for run in range(args.restarts + 1):
        left = args.budget - (time.monotonic() - start)
        if left < 5:
            break
        stop = _run(command, log, records_path, left, args.test_timeout)
        if stop is None:
            break  # the run finished
        restarts.append(stop)
        if not stop["resume"]:
            break
    summary = summarize(
        read_records(records_path),
        restarts,
        time.monotonic() - start,
        " ".join(["TILEWORKBENCH_TEST_CUDA=1", "pytest", *SELECT, *targets]),
    )
    out.write_text(json.dumps(summary, indent=1) + "\n")
    table = format_table(summary)
    print(table)
    with log.open("a") as stream:
        stream.write("\n" + table + "\n")
    return 0 if summary["totals"]["failed"] + summary["totals"]["error"] == 0 else 1


def _run(
    command: list[str], log: Path, records_path: Path, budget: float, test_timeout: float
) -> dict | None:
    """One pytest process; None if it finished, else why it stopped (its tests left run later)."""
    env = dict(os.environ, TILEWORKBENCH_TEST_CUDA="1", PYTHONUNBUFFERED="1")
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join([p for p in (env.get("PYTHONPATH", "."), here) if p])
    begun = time.monotonic()
    earlier = len(read_records(records_path))
    with log.open("a") as stream:
        stream.write(f"\n==== {' '.join(command)}\n")
        stream.flush()
        child = subprocess.Popen(
            command, stdout=stream, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        reason = None
        while child.poll() is None:
            time.sleep(0.5)
            running, since = _running(records_path)
            if running is not None and time.time() - since > test_timeout:
                reason = (
                    f"timed out after {test_timeout:.0f} s (killed; the run resumed without it)"
                )
                _kill(child)
                _record(records_path, running, "failed", reason)
                return {"after": running, "reason": reason, "resume": True}
            if time.monotonic() - begun > budget:
                _kill(child)
                return {"after": running, "reason": "the time budget ran out", "resume": False}
    records = read_records(records_path)[earlier:]  # this run's
    finished = [r for r in records if r.get("event") == "finished"]
    running, _ = _running(records_path)
    if running is not None:  # the process died inside a test (a crash)
        _record(
            records_path,
            running,
            "failed",
            f"the pytest process died in it (exit status {child.returncode})",
        )
        return {
            "after": running,
            "reason": f"crashed (exit status {child.returncode})",
            "resume": True,
        }
    if finished and finished[-1]["stopped"]:
        return {"after": _last_test(records), "reason": finished[-1]["stopped"], "resume": True}
    if not finished and child.returncode not in (0, 1, 5):  # no use retrying
        return {
            "after": None,
            "reason": f"pytest exited with status {child.returncode} before it ran "
            "a test (see the log)",
            "resume": False,
        }
    return None


def _running(records_path: Path) -> tuple[str | None, float]:
    """The test started and not yet reported, and when it started (a test run in a process of
    its own is given the child's own time limit on top)."""
    started, reported = None, set()
    since = 0.0
    for record in read_records(records_path):
        if record.get("event") == "start":
            started, since = record["test"], record["time"]
            since += ISOLATED_TIMEOUT_S if record.get("own_process") else 0
        elif record.get("event") == "outcome":
            reported.add(record["test"])
    return (started, since) if started is not None and started not in reported else (None, 0.0)


def _last_test(records: list[dict]) -> str | None:
    tests = [r["test"] for r in records if r.get("event") == "outcome"]
    return tests[-1] if tests else None


def _record(records_path: Path, test: str, outcome: str, error: str) -> None:
    with records_path.open("a") as stream:
        stream.write(
            json.dumps(
                {
                    "event": "outcome",
                    "test": test,
                    "file": test.split("::")[0],
                    "outcome": outcome,
                    "error": error,
                    "duration": None,
                }
            )
            + "\n"
        )


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def summarize(records: list[dict], restarts: list[dict], wall: float, command: str) -> dict:
    """Counts per file and in total, the failures with their first lines, what stopped the runs."""
    outcomes: dict[str, dict] = {}
    for record in records:
        if record.get("event") == "outcome":
            outcomes[record["test"]] = record  # the last record of a test counts
    collected = next((r["count"] for r in records if r.get("event") == "collected"), len(outcomes))
    files: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    totals = collections.Counter(passed=0, failed=0, error=0, skipped=0)
    skip_reasons: collections.Counter = collections.Counter()
    for record in outcomes.values():
        files[record["file"]][record["outcome"]] += 1
        totals[record["outcome"]] += 1
        if record["outcome"] == "skipped":
            skip_reasons[record["error"]] += 1
    failures = [
        {"test": r["test"], "outcome": r["outcome"], "error": r["error"]}
        for r in outcomes.values()
        if r["outcome"] in ("failed", "error", "xpassed")
    ]
    return {
        "command": command,
        "wall_s": round(wall, 1),
        "runs": 1 + len(restarts),
        "totals": dict(totals),
        "not_run": max(collected - len(outcomes), 0),
        "files": {name: dict(counts) for name, counts in sorted(files.items())},
        "failures": failures,
        "restarts": restarts,
        "skip_reasons": dict(skip_reasons.most_common(12)),
    }


def format_table(summary: dict) -> str:
    lines = [f"{'file':58} {'pass':>5} {'fail':>5} {'skip':>5}"]
    for name, counts in summary["files"].items():
        failed = counts.get("failed", 0) + counts.get("error", 0)
        lines.append(
            f"{name[-58:]:58} {counts.get('passed', 0):5} {failed:5} {counts.get('skipped', 0):5}"
        )
    totals = summary["totals"]
    lines.append(
        f"total: {totals['passed']} passed, {totals['failed']} failed, {totals['error']} errors, "
        f"{totals['skipped']} skipped, {summary['not_run']} not run; {summary['runs']} run(s), "
        f"{summary['wall_s']} s"
    )
    lines += [f"stopped after {stop['after']}: {stop['reason']}" for stop in summary["restarts"]]
    lines += [f"FAILED {f['test']}: {f['error']}" for f in summary["failures"][:40]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
