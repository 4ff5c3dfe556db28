"""Cold autotunes as a script meets them: each in a fresh Python process with an empty compile
cache, so nothing is warm (no compile workers, no forkserver, no imports), side by side (issue 24).

    PYTHONPATH=. python3 bench/autotune_fresh.py                 # on the GPU host
    PYTHONPATH=. python3 bench/autotune_fresh.py --cpu --quick   # no GPU: to check the script

The workloads of bench/autotune_parallel.py (Triton's tutorial-06 attention forward, its own
source, 21 configs, head dim 64 and 128; a 32-config tutorial-03 matmul 4096^3 fp16; with --cpu
the cpu target's 8-config matmul). Each child process imports torch (as the tutorial's script
does, first), imports the workload (where `tw.autotune` decorates the kernel), makes the inputs,
and times its first call (which tunes, then launches) to a device synchronize. `sweep-matmul-32`
(with --cpu `sweep-matmul-cpu-8`) is the workbench's `%%tilekernel --sweep` over the same 32
configs in an IPython shell: the cell is timed, each config compiled, run, timed and checked. Modes, each its
environment:

- `sequential`: TILEWORKBENCH_COMPILE_WORKERS=0, one config after another, each timed in full;
- `parallel-forkserver`: compile workers forked by a forkserver (the default off Linux), with
  screening and TILEWORKBENCH_COMPILE_PRESTART=1 (the default on hosts of 8 cores or more): the
  forkserver's preload starts when the kernel is decorated, and the tune compiles configs itself
  until the workers are up;
- `parallel-fork`: the default on Linux: the workers are forks of the process, made as the tune
  begins.

Per child: `first_call_s` (the tune and one launch), `since_start_s` (from the child's first line
to the end of the first call: imports, decoration, inputs, tune), the choice, the output's relative
error against float64. Modes alternate over `--rounds` rounds; the medians and their ratios to
`sequential` are reported. JSON: bench/results/<device>-autotune-fresh.json unless --out.
"""

from __future__ import annotations

import time

_BEGIN = time.perf_counter()  # a child's clock starts before its imports

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

MODES = {
    "sequential": {"TILEWORKBENCH_COMPILE_WORKERS": "0"},
    "parallel-forkserver": {"TILEWORKBENCH_COMPILE_START": "forkserver",
                            "TILEWORKBENCH_COMPILE_PRESTART": "1"},
    "parallel-fork": {"TILEWORKBENCH_COMPILE_START": "fork"},
}
GPU_WORKLOADS = ("attention-tutorial06-d64", "attention-tutorial06-d128", "matmul-32",
                 "sweep-matmul-32")

# `%%tilekernel --sweep` over the 32 configs of autotune_parallel.MATMUL_CONFIGS, on tutorial 03's
# matmul imported from bench/kernels.py (a kernel a worker can import), 4096^3 fp16; with --cpu the
# cpu target's 8 configs at 128^3 on CPU torch tensors
SWEEPS = {
    "sweep-matmul-32": ('"BM=64,128 BN=64,128 BK=32,64 num_stages=3,4 num_warps=4,8"', "cuda", 4096),
    "sweep-matmul-cpu-8": ('"BM=32,64 BN=32,64 BK=16,32 num_warps=4"', "cpu", 128),
}
SWEEP_SETUP = """
import torch
import tileworkbench as tw
from bench.kernels import matmul_kernel
size = {size}
torch.manual_seed(0)
dtype = torch.float16 if "{device}" == "cuda" else torch.float32
a = torch.randn((size, size), device="{device}", dtype=dtype)
b = torch.randn((size, size), device="{device}", dtype=dtype)
c = torch.full((size, size), float("nan"), device="{device}", dtype=dtype)
grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)
sync = torch.cuda.synchronize if "{device}" == "cuda" else (lambda: None)
sync()
"""
# a cell run before the sweep, as a notebook has run cells before: the device's roofline peaks
# (measured by the first report of a session and cached) and the workbench's imports are not
# part of the sweep's time
WARM_CELL = """
from bench.kernels import add_kernel
x = torch.randn(1 << 20, device="{device}")
y = torch.randn(1 << 20, device="{device}")
out = torch.full_like(x, float("nan"))
add_kernel[(tw.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
"""
SWEEP_CELL = """
matmul_kernel[grid](a, b, c, size, size, size, *a.stride(), *b.stride(), *c.stride(),
                    BM=32, BN=32, BK=16, GROUP_M=8)
"""


def child(name: str) -> dict:
    """In a fresh process: import, decorate, make inputs, time the first call."""
    if name in SWEEPS:
        return sweep_child(*SWEEPS[name])
    if name != "matmul-cpu-8":
        import torch  # noqa: F401  (first, as the tutorial's script imports it)
    for folder in (ROOT, ROOT / "tests" / "tutorials"):
        sys.path.insert(0, str(folder))
    from bench import autotune_parallel as workloads

    if name == "matmul-cpu-8":
        tuner, setup = workloads.cpu_matmul()
    elif name == "matmul-32":
        tuner, setup = workloads.gpu_matmul()
    else:
        tuner, setup = workloads.tutorial_attention(int(name.rsplit("d", 1)[1]), False)
    prepared = setup()
    prepared.sync()
    begin = time.perf_counter()
    prepared.launch()
    prepared.sync()
    end = time.perf_counter()
    from tileworkbench.runtime import compile_pool

    return {
        "first_call_s": end - begin,
        "since_start_s": end - _BEGIN,
        "choice": str(tuner.best_config),
        "phases": dict(getattr(tuner, "phase_seconds", {})),
        "compiled_here": sum(
            r.get("where", {}).get("compiled") == "this process" for r in tuner.last_results.values()
        ),
        "configs": len(tuner.last_results),
        # per config: seconds to compile (worker or here), load, screen and time it, where
        "results": {str(config): {k: v for k, v in result.items()
                                  if k in ("compile_s", "load_s", "screen_s", "bench_s", "where",
                                           "finalist", "error", "ms", "screen_ms")}
                    for config, result in tuner.last_results.items()},
        "pool": compile_pool.info(),
        "max_relative_error": prepared.error(),
    }


def sweep_child(sweep: str, device: str, size: int) -> dict:
    """In a fresh process: an IPython shell with the extension loaded, the inputs made, then the
    `%%tilekernel --sweep` cell timed; the choice is the sweep's fastest config."""
    sys.path.insert(0, str(ROOT))
    from IPython.core.interactiveshell import InteractiveShell

    from tileworkbench.workbench import load_ipython_extension

    shell = InteractiveShell.instance()
    load_ipython_extension(shell)
    shell.run_cell(SWEEP_SETUP.format(size=size, device=device), store_history=False)
    shell.run_cell_magic("tilekernel", "", WARM_CELL.format(device=device))
    begin = time.perf_counter()
    shell.run_cell_magic("tilekernel", f"--sweep {sweep}", SWEEP_CELL)
    shell.user_ns["sync"]()
    end = time.perf_counter()
    ns = shell.user_ns
    section = next(s for s in ns["_tilekernel_reports"][0].sections if s.title == "sweep")
    timed = [(row.ms, row) for row in section.rows if row.ms is not None]
    failed = [row.failure for row in section.rows if row.failure]
    a, b, c = ns["a"], ns["b"], ns["c"]  # the last config's output
    error = float(((c[:256].double() - a[:256].double() @ b.double()).abs().max()
                   / (a[:256].double() @ b.double()).abs().max()).item())
    return {
        "first_call_s": end - begin,
        "since_start_s": end - _BEGIN,
        "choice": min(timed, key=lambda t: t[0])[1].config if timed else None,
        "configs": len(section.rows),
        "timed": len(timed),
        "failures": failed,
        "compiled_elsewhere": sum(row.compile_s is not None for row in section.rows),
        "max_relative_error": error,
    }


def run_child(name: str, mode: str, timeout: float) -> dict:
    cache = tempfile.mkdtemp(prefix="tw-autotune-fresh-")
    env = {**os.environ, **MODES[mode], "TILEWORKBENCH_CACHE_DIR": cache}
    if "cpu" in name:  # the target decoration resolves (the default is the interpreter)
        env["TILEWORKBENCH_TARGET"] = "cpu"
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", name], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - begin
    subprocess.run(["rm", "-rf", cache])
    if done.returncode != 0:
        raise RuntimeError(f"{name} {mode}: exit {done.returncode}\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = wall
    return result


def _choice_gap(runs: list[dict], sequential: list[dict]) -> float | None:
    """How much slower than its best config the sequential tuner timed each choice of `runs`, at
    most (0.0: every choice was the best it timed): whether two tuners that chose differently
    differ by more than timing noise. None where the tuners' times were not recorded."""
    gaps = []
    for reference in sequential:
        times = {config: r["ms"] for config, r in reference.get("results", {}).items()
                 if r.get("ms") is not None}
        if not times:
            return None
        best = min(times.values())
        gaps += [times[run["choice"]] / best - 1 for run in runs if run["choice"] in times]
    return max(gaps) if gaps else None


def _write(report: dict, options) -> Path:
    if options.cpu:
        report["device"] = "cpu"
    else:
        import torch

        report["device"] = torch.cuda.get_device_name()
    sys.path.insert(0, str(ROOT))
    from bench import result_file

    out = options.out or result_file.default_path(
        report["device"], "autotune-fresh" + ("-quick" if options.quick else ""))
    out.write_text(json.dumps(report, indent=1, default=str))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", action="store_true", help="the cpu target's matmul (no GPU)")
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", help="run the workloads whose name this regular expression finds")
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.child), default=str))
        return 0
    names = ["matmul-cpu-8", "sweep-matmul-cpu-8"] if options.cpu else list(GPU_WORKLOADS)
    names = [n for n in names if not options.only or re.search(options.only, n)]
    rounds = 1 if options.quick else options.rounds
    report = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "rounds": rounds,
              "workloads": []}
    modes = list(MODES)
    out = None
    for name in names:
        runs: dict[str, list] = {mode: [] for mode in modes}
        for index in range(rounds):
            for mode in modes[index % len(modes):] + modes[:index % len(modes)]:
                runs[mode].append(run_child(name, mode, options.timeout))
        row = {"workload": name, "modes": {}, "runs": runs}
        base = {what: statistics.median(r[what] for r in runs["sequential"])
                for what in ("first_call_s", "since_start_s")}
        for mode in modes:
            median = {what: statistics.median(r[what] for r in runs[mode]) for what in base}
            row["modes"][mode] = {
                **median,
                **{f"{what}_ratio": median[what] / base[what] for what in base},
                "same_choice": all(r["choice"] == runs["sequential"][0]["choice"]
                                   for r in runs[mode]),
                "choice_gap": _choice_gap(runs[mode], runs["sequential"]),
                "max_relative_error": max(r["max_relative_error"] for r in runs[mode]),
            }
            m = row["modes"][mode]
            print(f"{name:28s} {mode:20s} first call {m['first_call_s']:6.2f} s "
                  f"({m['first_call_s_ratio']:.3f}x)  since start {m['since_start_s']:6.2f} s "
                  f"({m['since_start_s_ratio']:.3f}x)  same choice {m['same_choice']}"
                  + (f" (within {m['choice_gap']:.1%})" if m["choice_gap"] is not None else "")
                  + "  "
                  f"rel error {m['max_relative_error']:.2g}", flush=True)
        report["workloads"].append(row)
        out = _write(report, options)  # after each workload: a run cut short keeps what it measured
    print(f"wrote {out}" if out else f"no workload matches --only {options.only!r}")
    bad = [row["workload"] for row in report["workloads"]
           for m in row["modes"].values() if not m["max_relative_error"] < 1e-2]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
