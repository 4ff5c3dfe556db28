"""Autotuning with configs compiled in worker processes (runtime/parallel_compile.py), on the cpu
target: a cold tune through the on-disk cache, compile errors reported as a sequential tune reports
them, a worker killed mid-build, stand-ins that specialize as the real arguments do, and the timing
lanes (several GPUs) with fake devices."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config as settings
from tileworkbench.runtime import compile_pool, parallel_compile
from tileworkbench.runtime.specialize import key_part as arg_spec_key


@tw.jit
def scale_rows(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * scale + tl.sum(x, axis=0), mask=mask)


@tw.jit
def copy_tiles(src, dst, BLOCK: tl.constexpr, WIDTH: tl.constexpr):
    row = tl.program_id(0) * BLOCK
    dst.store([row, 0], src.load([row, 0]) * 2)


def _tile_blocks(nargs):
    """As tutorial 06's pre_hook: each config sets its descriptors' block shapes."""
    for name in ("src", "dst"):
        nargs[name].block_shape = [nargs["BLOCK"], nargs["WIDTH"]]


CONFIGS = [tw.Config({"BLOCK": block}, num_warps=warps) for block in (64, 128) for warps in (2, 4)]
tuned_rows = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=2)(scale_rows)
# BLOCK=48 is no power of two: tl.arange refuses it when the config compiles
failing_rows = tw.autotune(configs=[tw.Config({"BLOCK": 48}), tw.Config({"BLOCK": 64})],
                           key=["n_cols"], warmup=1, rep=2)(scale_rows)


@pytest.fixture
def cpu_target(monkeypatch, tmp_path):
    """The cpu target (it has the on-disk cache) with an empty cache, and two compile workers,
    started (else the tune compiles a config itself while they start); full timing of every
    config (test_screening.py screens)."""
    monkeypatch.setattr(settings, "target", "cpu")
    monkeypatch.setattr(settings, "interpret", False)
    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(settings, "compile_workers", 2)
    monkeypatch.setattr(settings, "autotune_screen", False)
    compile_pool.pool(2, target="cpu")
    yield
    parallel_compile.shutdown_pool()


def _rows(n_rows=3, n_cols=50):
    x = np.random.default_rng().standard_normal((n_rows, n_cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    return x, out


def _expected(x, scale):
    x64 = x.astype(np.float64)
    return x64 * scale + x64.sum(axis=1, keepdims=True)


def _check(out, expected):
    error = np.abs(out - expected).max() / np.abs(expected).max()
    assert error < 1e-5, error


def test_cold_tune_compiles_in_workers_and_launches_the_fastest(cpu_target):
    x, out = _rows()
    tuned_rows[(x.shape[0],)](x, out, x.shape[1], 1.5)
    _check(out, _expected(x, 1.5))
    results = tuned_rows.last_results
    assert list(results) == CONFIGS  # the table keeps the configs' order
    pids = set()
    for config, result in results.items():
        assert result["ms"] > 0 and result["compile_s"] > 0 and result["bench_s"] > 0, result
        compiled, timed = result["where"]["compiled"], result["where"]["timed"]
        assert compiled.startswith("pid ") and timed == "cpu (CPU)", result
        pids.add(int(compiled.split()[1]))
    assert os.getpid() not in pids  # built in the workers; the parent read them from the cache
    timings = tuned_rows.configs_timings
    assert tuned_rows.best_config == min(timings, key=timings.__getitem__)
    from tileworkbench.runtime.cache import KernelCache

    assert len(KernelCache().keys()) == len(CONFIGS)  # each config compiled once, by its worker


def test_host_kernels_are_timed_only_once_every_config_is_built(cpu_target, monkeypatch):
    """The cpu target's kernels run on the cores the workers compile on: no config is timed
    until the last is built (a GPU tune times each as soon as it is built)."""
    events = []
    build = parallel_compile.build

    def watched_build(*args, **kwargs):
        for built in build(*args, **kwargs):
            events.append("built")
            yield built

    tuned = tw.autotune(configs=CONFIGS, key=["n_cols"], warmup=1, rep=2)(scale_rows)
    do_bench = tuned._do_bench
    monkeypatch.setattr(parallel_compile, "build", watched_build)
    monkeypatch.setattr(tuned, "_do_bench", lambda *a, **k: events.append("timed") or do_bench(*a, **k))
    x, out = _rows(n_cols=37)
    tuned[(x.shape[0],)](x, out, x.shape[1], 2.0)
    _check(out, _expected(x, 2.0))
    assert events == ["built"] * len(CONFIGS) + ["timed"] * len(CONFIGS), events
    assert all(r["where"]["compiled"].startswith("pid ") for r in tuned.last_results.values())


def test_print_autotuning_shows_compile_and_bench_time_and_where(cpu_target, monkeypatch, capsys):
    monkeypatch.setattr(settings, "print_autotuning", True)
    tuned = tw.autotune(configs=CONFIGS[:2], key=["n_cols"], warmup=1, rep=2)(scale_rows)
    x, out = _rows(n_cols=40)
    tuned[(x.shape[0],)](x, out, x.shape[1], 0.5)
    _check(out, _expected(x, 0.5))
    lines = [line for line in capsys.readouterr().out.splitlines() if "BLOCK: 64" in line]
    assert len(lines) == 3, lines  # the choice and the two configs
    for line in lines[1:]:
        assert " ms; compile " in line and "s (pid " in line and "bench " in line, line
        assert "(cpu (CPU))" in line, line


def test_compile_errors_are_reported_as_a_sequential_tune_reports_them(cpu_target, monkeypatch):
    x, out = _rows()
    failing_rows[(x.shape[0],)](x, out, x.shape[1], 2.0)
    _check(out, _expected(x, 2.0))
    parallel = {c.kwargs["BLOCK"]: r for c, r in failing_rows.last_results.items()}
    assert parallel[48]["where"]["compiled"].startswith("pid ")
    monkeypatch.setattr(settings, "compile_workers", 0)  # the same tune, one config after another
    sequential_tuner = tw.autotune(configs=failing_rows.configs, key=["n_cols"], warmup=1,
                                   rep=2)(scale_rows)
    sequential_tuner[(x.shape[0],)](x, out, x.shape[1], 2.0)
    sequential = {c.kwargs["BLOCK"]: r for c, r in sequential_tuner.last_results.items()}
    assert sequential[48]["where"]["compiled"] == "this process"
    assert parallel[48]["error"] == sequential[48]["error"]
    assert parallel[48]["error"].startswith("TileTypeError: ") and "arange" in parallel[48]["error"]
    assert "ms" in parallel[64] and "ms" in sequential[64]


def _jobs(count: int, scale_name="scale"):
    """Jobs for `count` BLOCK values of scale_rows, as the autotuner makes them."""
    x, out = _rows()
    place = parallel_compile.locate(scale_rows)
    jobs = {}
    for index in range(count):
        args = [x, out, x.shape[1], 1.0]
        jobs[str(index)] = parallel_compile.CompileJob(
            str(index), *place, args=[parallel_compile.encode_value(a) for a in args],
            kwargs={"BLOCK": {"plain": 16 << index}, "num_warps": {"plain": 4}},
            settings=parallel_compile.worker_settings("cpu"))
    return jobs


def test_a_worker_killed_mid_build_loses_only_its_config(cpu_target):
    jobs = _jobs(5)
    built = []
    for item in parallel_compile.build(jobs, workers=2):
        built.append(item)
        if len(built) == 1:  # the other worker is busy with a config: kill it there
            pool = compile_pool._POOL["pool"]
            victim = next(p for p in pool.pids() if p != int(item.where.split()[1]))
            os.kill(victim, signal.SIGKILL)
    assert sorted(b.label for b in built) == sorted(jobs)
    assert all(b.error is None and b.fallback is None for b in built), built
    # only the config the dead worker was compiling is built again, by a fresh process
    retried = [b for b in built if any("worker death" in note for note in b.notes)]
    assert len(retried) == 1 and retried[0].where != f"pid {victim}", built


def test_stand_ins_specialize_as_the_arguments_do():
    buffer = np.zeros(80, np.float32)
    values = [buffer[:64], buffer[1:65], 7, 32, 1, 2.5, np.float16(1.0), tl.float16, (1, 2)]
    for value in values:
        copy = parallel_compile.stand_in(value)
        if isinstance(value, (tuple, type(tl.float16))):
            assert copy == value
        else:
            assert arg_spec_key(copy) == arg_spec_key(value), value
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    gpu_like = parallel_compile.ArrayStandIn("float16", 0x7F0000000010, (64, 32), (32, 1))
    desc = TensorDescriptor(gpu_like, [64, 32], [32, 1], [16, 32])
    copy = parallel_compile.stand_in(desc)
    assert arg_spec_key(copy) == arg_spec_key(desc) and copy is not desc
    copy.block_shape = [32, 32]  # what a config's pre_hook does to its own copy
    assert desc.block_shape == [16, 32]
    with pytest.raises(parallel_compile.NotShippable, match="object"):
        parallel_compile.encode_value(object())


def test_gpu_configs_build_in_workers_with_no_gpu_and_the_parent_finds_them(monkeypatch, tmp_path):
    """sm_90a configs of a kernel taking host descriptors, whose pre_hook sets their block shapes
    (part of the specialization): built by workers into the cache, where the parent's own compile
    of each config, as its tune makes it, is a hit."""
    from tileworkbench.backends.nvptx.tools import missing_for
    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.setattr(settings, "target", "sm_90a")
    monkeypatch.setattr(settings, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(settings, "compile_workers", 2)
    configs = [tw.Config({"BLOCK": 64}, num_warps=4, pre_hook=_tile_blocks),
               tw.Config({"BLOCK": 128}, num_warps=8, pre_hook=_tile_blocks)]
    tuner = tw.autotune(configs=configs, key=["WIDTH"])(copy_tiles)

    def tensor(address):  # a GPU tensor as far as specialization can tell
        return parallel_compile.ArrayStandIn("float16", address, (1024, 64), (64, 1))

    args = tuple(TensorDescriptor(tensor(address), [1024, 64], [64, 1], [1, 1])
                 for address in (0x7F0000000000, 0x7F0000100000))
    named = dict(zip(tuner.arg_names, args))
    jobs = tuner._jobs(args, named, {"WIDTH": 64}, configs)
    try:
        compile_pool.pool(2, target="sm_90a")  # up first: else this process builds one itself
        built = list(parallel_compile.build({str(i): jobs[c] for i, c in enumerate(configs)}))
    finally:
        parallel_compile.shutdown_pool()
    assert [b.error or b.fallback for b in built] == [None, None], built
    assert args[0].block_shape == [1, 1]  # the pre_hooks ran on stand-ins, not on the arguments
    for config in configs:
        options = {"WIDTH": 64, **config.all_kwargs()}
        config.pre_hook({**named, **options})
        compiled = copy_tiles.run(*args, grid=(1,), warmup=True, **options)
        assert compiled.metadata.cache_hit, config
        # the worker stopped after ptxas: no SASS in the entry; this process makes it when read
        assert compiled.cubin is not None and "sass" not in compiled._asm
        assert f"tensor<{config.kwargs['BLOCK']}x64xf16>" in compiled.asm["tile"]  # its block shape
        assert compiled.metadata.num_warps == config.num_warps
        if missing_for("sass") is None:
            assert "UTMALDG" in compiled.asm["sass"] and compiled.line_map["sass"]


def test_a_kernel_no_worker_can_import_is_compiled_here():
    def local():
        @tw.jit
        def inner(x_ptr):
            pass

        return inner

    with pytest.raises(parallel_compile.NotShippable, match="module-level"):
        parallel_compile.locate(local())
    assert parallel_compile.locate(tuned_rows.fn)[2:] == ("scale_rows", 0, None)


# -- timing lanes: one config per device at a time, with fake devices ------------------------------


def test_lanes_time_every_config_once_one_at_a_time_per_device():
    costs = {f"c{i}": random.uniform(1.0, 5.0) for i in range(12)}
    busy = {}
    overlap = []
    lock = threading.Lock()

    def lane(name):
        def bench(item):
            with lock:
                if busy.get(name):
                    overlap.append(name)
                busy[name] = True
            time.sleep(0.005 + 0.002 * costs[item] / 5)  # longer than configs take to arrive
            with lock:
                busy[name] = False
            return costs[item] * (1 + random.uniform(-0.001, 0.001))  # a little timing noise

        return parallel_compile.Lane(name, bench)

    def built():  # configs arrive as their compiles finish: three at once, then some late
        for number, name in enumerate(costs):
            if number >= 3:
                time.sleep(random.uniform(0, 0.003))
            yield name

    lanes = [lane(f"GPU {d}") for d in range(3)]
    done = parallel_compile.time_on_lanes(built(), lanes)
    assert sorted(item for item, _, _ in done) == sorted(costs)
    assert not overlap
    assert {where for _, where, _ in done} == {"GPU 0", "GPU 1", "GPU 2"}
    timings = {item: result for item, _, result in done}
    sequential = {item: lane("GPU 0").bench(item) for item in costs}
    # the choice of timing one after another on one device (costs differ by more than the noise)
    assert min(timings, key=timings.get) == min(sequential, key=sequential.get)


def test_a_lane_error_reaches_the_caller_for_its_item_only():
    def bench(item):
        if item == "bad":
            raise ValueError("no")
        return 1.0

    lanes = [parallel_compile.Lane(f"GPU {d}", bench) for d in range(2)]
    done = parallel_compile.time_on_lanes(["a", "bad", "b"], lanes, lambda item, error: error)
    results = {item: result for item, _, result in done}
    assert results["a"] == results["b"] == 1.0 and isinstance(results["bad"], ValueError)


def test_worker_count_setting(monkeypatch):
    monkeypatch.setattr(settings, "compile_workers", None)
    assert parallel_compile.worker_count(3) == min(3, os.cpu_count())
    monkeypatch.setattr(settings, "compile_workers", 0)
    assert parallel_compile.worker_count(10) == 0
    monkeypatch.setenv("TILEWORKBENCH_COMPILE_WORKERS", "x")
    from tileworkbench.config import Config

    with pytest.raises(ValueError, match="TILEWORKBENCH_COMPILE_WORKERS must be"):
        Config()


def test_while_the_pool_starts_one_lane_takes_every_config_and_several_lanes_half(monkeypatch):
    """One GPU times configs one at a time, so this process compiles each as its GPU takes it
    until the workers are up (here never); several GPUs take configs as fast as they come, so
    they get half and the workers keep the rest."""
    started = []
    monkeypatch.setattr(compile_pool, "ready", lambda workers: False)
    monkeypatch.setattr(compile_pool, "prestart", lambda workers, target: started.append(workers))
    jobs = _jobs(6)
    for lanes, taken in ((1, 6), (2, 3)):
        left = dict(jobs)
        handed = list(parallel_compile._while_starting(left, 4, "cpu", lanes))
        assert [b.label for b in handed] == list(jobs)[:taken] and len(left) == 6 - taken
        assert all(b.fallback and b.where == "this process" for b in handed)
    assert started == [4, 4]
