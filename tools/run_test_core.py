"""Run Triton's own `python/test/unit/language/test_core.py`, unmodified, against tileworkbench, and
count pass / fail / skip per test function.

    python tools/run_test_core.py /path/to/test_core.py --max-cases 10 --json counts.json
    TRITON_TEST_CORE=/path/to/test_core.py python tools/run_test_core.py --mode gpu -k dot --jobs 4

For the run, `triton` *is* tileworkbench: an import hook maps `triton` and every `triton.X` to
`tileworkbench.X`, and this file supplies what test_core needs beyond that (`triton._internal_testing`,
`triton.runtime.errors`, the `device` fixture). Without a GPU (or with `--mode interpreter`) kernels
run in the interpreter, and only the cases Triton marks `interpreter` are selected, as Triton's own
interpreter CI does; with `--mode gpu` they are compiled and launched on the GPU. Triton's file is read
where it lies and never copied into this repository.

`--mode compile` needs no GPU either: `is_cuda()` is true, kernels compile for the NVPTX back end
(`COMPILE_ARCH`, the H200's) on CPU torch tensors, and every case runs (give `--functions`): cases
that only compile (`.warmup(...)`, reading `.asm["ptx"]`) pass or fail on their own checks; a case
that launches fails (no GPU to launch on).

`--mode reference` runs the same selection on *Triton's own* interpreter (`TRITON_INTERPRET=1`, no
mapping), from a Python that has Triton installed, and `--compare REF.json` lists the cases that
Triton's interpreter passes and this run does not (the work list):

    /tmp/tritonref/bin/python tools/run_test_core.py --mode reference --json ref.json
    python tools/run_test_core.py --mode interpreter --compare ref.json
"""

from __future__ import annotations

import argparse
import collections
import importlib
import importlib.abc
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_VAR = "TRITON_TEST_CORE"
DEFAULT_PATH = "/tmp/triton_tests/test_core.py"
COMPILE_ARCH = ("sm_90a", (9, 0))  # `--mode compile`: what kernels compile for, its capability

# Cases where tileworkbench differs from Triton on purpose (DESIGN.md: do better than a Triton
# limitation); counted apart from the failures. (mode, pattern on the test id) -> why.
BY_DESIGN = {
    ("gpu", r"^test_call\[.*noinline"): "Triton expects its own compile error for a noinline callee on "
    "the GPU; tileworkbench inlines it and computes the right answer (tests/nvptx/test_noinline_call.py)",
    ("gpu", r"^test_poison_return$"): "Triton stores `ub.poison` (an undefined value) returned by a "
    "function that returns nothing on the path taken; tileworkbench refuses to store None at compile "
    "time, with the line, instead of writing garbage",
    **{(mode, r"^test_override_arch\[.*-sm70\]$"): "the NVPTX back end compiles for sm_80 and "
       "newer; arch='sm70' is refused with an error naming the kernel and the architectures it has "
       "(tests/nvptx/test_target_options.py)" for mode in ("gpu", "compile")},
}


# -- `triton` as tileworkbench ----------------------------------------------------------------------


class TritonAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of `triton` / `triton.X` give `tileworkbench` / `tileworkbench.X`, or a module made
    here (`extra`) where tileworkbench has none."""

    def __init__(self, extra: dict[str, types.ModuleType]):
        self.extra = extra

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        if fullname not in self.extra:
            real = "tileworkbench" + fullname[len("triton"):]
            if importlib.util.find_spec(real) is None:
                return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        if spec.name in self.extra:
            return self.extra[spec.name]
        return importlib.import_module("tileworkbench" + spec.name[len("triton"):])

    def exec_module(self, module):
        pass  # the module is tileworkbench's own, already imported


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def internal_testing(gpu: bool, capability: tuple[int, int] | None = None) -> types.ModuleType:
    """`triton._internal_testing`: dtype lists, target predicates and array helpers, written here for
    tileworkbench (torch tensors on `device`, unsigned and fp8 tensors as same-width views)."""
    import numpy as np
    import torch

    import tileworkbench as tw
    import tileworkbench.language as tl

    int_dtypes = ["int8", "int16", "int32", "int64"]
    uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
    float_dtypes = ["float16", "float32", "float64"]
    if capability is None:
        capability = torch.cuda.get_device_capability() if gpu else (0, 0)

    def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
        shape = (shape,) if isinstance(shape, int) else shape
        rs = np.random.RandomState(17) if rs is None else rs
        if dtype_str in int_dtypes + uint_dtypes:
            info = np.iinfo(dtype_str)
            low = info.min if low is None else max(low, info.min)
            high = info.max if high is None else min(high, info.max)
            x = rs.randint(low, high, shape, dtype=dtype_str)
            x[x == 0] = 1  # tests divide by these
            return x
        if "float8" in (dtype_str or ""):
            return rs.randint(20, 40, shape, dtype=np.int8)
        if dtype_str in float_dtypes:
            return rs.normal(0, 1, shape).astype(dtype_str)
        if dtype_str == "bfloat16":  # float32 values that bf16 holds exactly
            bits = rs.normal(0, 1, shape).astype("float32").view("uint32") & np.uint32(0xFFFF0000)
            return bits.view("float32")
        if dtype_str in ("bool", "int1", "bool_"):
            return rs.normal(0, 1, shape) > 0.0
        raise RuntimeError(f"unknown dtype {dtype_str}")

    def to_triton(x, device, dst_type=None):
        name = x.dtype.name
        if name in uint_dtypes:
            signed = torch.tensor(x.astype(name[1:]), device=device)
            return tw.reinterpret(signed, getattr(tl, name))
        if dst_type and "float8" in dst_type:
            return tw.reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
        if name == "float32" and dst_type == "bfloat16":
            return torch.tensor(x, device=device).bfloat16()
        return torch.tensor(x, device=device)

    def torch_dtype_name(dtype) -> str:
        if isinstance(dtype, tl.dtype):
            return dtype.name
        if isinstance(dtype, torch.dtype):
            return str(dtype).removeprefix("torch.")
        raise TypeError(f"not a triton or torch dtype: {type(dtype)}")

    def to_numpy(x):
        if isinstance(x, torch.Tensor):
            if x.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
                return x.cpu().float().numpy()
            return x.cpu().numpy()
        return np.asarray(x)

    def str_to_triton_dtype(name: str):
        return getattr(tl, name)

    def not_hip(*_, **__):
        return False

    return _module(
        "triton._internal_testing",
        int_dtypes=int_dtypes, uint_dtypes=uint_dtypes, integral_dtypes=int_dtypes + uint_dtypes,
        float_dtypes=float_dtypes, float_dtypes_with_bfloat16=float_dtypes + ["bfloat16"],
        dtypes=int_dtypes + uint_dtypes + float_dtypes,
        dtypes_with_bfloat16=int_dtypes + uint_dtypes + float_dtypes + ["bfloat16"],
        torch_float8_dtypes=["float8_e4m3fn", "float8_e5m2"],
        torch_dtypes=["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"],
        tma_dtypes=sorted(set(int_dtypes + uint_dtypes + float_dtypes + ["bfloat16"])
                          - {"int64", "uint64", "float64"}),
        is_interpreter=lambda: not gpu, is_cuda=lambda: gpu,
        is_hopper=lambda: capability[0] == 9, is_hopper_or_newer=lambda: capability[0] >= 9,
        is_ampere_or_newer=lambda: capability[0] >= 8, is_blackwell=lambda: capability[0] in (10, 11),
        is_sm12x=lambda: capability[0] == 12, is_xpu=not_hip, is_hip=not_hip,
        **{f"is_hip_{n}": not_hip for n in ("cdna", "cdna2", "cdna3", "cdna4", "rdna3", "rdna4",
                                            "gfx1250", "cdna3_or_newer", "rdna")},
        numpy_random=numpy_random, to_triton=to_triton, to_numpy=to_numpy,
        torch_dtype_name=torch_dtype_name, str_to_triton_dtype=str_to_triton_dtype,
        supports_tma=lambda byval_only=False: gpu and capability[0] >= 9,
        requires_tma=__import__("pytest").mark.skipif(not (gpu and capability[0] >= 9),
                                                      reason="needs TMA (sm_90)"),
    )


def missing_fp8_stand_ins() -> list[str]:
    """STAND-INS, FOR COUNTING ONLY: test_core's module-level parameter lists name fp8 dtypes that
    tileworkbench.language may lack (`float8e4b15`, `float8e4b8`, `float8e5b16`), and without them
    no test of the file is even collected. Each missing name becomes an object that no kernel
    accepts, so the cases using it fail; the names are printed with the counts."""
    import tileworkbench.language as tl

    class MissingDtype:
        def __init__(self, name: str):
            self.name = name

        def __repr__(self) -> str:
            return f"<stand-in for tl.{self.name}: not in tileworkbench>"

    stubbed = []
    for name in ("float8e4b15", "float8e4b8", "float8e5b16"):
        if not hasattr(tl, name):
            setattr(tl, name, MissingDtype(name))
            stubbed.append(name)
    return stubbed


def exec_with_source() -> None:
    """STAND-IN, FOR COUNTING ONLY: test_core builds many kernels with `exec(source_string)`
    (`patch_kernel`). tileworkbench compiles a kernel from its source text, which Python keeps for no
    exec'd string (Triton's interpreter runs the Python function and needs none). For the run, `exec`
    of a string registers the text under a unique file name in `linecache`, as IPython does for cells."""
    import builtins
    import itertools
    import linecache

    real_exec, numbers = builtins.exec, itertools.count()

    def exec_registering_source(source, *args, **kwargs):
        if isinstance(source, str):
            name = f"<test_core exec {next(numbers)}>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            source = compile(source, name, "exec")
        return real_exec(source, *args, **kwargs)

    builtins.exec = exec_registering_source


def jit_source_api() -> list[str]:
    """STAND-INS, FOR COUNTING ONLY: Triton's `JITFunction.src` and `_unsafe_update_src` (what
    test_core's `patch_kernel` uses outside the interpreter), added to tileworkbench's JITFunction for
    the run where it lacks them. Returns the names added."""
    import inspect
    import textwrap

    from tileworkbench.runtime.jit import JITFunction

    added = []
    if not hasattr(JITFunction, "src"):
        JITFunction.src = property(lambda self: textwrap.dedent(inspect.getsource(self.fn)))
        added.append("JITFunction.src")
    if not hasattr(JITFunction, "_unsafe_update_src"):
        def update_src(self, source: str) -> None:
            # the new text sees what the old function saw: its globals and its closure's names (a
            # kernel defined in a test function reads names imported there, test_constexpr_assignment)
            closure = {}  # a cell still empty (a name the test assigns later) is left out
            for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:
                    pass
            scope = {**self.fn.__globals__, **closure} if closure else self.fn.__globals__
            namespace: dict = {}
            exec(source, scope, namespace)  # the registering exec above
            fn = namespace[self.fn.__name__]
            self.__init__(getattr(fn, "fn", fn))

        JITFunction._unsafe_update_src = update_src
        added.append("JITFunction._unsafe_update_src")
    return added


def reference_triton(test_core: Path) -> list[str]:
    """`--mode reference`: the real Triton in its interpreter. test_core.py may be newer than the
    installed Triton and import AMD target predicates it lacks (`is_hip_rdna3`, ...); those are added
    as `False` (no AMD device here). Returns the names added."""
    os.environ["TRITON_INTERPRET"] = "1"
    import triton._internal_testing as testing

    added = []
    for name in re.findall(r"\bis_hip_\w+", test_core.read_text()):
        if not hasattr(testing, name):
            setattr(testing, name, lambda: False)
            added.append(f"_internal_testing.{name}")
    return sorted(set(added))


def install_triton(gpu: bool, compile_only: bool = False) -> list[str]:
    """Make `import triton...` import tileworkbench; returns the stand-ins this tool had to add.
    `compile_only` (`--mode compile`): CUDA as far as the tests can tell, kernels compiled for
    COMPILE_ARCH without a GPU."""
    gpu = gpu or compile_only
    os.environ["TRITON_INTERPRET"] = "0" if gpu else "1"
    from tileworkbench.config import config
    from tileworkbench.errors import InterpreterError

    config.interpret = not gpu
    if compile_only:  # test_core asks torch for the capability at import: the target's (STAND-IN)
        import torch

        config.target = COMPILE_ARCH[0]
        torch.cuda.get_device_capability = lambda device=None: COMPILE_ARCH[1]
        torch.cuda.get_device_name = lambda device=None: f"(compile only: {COMPILE_ARCH[0]})"
    capability = COMPILE_ARCH[1] if compile_only else None
    extra = {"triton._internal_testing": internal_testing(gpu, capability),
             "triton.runtime.errors": _module("triton.runtime.errors",
                                              InterpreterError=InterpreterError)}
    sys.meta_path.insert(0, TritonAlias(extra))
    exec_with_source()
    compile_stand_in = ["torch.cuda.get_device_capability/_name"] if compile_only else []
    return [f"tl.{n}" for n in missing_fp8_stand_ins()] + jit_source_api() + \
        ["exec of source text"] + compile_stand_in


# -- the pytest plugin: case limit, device fixture, timeout, counts -----------------------------------


class Counter:
    def __init__(self, max_cases: int, gpu: bool, timeout: float, shard: tuple[int, int],
                 reference: bool = False, functions: frozenset[str] = frozenset()):
        self.max_cases, self.gpu, self.timeout, self.shard = max_cases, gpu, timeout, shard
        self.reference, self.functions = reference, functions
        self.compile_only = False  # `--mode compile`: CPU tensors, kernels compiled for the GPU
        self.results: dict[str, dict] = {}
        self.collect_errors: list[str] = []

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "interpreter: runs in Triton's interpreter")
        config.addinivalue_line("markers", "cpu: runs on Triton's CPU backend")

    def pytest_collection_modifyitems(self, session, config, items):
        if self.functions:  # exact names (-k matches substrings: test_dot would take test_dot3d)
            items[:] = [item for item in items if item.originalname in self.functions]
        names = sorted({item.originalname for item in items})
        mine = {n for i, n in enumerate(names) if i % self.shard[1] == self.shard[0]}
        seen: collections.Counter = collections.Counter()
        keep = []
        for item in items:
            name = item.originalname
            if name in mine and (not self.max_cases or seen[name] < self.max_cases):
                seen[name] += 1
                keep.append(item)
        items[:] = keep

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(_first_error(report.longreprtext))

    @__import__("pytest").fixture
    def device(self):
        return "cuda" if self.gpu and not self.compile_only else "cpu"

    @__import__("pytest").fixture
    def with_allocator(self):
        """Triton's: scratch memory for device-side tensor descriptors, from torch."""
        if self.reference:
            yield from _reference_allocator()
            return
        import tileworkbench as tw

        if hasattr(tw, "set_allocator"):
            import torch

            tw.set_allocator(lambda size, align, stream: torch.empty(
                size, dtype=torch.int8, device="cuda" if self.gpu else "cpu"))
        yield

    @__import__("pytest").fixture
    def fresh_triton_cache(self, tmp_path, monkeypatch):
        if self.reference:
            from triton import knobs

            with knobs.cache.scope(), knobs.runtime.scope():
                knobs.cache.dir = str(tmp_path)
                yield str(tmp_path)
            return
        from tileworkbench.config import config

        monkeypatch.setattr(config, "cache_dir", tmp_path)
        yield str(tmp_path)

    @__import__("pytest").fixture
    def fresh_knobs(self):
        """Triton's knobs, reset around the case. tileworkbench's settings are
        `tileworkbench.config`: the knobs it has (KNOBS) set the config field of the same meaning,
        restored after the case; any other knob a case sets has no effect (STAND-IN, FOR COUNTING
        ONLY: the case passes or fails on its own assertions instead of erroring on a missing
        fixture)."""
        if self.reference:
            from triton._internal_testing import _fresh_knobs_impl

            fresh, reset = _fresh_knobs_impl(skipped_attr={"build", "nvidia", "amd"})
            try:
                yield fresh()
            finally:
                reset()
            return
        from tileworkbench.config import config

        saved = {field: getattr(config, field) for field in KNOBS.values()}
        try:
            groups = {group: KnobGroup(group) for group in ("language", "runtime")}
            yield types.SimpleNamespace(**groups)
        finally:
            for field, value in saved.items():
                setattr(config, field, value)

    @__import__("pytest").hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        def expire(*_):
            raise TimeoutError(f"the case ran past {self.timeout:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def pytest_runtest_logreport(self, report):
        case = report.nodeid.split("::")[-1]
        if report.when == "call" or report.outcome != "passed":
            if case in self.results and report.when == "teardown":
                return
            outcome = report.outcome
            if report.when != "call" and report.failed:
                outcome = "error"
            why = ""
            if report.failed:
                why = _first_error(report.longreprtext)
            elif report.skipped and isinstance(report.longrepr, tuple):
                why = str(report.longrepr[2])
            self.results[case] = {"outcome": outcome, "why": why[:300]}


# Triton's knobs (group, name) -> the `tileworkbench.config` field with the same meaning
KNOBS = {("language", "default_fp_fusion"): "default_fp_fusion",
         ("runtime", "override_arch"): "override_arch"}


class KnobGroup(types.SimpleNamespace):
    """One group of Triton's knobs (`knobs.runtime`): setting a knob listed in KNOBS sets its
    tileworkbench.config field; the others are only stored."""

    def __init__(self, group: str):
        super().__init__()
        object.__setattr__(self, "_group", group)

    def __setattr__(self, name, value):
        field = KNOBS.get((self._group, name))
        if field is not None:
            from tileworkbench.config import config

            setattr(config, field, value)
        object.__setattr__(self, name, value)


def _reference_allocator():
    import triton
    from triton._internal_testing import default_alloc_fn
    from triton.runtime._allocation import NullAllocator

    triton.set_allocator(default_alloc_fn)
    try:
        yield
    finally:
        triton.set_allocator(NullAllocator())


def _first_error(text: str) -> str:
    """The first `E   ` line of a pytest failure (the exception and message), else its last line."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return lines[0] if lines else (text.strip().splitlines() or [""])[-1]


def by_design(case: str, mode: str) -> str | None:
    for (where, pattern), why in BY_DESIGN.items():
        if where == mode and re.search(pattern, case):
            return why
    return None


def run_in_process(path: Path, args) -> dict:
    import pytest

    gpu, reference = args.mode in ("gpu", "compile"), args.mode == "reference"
    stubbed = reference_triton(path) if reference else install_triton(gpu, args.mode == "compile")
    functions = frozenset(n for n in args.functions.split(",") if n)
    counter = Counter(args.max_cases, gpu, args.timeout, args.shard, reference, functions)
    counter.compile_only = args.mode == "compile"
    with tempfile.TemporaryDirectory() as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n")
        argv = [str(path), "-c", str(ini), "--rootdir", tmp, "-p", "no:cacheprovider", "-q",
                "--no-header", "-p", "no:warnings", "-rN", "--tb=short"]
        if not gpu:
            argv += ["-m", "interpreter"]
        if args.k:
            argv += ["-k", args.k]
        start = time.monotonic()
        pytest.main(argv, plugins=[counter])
    versions = {name: getattr(sys.modules.get(name), "__version__", None)
                for name in ("triton", "numpy", "torch")}
    return {"mode": args.mode, "test_core": str(path), "max_cases": args.max_cases,
            "versions": versions,
            "stand_ins": stubbed, "collect_errors": counter.collect_errors,
            "seconds": round(time.monotonic() - start, 1), "cases": counter.results}


# -- several processes, and the summary ----------------------------------------------------------------


def run_sharded(path: Path, args) -> dict:
    """`--jobs N`: N processes, each running every N-th test function; their results merged."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for k in range(args.jobs):
            out = Path(tmp) / f"shard{k}.json"
            cmd = [sys.executable, __file__, str(path), "--mode", args.mode, "--max-cases",
                   str(args.max_cases), "--timeout", str(args.timeout), "--shard", f"{k}/{args.jobs}",
                   "--json", str(out), "--quiet", "--functions", args.functions] + \
                (["-k", args.k] if args.k else [])
            procs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL), out))
        merged: dict = {}
        for proc, out in procs:
            proc.wait()
            if not out.exists():
                raise SystemExit(f"a shard exited with {proc.returncode} and wrote no results")
            part = json.loads(out.read_text())
            cases = {**merged.get("cases", {}), **part["cases"]}
            errors = merged.get("collect_errors", []) + part["collect_errors"]
            seconds = max(merged.get("seconds", 0), part["seconds"])
            merged = {**part, "cases": cases, "collect_errors": sorted(set(errors)), "seconds": seconds}
        return merged


def compare(result: dict, reference: dict) -> dict:
    """Per function: cases Triton's interpreter passes (`reference`) and this run fails or skips
    (`work`), and cases this run passes that Triton's interpreter does not (`beyond`)."""
    rows: dict[str, dict] = collections.defaultdict(lambda: {"work": [], "beyond": []})
    for case, info in reference["cases"].items():
        ours = result["cases"].get(case, {"outcome": "not run"})
        if info["outcome"] == "passed" and ours["outcome"] != "passed":
            rows[case.split("[")[0]]["work"].append((case, ours["outcome"], ours.get("why", "")))
    for case, info in result["cases"].items():
        theirs = reference["cases"].get(case, {"outcome": "not run"})["outcome"]
        if info["outcome"] == "passed" and theirs != "passed":
            rows[case.split("[")[0]]["beyond"].append((case, theirs, ""))
    return dict(sorted(rows.items()))


def print_comparison(rows: dict) -> None:
    work = sum(len(r["work"]) for r in rows.values())
    beyond = sum(len(r["beyond"]) for r in rows.values())
    print(f"\nagainst Triton's interpreter: {work} cases it passes and this run does not; "
          f"{beyond} this run passes and it does not")
    for name, row in rows.items():
        for case, outcome, why in row["work"]:
            print(f"  WORK {case}: {outcome} {why[:160]}")


def summarize(result: dict) -> dict:
    """Counts per test function: passed, failed, skipped, error, by_design."""
    per_function: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for case, info in result["cases"].items():
        name = case.split("[")[0]
        outcome = info["outcome"]
        if outcome in ("failed", "error") and by_design(case, result["mode"]):
            outcome = "by_design"
        per_function[name][outcome] += 1
    return {name: dict(counts) for name, counts in sorted(per_function.items())}


COLUMNS = ("passed", "failed", "error", "skipped", "by_design")


def print_table(result: dict, counts: dict) -> None:
    width = max([len(n) for n in counts] + [8])
    print(f"{'function':<{width}}  " + "  ".join(f"{c:>9}" for c in COLUMNS))
    totals: collections.Counter = collections.Counter()
    for name, row in counts.items():
        totals.update(row)
        print(f"{name:<{width}}  " + "  ".join(f"{row.get(c, 0):>9}" for c in COLUMNS))
    print(f"{'TOTAL':<{width}}  " + "  ".join(f"{totals.get(c, 0):>9}" for c in COLUMNS))
    print(f"\nmode {result['mode']}, at most {result['max_cases'] or 'all'} cases per function, "
          f"{result['seconds']} s")
    if result["stand_ins"]:
        print("stand-ins made by this tool only (the package under test lacks them): "
              + ", ".join(result["stand_ins"]))
    for error in result["collect_errors"]:
        print("collection error:", error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default=os.environ.get(ENV_VAR, DEFAULT_PATH),
                        help=f"Triton's test_core.py (default: ${ENV_VAR} or {DEFAULT_PATH})")
    parser.add_argument("--mode", choices=("interpreter", "gpu", "compile", "reference"),
                        default=None,
                        help="interpreter, compiled on the GPU (default where one is visible), "
                        "compile: compiled for the GPU without one (compile-only cases), or "
                        "reference: Triton's own interpreter, from a Python with Triton installed")
    parser.add_argument("--compare", type=Path,
                        help="a --mode reference JSON: list the cases it passes and this run does not")
    parser.add_argument("--max-cases", type=int, default=10,
                        help="at most this many cases per test function (0: all)")
    parser.add_argument("-k", default="", help="pytest -k expression to select tests")
    parser.add_argument("--functions", default="",
                        help="comma-separated test function names: only these (exact names)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case")
    parser.add_argument("--jobs", type=int, default=1, help="processes, each with its share of functions")
    parser.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="write the per-case results and counts here")
    parser.add_argument("--failures", action="store_true", help="list every failing case and why")
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path = Path(args.path)
    if not path.is_file():
        parser.error(f"no test_core.py at {path}: give its path or set {ENV_VAR}")
    sys.path.insert(0, str(ROOT))
    if args.mode is None:
        from tileworkbench.cuda.device import gpu_available

        args.mode = "gpu" if gpu_available() else "interpreter"
    if args.mode == "reference":
        os.environ["TRITON_INTERPRET"] = "1"  # before any shard imports triton
    k, n = (int(x) for x in args.shard.split("/"))
    args.shard = (k, n)
    result = run_sharded(path, args) if args.jobs > 1 else run_in_process(path, args)
    counts = summarize(result)
    result["counts"] = counts
    if args.compare:
        rows = compare(result, json.loads(args.compare.read_text()))
        result["against_reference"] = {n: {"work": [c for c, _, _ in r["work"]],
                                           "beyond": [c for c, _, _ in r["beyond"]]}
                                       for n, r in rows.items()}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True))
    if not args.quiet:
        print_table(result, counts)
        if args.failures:
            for case, info in sorted(result["cases"].items()):
                if info["outcome"] in ("failed", "error"):
                    print(f"  {case}: {info['why']}")
        if args.compare:
            print_comparison(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
