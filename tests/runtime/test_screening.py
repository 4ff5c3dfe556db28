"""Screening in the parallel autotuner (runtime/screening.py) and its warm compile workers
(runtime/compile_pool.py, worker_preload.py): the choice against full timing with injected
timings, a real screened tune on the cpu target, a worker killed mid-tune, workers forked from the
preloaded forkserver building what the parent builds, and the stats in the printed table."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config as settings
from tileworkbench.runtime import compile_pool, parallel_compile, screening, testing


@tw.jit
def scaled_sum(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * scale + tl.sum(x, axis=0), mask=mask)


CONFIGS = [tw.Config({"BLOCK": block}, num_warps=warps)
           for block in (64, 128, 256) for warps in (1, 2, 4)]


def _rows(n_rows=3, n_cols=50):
    x = np.random.default_rng().standard_normal((n_rows, n_cols)).astype(np.float32)
    return x, np.full_like(x, np.nan)  # poisoned: a row the kernel skips stays NaN


def _check(out, x, scale):
    x64 = x.astype(np.float64)
    expected = x64 * scale + x64.sum(axis=1, keepdims=True)
    error = np.abs(out - expected).max() / np.abs(expected).max()
    assert error < 1e-5, error


@pytest.fixture
def cpu_target(monkeypatch, tmp_path):
    """The cpu target with an empty cache and two compile workers, already started."""
    monkeypatch.setattr(settings, "target", "cpu")
    monkeypatch.setattr(settings, "interpret", False)
    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(settings, "compile_workers", 2)
    monkeypatch.setattr(settings, "autotune_screen", True)
    monkeypatch.setattr(settings, "autotune_finalists", 3)
    compile_pool.pool(2, target="cpu")
    yield
    parallel_compile.shutdown_pool()


# -- finalists ---------------------------------------------------------------------------------


def test_finalists_are_the_best_k_and_any_within_the_margin():
    screen = {"a": 1.0, "b": 1.5, "c": 1.04, "d": 2.0, "e": 1.2, "f": 1.01}
    assert screening.finalists(screen, 3) == ["a", "f", "c"]
    assert screening.finalists(screen, 2) == ["a", "f", "c"]  # c is within 5% of a
    assert screening.finalists(screen, 1, margin=0.0) == ["a"]
    assert screening.finalists({}, 3) == []
    assert not screening.screens(3, 3) and screening.screens(4, 3)


# -- the choice, with injected timings -----------------------------------------------------------


class TimedJIT:
    """A jit function stand-in whose configs "take" COST[BLOCK, num_warps] ms; launches compute
    the real result with NumPy, so the chosen config's output is checked."""

    def __init__(self):
        self.fn = scaled_sum.fn
        self.arg_names = ["x_ptr", "out_ptr", "n_cols", "scale"]
        self.last = None

    def run(self, x, out, n_cols, scale, grid, warmup=False, **options):
        if warmup:
            return None
        self.last = (options["BLOCK"], options["num_warps"])
        if options["BLOCK"] >= n_cols:
            out[...] = x * scale + x.astype(np.float64).sum(axis=1, keepdims=True)
        return None


COST = {(64, 1): 3.0, (64, 2): 2.9, (64, 4): 3.1, (128, 1): 1.3, (128, 2): 1.0, (128, 4): 1.2,
        (256, 1): 1.4, (256, 2): 2.0, (256, 4): 1.9}


def _stub_timer(monkeypatch, jit, noise):
    """do_bench replaced: it runs the call once and returns that config's cost, give or take
    `noise` in a screen (a short timing is noisier), exactly in a full timing."""
    calls = []
    rng = np.random.default_rng(5)

    def do_bench(kernel_call, warmup=25, rep=100, quantiles=None, **_):
        kernel_call()
        screen = rep <= screening.SCREEN_REP_MS
        calls.append(("screen" if screen else "full", jit.last))
        ms = COST[jit.last] * (1 + (rng.uniform(-noise, noise) if screen else 0.0))
        return [ms, ms, ms] if quantiles else ms

    monkeypatch.setattr(testing, "do_bench", do_bench)
    return calls


@pytest.mark.parametrize("screen", [False, True])
def test_screening_chooses_as_full_timing_does(monkeypatch, screen):
    monkeypatch.setattr(settings, "compile_workers", 2)  # the parallel tuner (it screens)
    monkeypatch.setattr(settings, "autotune_screen", screen)
    monkeypatch.setattr(settings, "autotune_finalists", 3)
    jit = TimedJIT()
    calls = _stub_timer(monkeypatch, jit, noise=0.03)
    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"])(jit)
    x, out = _rows(n_cols=100)
    tuned[(x.shape[0],)](x, out, x.shape[1], 0.5)
    _check(out, x, 0.5)
    assert tuned.best_config == tw.Config({"BLOCK": 128}, num_warps=2)
    results = tuned.last_results
    if not screen:
        assert [kind for kind, _ in calls] == ["full"] * len(CONFIGS)
        assert all("ms" in r and "screen_ms" not in r for r in results.values())
        return
    screens = [config for kind, config in calls if kind == "screen"]
    finals = [config for kind, config in calls if kind == "full"]
    assert sorted(screens) == sorted(COST)  # every config screened once
    assert set(finals) == {(128, 2), (128, 4), (128, 1)}  # only the finalists in full
    for config, result in results.items():
        assert result["screen_ms"] > 0 and result["finalist"] == ("ms" in result), result
    assert tuned.phase_seconds["screened"] is True


def test_a_users_do_bench_times_every_config_in_full(monkeypatch):
    monkeypatch.setattr(settings, "compile_workers", 2)
    jit = TimedJIT()
    seen = []

    def bench(kernel_call, quantiles):
        kernel_call()
        seen.append(jit.last)
        return [COST[jit.last]] * 3

    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], do_bench=bench)(jit)
    x, out = _rows(n_cols=100)
    tuned[(x.shape[0],)](x, out, x.shape[1], 2.0)
    _check(out, x, 2.0)
    assert sorted(seen) == sorted(COST)
    assert all("screen_ms" not in r for r in tuned.last_results.values())


# -- real tunes on the cpu target ----------------------------------------------------------------


def test_a_screened_tune_on_the_cpu_target(cpu_target, monkeypatch, capsys):
    monkeypatch.setattr(settings, "print_autotuning", True)
    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=4)(scaled_sum)
    x, out = _rows(n_cols=60)
    tuned[(x.shape[0],)](x, out, x.shape[1], -1.25)
    _check(out, x, -1.25)
    results = tuned.last_results
    finalists = [c for c, r in results.items() if r.get("finalist")]
    assert 3 <= len(finalists) <= screening.MAX_FINALISTS
    assert tuned.best_config in finalists
    for config, result in results.items():
        assert result["screen_ms"] > 0 and result["screen_s"] > 0, result
        assert result["where"]["timed"] == "cpu (CPU)", result
        if result["where"]["compiled"].startswith("pid "):  # built by a worker, loaded here
            assert result["compile_s"] > 0 and result["load_s"] >= 0, result
    assert any(r["where"]["compiled"].startswith("pid ") for r in results.values())
    printed = capsys.readouterr().out
    assert "best config selected" in printed and "(not a finalist)" in printed
    assert "screen " in printed and "compile " in printed and "(pid " in printed
    assert "bench " in printed and "(cpu (CPU))" in printed


def _kill_a_worker_after_the_first_build(monkeypatch) -> list[int]:
    """Once the first config is built (the workers are on the next ones), SIGKILL a worker; the
    list gets its pid. (The cpu target's configs are timed only once all are built, so the kill
    comes from the build's own loop.)"""
    build, killed = parallel_compile.build, []

    def build_and_kill(*args, **kwargs):
        for built in build(*args, **kwargs):
            if not killed:
                killed.append(compile_pool._POOL["pool"].pids()[0])
                os.kill(killed[0], signal.SIGKILL)
            yield built

    monkeypatch.setattr(parallel_compile, "build", build_and_kill)
    return killed


def test_a_worker_killed_mid_tune_loses_only_its_config(cpu_target, monkeypatch):
    killed = _kill_a_worker_after_the_first_build(monkeypatch)
    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=4)(scaled_sum)
    x, out = _rows(n_cols=40)
    tuned[(x.shape[0],)](x, out, x.shape[1], 3.0)
    _check(out, x, 3.0)
    results = tuned.last_results
    assert killed and all("error" not in r and r["screen_ms"] > 0 for r in results.values())
    # only the config the dead worker was compiling is built again
    retried = [r for r in results.values() if "worker death" in " ".join(r.get("notes", []))]
    assert len(retried) == 1 and retried[0]["where"]["compiled"] != f"pid {killed[0]}", results


# -- workers from the preloaded forkserver ---------------------------------------------------------


def _job(target: str) -> parallel_compile.CompileJob:
    encode = parallel_compile.encode_value
    x = parallel_compile.ArrayStandIn("float32", 1 << 20, (3, 50), (50, 1))
    out = parallel_compile.ArrayStandIn("float32", 2 << 20, (3, 50), (50, 1))
    return parallel_compile.CompileJob(
        "0", *parallel_compile.locate(scaled_sum), args=[encode(v) for v in (x, out, 50, 0.5)],
        kwargs={"BLOCK": encode(64), "num_warps": encode(2)},
        settings=parallel_compile.worker_settings(target))


@pytest.mark.parametrize("target", ["cpu", "sm_90a"])
def test_preloaded_workers_build_what_the_parent_builds(monkeypatch, tmp_path, target):
    from tileworkbench.runtime.cache import KernelCache

    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(settings, "compile_start", "forkserver")
    compile_pool.shutdown(forkserver=True)  # a forkserver that preloads for this target
    try:
        compile_pool.pool(1, target=target)
        assert compile_pool.info()["method"] == "forkserver"
        warmed = compile_pool._POOL["pool"].submit(0, compile_pool._ready).result()["warmed"]
        assert target in warmed, warmed  # the forkserver compiled for it before forking
        built = list(parallel_compile.build({"0": _job(target)}, workers=1))
        assert built[0].error is None and built[0].fallback is None, built
        assert built[0].where.startswith("pid ")
        (key,) = KernelCache().keys()
        worker_asm = json.loads(KernelCache().get(key)["asm.json"])
        signature = "x_ptr=*fp32:16,out_ptr=*fp32:16,n_cols=i32,scale=fp32"
        parent = tw.compile(scaled_sum, signature, {"BLOCK": 64}, target=target, num_warps=2,
                            use_cache=False)
        stage = "ptx" if target.startswith("sm_") else "llvm"
        assert worker_asm[stage] == parent.asm[stage]
    finally:
        compile_pool.shutdown(forkserver=True)


def test_a_reused_worker_fills_a_new_cache_folder(monkeypatch, tmp_path):
    """A worker that compiled a config for one cache folder compiles it again for another (an
    in-memory hit would leave the new folder empty, and the parent would compile it again)."""
    from tileworkbench.runtime.cache import KernelCache

    # a kept pool (forked workers last one tune, so each build would fork a fresh worker)
    monkeypatch.setattr(settings, "compile_start", "forkserver")
    try:
        compile_pool.pool(1, target="cpu")  # up first: else this process builds it itself
        for folder in ("one", "two"):
            monkeypatch.setattr(settings, "cache_dir", tmp_path / folder)
            built = list(parallel_compile.build({"0": _job("cpu")}, workers=1))
            assert built[0].fallback is None, built
            assert len(KernelCache().keys()) == 1, folder
    finally:
        compile_pool.shutdown()


def test_workers_file_entries_under_the_parents_compiler_fingerprint(monkeypatch, tmp_path):
    """A worker whose compiler sources hash otherwise (edited after this process read them) still
    files its build where this process looks for it."""
    from tileworkbench.runtime import compiler
    from tileworkbench.runtime.cache import KernelCache

    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(compiler, "_COMPILER_HASH", "0" * 64)  # as if read before an edit
    try:
        compile_pool.pool(1, target="cpu")  # up first: else this process builds it itself
        built = list(parallel_compile.build({"0": _job("cpu")}, workers=1))
        assert built[0].error is None and built[0].fallback is None, built
        x = np.zeros((3, 50), np.float32)
        out = np.full_like(x, np.nan)
        before = set(KernelCache().keys())
        monkeypatch.setattr(settings, "target", "cpu")
        monkeypatch.setattr(settings, "interpret", False)
        scaled_sum.clear_cache()
        compiled = scaled_sum.run(x, out, 50, np.float32(0.5), grid=(1,), warmup=True,
                                  BLOCK=64, num_warps=2)
        assert compiled.metadata.cache_hit and set(KernelCache().keys()) == before
    finally:
        compile_pool.shutdown()


def test_the_prestart_setting_preloads_the_forkserver_when_autotune_decorates(monkeypatch):
    """Decorating starts the forkserver and waits for its preload on a background thread, no
    worker yet; the first tune's pool then forks from it at once."""
    from multiprocessing import forkserver

    monkeypatch.setattr(settings, "compile_prestart", True)
    monkeypatch.setattr(settings, "compile_start", "forkserver")
    monkeypatch.setattr(settings, "compile_workers", 2)
    monkeypatch.setattr(settings, "target", "cpu")
    monkeypatch.setattr(settings, "interpret", False)
    compile_pool.shutdown(forkserver=True)
    try:
        tw.autotune(configs=CONFIGS, key=["n_cols"])(scaled_sum)
        starting = [thread for thread in compile_pool._STARTING if thread.is_alive()]
        assert starting, "decorating started nothing"
        for thread in starting:
            thread.join(timeout=300)
        assert compile_pool._server_running(forkserver) and compile_pool.info() == {}
        begin = time.perf_counter()
        compile_pool.pool(2, target="cpu")
        assert compile_pool.ready(2) and time.perf_counter() - begin < 2.0  # forked, not preloaded
    finally:
        compile_pool.shutdown(forkserver=True)


def test_no_prestart_when_off_or_for_a_kernel_workers_cannot_import(monkeypatch):
    monkeypatch.setattr(settings, "compile_start", "forkserver")  # forks would be handed it
    monkeypatch.setattr(settings, "compile_workers", 2)
    monkeypatch.setattr(settings, "target", "cpu")
    monkeypatch.setattr(settings, "interpret", False)
    compile_pool.shutdown(forkserver=True)

    @tw.jit
    def local_kernel(x_ptr, n, BLOCK: tl.constexpr):  # defined in a function: not importable
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0, mask=tl.arange(0, BLOCK) < n)

    for setting, kernel, key in ((False, scaled_sum, "n_cols"), (True, local_kernel, "n")):
        monkeypatch.setattr(settings, "compile_prestart", setting)
        before = list(compile_pool._STARTING)
        tw.autotune(configs=CONFIGS, key=[key])(kernel)
        assert compile_pool._STARTING == before, (setting, kernel)


FORK_PRESTART = """
import sys, threading
import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.runtime import compile_pool

@tw.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0, mask=tl.arange(0, BLOCK) < n)

lazy = "tileworkbench.backends.cpu.codegen"  # imported by a first compile for the cpu target
before = lazy in sys.modules
tw.autotune(configs=[tw.Config({"BLOCK": b}) for b in (16, 32)], key=["n"])(kernel)
names = [t.name for t in threading.enumerate()]
compile_pool.pool(2, target="cpu")  # forks only once the import is done
print(before, "tileworkbench-compiler-import" in names, lazy in sys.modules,
      [t.name for t in compile_pool._STARTING if t.is_alive()], len(compile_pool.info()["pids"]),
      "tileworkbench.backends.numpy_libdevice.calls" in sys.modules)  # the interpreter's, 0.6 s
compile_pool.shutdown()
"""


def test_decorating_imports_the_compiler_for_forked_workers_on_a_background_thread():
    """Where workers are forks of this process, decorating a kernel (the prestart setting) imports
    the compiler's lazily imported modules on a background thread, for every fork to inherit (not
    what only the interpreter runs); the pool forks only after that thread is done (a fork
    mid-import would copy a held lock)."""
    env = {**os.environ, "TILEWORKBENCH_COMPILE_START": "fork", "TILEWORKBENCH_COMPILE_PRESTART": "1",
           "TILEWORKBENCH_COMPILE_WORKERS": "2", "TILEWORKBENCH_TARGET": "cpu"}
    done = subprocess.run([sys.executable, "-c", FORK_PRESTART], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "True", "[]", "2", "False"], done.stdout


def test_each_fork_starts_on_its_first_call_as_it_is_made(monkeypatch):
    """A fork-mode tune forks its workers with their first configs (`fork_with`): each process runs
    its call, and the pool they make is the one the dispatcher hands the rest to."""
    monkeypatch.setattr(settings, "compile_start", "fork")
    compile_pool.shutdown()
    try:
        pool, started = compile_pool.fork_with([(os.getpid, ())] * 3)
        pids = [future.result(timeout=60) for future in started]
        assert len(set(pids)) == 3 and os.getpid() not in pids
        assert compile_pool.info()["pids"] == sorted(pids) and len(pool.slots) == 3
        assert pool.submit(1, os.getpid).result(timeout=60) == pids[1]
    finally:
        compile_pool.shutdown()


def _collect_inherited() -> tuple[int, int]:
    """In a worker: objects frozen out of its collector, and tracked objects a full collection
    still scans."""
    gc.collect()
    return gc.get_freeze_count(), len(gc.get_objects())


def test_a_fork_keeps_what_it_inherits_out_of_its_garbage_collector(monkeypatch):
    """A forked worker freezes the objects it inherits, so its collections do not write to (and
    copy) the parent's pages: the parent's objects are frozen there, and a full collection scans
    only the worker's own."""
    monkeypatch.setattr(settings, "compile_start", "fork")
    compile_pool.shutdown()
    inherited = [{"row": [i, str(i)]} for i in range(50_000)]  # tracked objects of this process
    try:
        _, started = compile_pool.fork_with([(_collect_inherited, ())])
        frozen, scanned = started[0].result(timeout=60)
        assert frozen >= 2 * len(inherited)  # each row: a dict and a list
        assert scanned < len(inherited) / 10
    finally:
        compile_pool.shutdown()


def test_forked_workers_start_at_once_and_run_ptxas_after_the_parent_did(monkeypatch, tmp_path):
    """Workers forked from this process (TILEWORKBENCH_COMPILE_START=fork) are up in well under a second, and
    each starts its own ptxas thread: the parent's, running when it forked, is not in the fork
    (a worker that waited for it would never finish)."""
    import threading

    from tileworkbench.runtime import compiler
    from tileworkbench.runtime.cache import KernelCache

    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(settings, "compile_start", "fork")
    compile_pool.shutdown()
    signature = "x_ptr=*fp32:16,out_ptr=*fp32:16,n_cols=i32,scale=fp32"
    parent = tw.compile(scaled_sum, signature, {"BLOCK": 64}, target="sm_90a", num_warps=2,
                        use_cache=False)
    parent._wait()
    assert compiler._ASSEMBLER  # the parent's ptxas thread pool exists as the workers fork
    built: list = []
    try:
        begin = time.perf_counter()
        compile_pool.pool(2, target="sm_90a")
        assert time.perf_counter() - begin < 5.0 and compile_pool.info()["method"] == "fork"
        thread = threading.Thread(
            target=lambda: built.extend(parallel_compile.build({"0": _job("sm_90a")}, workers=2)),
            daemon=True)
        thread.start()
        thread.join(timeout=120)
        assert not thread.is_alive(), "the forked worker never finished its compile"
        assert built[0].error is None and built[0].fallback is None and built[0].where != (
            "this process"), built
        (key,) = KernelCache().keys()
        assert json.loads(KernelCache().get(key)["asm.json"])["ptx"] == parent.asm["ptx"]
    finally:
        for pid in compile_pool.info().get("pids", []):  # a stuck worker would stall the shutdown
            os.kill(pid, signal.SIGKILL)
        compile_pool.shutdown()


def _local_kernel():
    """A kernel defined in a function (as in a notebook cell, no worker can import it)."""

    @tw.jit
    def local_sum(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x * scale + tl.sum(x, axis=0), mask=mask)

    return local_sum


def test_forked_workers_build_kernels_no_worker_could_import(cpu_target, monkeypatch):
    """With forked workers, kernels defined in a function (or a notebook cell) compile in the
    workers: they are in this process's memory as it forks. Each tune forks its own workers (none
    outlives it: a fork keeps the memory it shares); a worker that is no fork of this process (the
    spawned replacement of one killed mid-tune) leaves its config to the parent, which says so."""
    monkeypatch.setattr(settings, "compile_start", "fork")
    monkeypatch.setattr(settings, "print_autotuning", False)
    compile_pool.shutdown()
    with pytest.raises(parallel_compile.NotShippable):
        parallel_compile.locate(_local_kernel())  # not without forks
    first_pids = None
    for scale in (1.5, -0.75):  # the second kernel is defined after the first tune's forks
        tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=4)(_local_kernel())
        x, out = _rows(n_cols=45)
        tuned[(x.shape[0],)](x, out, x.shape[1], scale)
        _check(out, x, scale)
        compiled = [r["where"]["compiled"] for r in tuned.last_results.values()]
        pids = {int(w[4:]) for w in compiled if w.startswith("pid ")}
        assert pids, compiled
        assert "pool" not in compile_pool._POOL  # forks last one tune: none holds this memory on
        if first_pids is not None:
            assert not pids & first_pids, "the second tune's workers are the first's"
        first_pids = pids

    # a worker killed mid-tune is replaced by a spawned process, which has no carried kernel: the
    # config it was compiling is compiled here instead
    killed = _kill_a_worker_after_the_first_build(monkeypatch)
    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=4)(_local_kernel())
    x, out = _rows(n_cols=33)
    tuned[(x.shape[0],)](x, out, x.shape[1], 0.5)
    _check(out, x, 0.5)
    results = tuned.last_results.values()
    assert killed and all("error" not in r and r["screen_ms"] > 0 for r in results), results
    retried = [r for r in results if "LookupError" in " ".join(r.get("notes", []))]
    assert len(retried) == 1 and not retried[0]["where"]["compiled"].startswith("pid "), results


def _exit_slowly(seconds: float) -> int:
    """In a worker: make its exit take `seconds` (a finalizer, run as the process ends); its pid."""
    import multiprocessing.util

    multiprocessing.util.Finalize(None, time.sleep, args=(seconds,), exitpriority=100)
    return os.getpid()


def _ended(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().split(") ")[1][0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers and /proc")
def test_a_tune_stops_its_forks_without_waiting_for_them_to_exit(monkeypatch):
    """A tune's forks are idle when it ends: stopping them must not wait for each to exit (they
    exit on their own, joined by their executors' threads); waiting would."""
    monkeypatch.setattr(settings, "compile_start", "fork")
    compile_pool.shutdown()
    timings = {}
    for wait in (True, False):
        _, started = compile_pool.fork_with([(_exit_slowly, (1.0,)) for _ in range(2)])
        pids = [future.result(timeout=30) for future in started]
        begin = time.perf_counter()
        compile_pool.shutdown(wait=wait)
        timings[wait] = time.perf_counter() - begin
        deadline = time.monotonic() + 30
        while not all(_ended(pid) for pid in pids):
            assert time.monotonic() < deadline, f"workers {pids} never exited"
            time.sleep(0.05)
    assert timings[True] >= 1.0, timings  # the finalizer holds each exit for a second
    assert timings[False] < 0.5, timings
