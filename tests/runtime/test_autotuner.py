"""autotune, heuristics and Config on a fake jit function whose "kernels" sleep (host timing)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tileworkbench.errors import CompilationError, OutOfResources, TileworkbenchError
from tileworkbench.runtime import record
import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.runtime.autotuner import Config, autotune, heuristics


@pytest.fixture(autouse=True)
def host_timing(monkeypatch):
    """The fake kernels sleep on the host: time them there even where a GPU exists."""
    from tileworkbench.runtime import testing

    monkeypatch.setattr(testing, "_gpu_timing", lambda: False)


@pytest.fixture(autouse=True)
def full_timing(monkeypatch):
    """These tests time every config in full, as the sequential tuner does (screening has its
    own tests: test_screening.py)."""
    from tileworkbench.config import config as settings

    monkeypatch.setattr(settings, "autotune_screen", False)


class FakeJIT:
    """The interface of runtime/jit.py's JITFunction: run(*args, grid, warmup, **kwargs)."""

    def __init__(self, fn, cost_ms=None, fail=None):
        self.fn = fn
        self.arg_names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
        self.cost_ms = cost_ms or (lambda options: 0.0)
        self.fail = fail or (lambda options: None)
        self.launches: list[dict] = []
        self.compiled: list[dict] = []

    def run(self, *args, grid, warmup=False, **kwargs):
        error = self.fail(kwargs)
        if error is not None:
            raise error
        if warmup:
            self.compiled.append(dict(kwargs))
            return "compiled"
        self.launches.append({"grid": grid, **kwargs})
        record.record(("launch", dict(kwargs)))  # as the real JIT does while a recorder is active
        time.sleep(self.cost_ms(kwargs) / 1e3)
        named = dict(zip(self.arg_names, args))
        if "out" in named:  # an accumulating kernel: out += x
            named["out"] += named["x"]
        return "launched"

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def add_kernel(x, out, n, BLOCK):
    """Stand-in for a @jit function's Python source."""


def _configs():
    return [
        Config({"BLOCK": block}, num_warps=warps)
        for block, warps in [(128, 4), (256, 4), (512, 8), (1024, 8)]
    ]


# sleep costs per BLOCK: 512 is fastest by a margin no scheduler noise hides
COSTS = {128: 12.0, 256: 2.0, 512: 0.5, 1024: 6.0}


def _arrays(n=64):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n).astype(np.float32), np.full(n, np.nan, dtype=np.float32)


def test_config_attributes_equality_and_str():
    config = Config({"BLOCK": 128}, num_warps=8, num_stages=2)
    assert config.kwargs == {"BLOCK": 128}
    assert (config.num_warps, config.num_stages, config.num_ctas, config.maxnreg) == (8, 2, 1, None)
    assert config.all_kwargs() == {"BLOCK": 128, "num_warps": 8, "num_stages": 2}
    assert Config({"BLOCK": 128}, num_warps=8, num_stages=2) == config
    assert Config({"BLOCK": 128}, num_warps=4, num_stages=2) != config
    assert len({config, Config({"BLOCK": 128}, num_warps=8, num_stages=2)}) == 1
    assert str(config) == "BLOCK: 128, num_warps: 8, num_stages: 2"
    assert Config({}, maxnreg=128).all_kwargs()["maxnreg"] == 128


def test_autotune_picks_the_fastest_config_and_caches_it():
    jit = FakeJIT(add_kernel, cost_ms=lambda options: COSTS[options["BLOCK"]])
    tuned = autotune(_configs(), key=["n"], warmup=2, rep=12)(jit)
    x, out = _arrays()
    tuned[(4,)](x, out, 64)
    assert tuned.best_config == Config({"BLOCK": 512}, num_warps=8)
    assert tuned.cache[(64, "float32", "float32")] == tuned.best_config
    assert set(tuned.last_results) == set(_configs())
    times = {config.kwargs["BLOCK"]: result["ms"] for config, result in tuned.last_results.items()}
    assert times[512] < times[256] < times[1024] < times[128]
    assert times[128] >= 6.0
    assert tuned.configs_timings[tuned.best_config] == times[512]
    # the real launch comes last, with the best config's options and the caller's grid
    assert jit.launches[-1] == {"grid": (4,), "BLOCK": 512, "num_warps": 8, "num_stages": 3}
    launches = len(jit.launches)
    tuned.run(x, out, 64, grid=(4,))
    assert len(jit.launches) == launches + 1  # same key: no tuning again
    tuned.run(x, out, 128, grid=(4,))
    assert len(tuned.cache) == 2


def test_failing_configs_are_recorded_not_raised():
    def fail(options):
        if options["BLOCK"] == 1024:
            return OutOfResources(200000, 232448 // 2, "shared memory")
        if options["BLOCK"] == 512:
            return CompilationError("add.py:3:4: error: BLOCK too large for this kernel")
        return None

    jit = FakeJIT(add_kernel, cost_ms=lambda options: COSTS[options["BLOCK"]], fail=fail)
    tuned = autotune(_configs(), key=["n"], warmup=1, rep=8)(jit)
    x, out = _arrays()
    tuned[(1,)](x, out, 64)
    results = {config.kwargs["BLOCK"]: result for config, result in tuned.last_results.items()}
    assert results[1024]["error"] == "OutOfResources: " + str(fail({"BLOCK": 1024}))
    assert "ms" not in results[1024] and results[1024]["where"]["timed"] is None
    assert results[512]["error"].startswith("CompilationError: add.py:3:4")
    assert "ms" in results[128] and "ms" in results[256]
    assert tuned.best_config.kwargs == {"BLOCK": 256}
    assert tuned.configs_timings[Config({"BLOCK": 1024}, num_warps=8)] == float("inf")


def test_every_config_failing_raises_with_each_reason():
    jit = FakeJIT(add_kernel, fail=lambda options: CompilationError(f"bad {options['BLOCK']}"))
    tuned = autotune(_configs()[:2], key=["n"], warmup=1, rep=2)(jit)
    with pytest.raises(TileworkbenchError, match=r"every config of add_kernel failed") as info:
        tuned[(1,)](*_arrays(), 64)
    assert "bad 128" in str(info.value) and "bad 256" in str(info.value)


def test_pruning_is_recorded_with_its_reason():
    def early(configs, named_args, **kwargs):
        return [config for config in configs if config.kwargs["BLOCK"] <= named_args["n"] * 8]

    def model(**kwargs):
        return COSTS[kwargs["BLOCK"]]

    jit = FakeJIT(add_kernel, cost_ms=lambda options: 0.1)
    prune = {"early_config_prune": early, "perf_model": model, "top_k": 1}
    tuned = autotune(_configs(), key=["n"], prune_configs_by=prune, warmup=1, rep=2)(jit)
    tuned[(1,)](*_arrays(), 64)  # n * 8 = 512: BLOCK 1024 is pruned early
    results = {config.kwargs["BLOCK"]: result for config, result in tuned.last_results.items()}
    assert results[1024] == {"pruned": "early_config_prune"}
    assert results[128]["pruned"].startswith("perf_model estimate 12 not in top 1")
    assert results[256]["pruned"].startswith("perf_model estimate 2 ")
    assert "ms" in results[512] and tuned.best_config.kwargs == {"BLOCK": 512}


def test_reset_to_zero_and_restore_value():
    x, out = _arrays()
    start = np.random.default_rng(5).standard_normal(64).astype(np.float32)

    jit = FakeJIT(add_kernel)
    tuned = autotune(_configs()[:2], key=["n"], restore_value=["out"], warmup=1, rep=2)(jit)
    out[:] = start
    tuned[(1,)](x, out, 64)
    # tuning ran the kernel many times; the values were restored, then the real launch added x once
    np.testing.assert_allclose(out, start + x, rtol=1e-6)

    jit = FakeJIT(add_kernel)
    tuned = autotune(_configs()[:2], key=["n"], reset_to_zero=["out"], warmup=1, rep=2)(jit)
    out[:] = start
    tuned[(1,)](x, out, 64)
    # the last timed run started from zero; the real launch (no reset) added x once more
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


def test_autotune_argument_checks():
    jit = FakeJIT(add_kernel)
    with pytest.raises(ValueError, match="key of add_kernel names \\['m'\\]"):
        autotune(_configs(), key=["m"])(jit)
    with pytest.raises(ValueError, match="at least one Config"):
        autotune([], key=["n"])(jit)
    tuned = autotune(_configs(), key=["n"], warmup=1, rep=2)(jit)
    with pytest.raises(ValueError, match="conflicting meta-parameters BLOCK"):
        tuned[(1,)](*_arrays(), 64, BLOCK=64)


def test_single_config_launches_without_timing_and_warmup_compiles_all():
    jit = FakeJIT(add_kernel)
    tuned = autotune([Config({"BLOCK": 64}, num_warps=2)], key=["n"])(jit)
    tuned[(2, 1)](*_arrays(), 64)
    assert jit.launches == [{"grid": (2, 1), "BLOCK": 64, "num_warps": 2, "num_stages": 3}]
    tuned = autotune(_configs(), key=["n"])(jit)
    assert tuned.run(*_arrays(), 64, grid=(1,), warmup=True) == ["compiled"] * 4
    assert [c["BLOCK"] for c in jit.compiled] == [128, 256, 512, 1024]


def test_custom_do_bench_is_called_like_tritons():
    calls = []

    def bench(kernel_call, quantiles):
        kernel_call()
        calls.append(quantiles)
        return [float(len(calls)), 0.0, 0.0]  # later configs look slower

    jit = FakeJIT(add_kernel)
    tuned = autotune(_configs(), key=["n"], do_bench=bench)(jit)
    tuned[(1,)](*_arrays(), 64)
    assert calls == [(0.5, 0.2, 0.8)] * 4
    assert tuned.best_config.kwargs == {"BLOCK": 128}


def test_heuristics_compute_meta_parameters():
    jit = FakeJIT(add_kernel)
    rules = {
        "BLOCK": lambda args: 1 << (args["n"] - 1).bit_length(),
        "EVEN": lambda args: args["n"] % args["BLOCK"] == 0,
    }
    kernel = heuristics(rules)(jit)
    assert kernel.arg_names == jit.arg_names and kernel.fn is jit
    kernel[(1,)](*_arrays(), 100)
    assert jit.launches[-1] == {"grid": (1,), "BLOCK": 128, "EVEN": False}
    kernel.run(*_arrays(), 64, grid=(1,))
    assert jit.launches[-1]["EVEN"] is True


def test_autotune_over_heuristics():
    jit = FakeJIT(add_kernel, cost_ms=lambda options: 2.0 if options["num_warps"] == 4 else 0.2)
    inner = heuristics({"BLOCK": lambda args: 256})(jit)
    configs = [Config({}, num_warps=4), Config({}, num_warps=8)]
    tuned = autotune(configs, key=["n"], warmup=1, rep=6)(inner)
    tuned[(3,)](*_arrays(), 64)
    assert tuned.base_fn is add_kernel
    assert tuned.best_config.num_warps == 8
    assert jit.launches[-1] == {"grid": (3,), "num_warps": 8, "num_stages": 3, "BLOCK": 256}


def test_a_wrapper_whose_fn_is_itself_does_not_hang():
    jit = FakeJIT(add_kernel)
    jit.fn = jit
    tuned = autotune(_configs(), key=["n"])(jit)
    assert tuned.base_fn is jit


def test_timing_runs_are_not_recorded_and_results_follow_the_key():
    jit = FakeJIT(add_kernel, cost_ms=lambda options: COSTS[options["BLOCK"]] / 4)
    tuned = autotune(_configs(), key=["n"], warmup=1, rep=4)(jit)
    with record.record_launches() as launches:
        tuned[(1,)](*_arrays(64), 64)
    assert launches == [("launch", {"BLOCK": 512, "num_warps": 8, "num_stages": 3})]
    first = tuned.last_results
    tuned[(1,)](*_arrays(32), 32)
    assert tuned.last_results is not first and set(tuned.results) == {
        (64, "float32", "float32"),
        (32, "float32", "float32"),
    }
    tuned[(1,)](*_arrays(64), 64)  # cached: no tuning, but the results shown are this key's
    assert tuned.last_results is first


@tw.jit
def staged_matmul(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)


class CompilingJIT(FakeJIT):
    """Each launch returns the config's real kernel compiled for sm_90 (ptxas on PATH; no GPU)."""

    def run(self, *args, grid, warmup=False, num_warps=4, num_stages=3, **kwargs):
        time.sleep(0.001 * num_stages)  # stage 2 is the fastest
        return tw.compile(
            staged_matmul, signature="a=*fp16:16,b=*fp16:16,c=*fp32:16,K=i32:16",
            constexprs=kwargs, target="sm_90", num_warps=num_warps, num_stages=num_stages,
            use_cache=False,  # no background cache writes landing in a later test's cache
        )


def test_autotune_table_has_each_configs_resources_and_prints_on_request(monkeypatch, capsys):
    from tileworkbench.config import config as settings
    from tileworkbench.workbench.build import autotune_rows

    monkeypatch.setattr(settings, "print_autotuning", True)
    # BK=64: the rings (stages x 16 KB) outweigh the epilogue's staging tile (16 KB) that reuses them
    configs = [Config({"BM": 64, "BN": 64, "BK": 64}, num_warps=4, num_stages=s) for s in (2, 3)]
    tuned = autotune(configs, key=["K"], warmup=1, rep=4)(CompilingJIT(staged_matmul.fn))
    tuned[(1,)](None, None, None, 128)
    results = {config.num_stages: result for config, result in tuned.last_results.items()}
    for stages, result in results.items():
        compiled = tw.compile(
            staged_matmul, signature="a=*fp16:16,b=*fp16:16,c=*fp32:16,K=i32:16",
            constexprs={"BM": 64, "BN": 64, "BK": 64}, target="sm_90", num_stages=stages,
            use_cache=False,
        )
        assert result["shared"] == compiled.metadata.shared > 0
        assert result["regs"] == compiled.metadata.n_regs and result["regs"] > 0
        assert result["spills"] == compiled.metadata.n_spills
    assert results[3]["shared"] > results[2]["shared"]  # one more ring slot
    rows = {row.config: row for row in autotune_rows(tuned.last_results)}
    assert all(f"{row.regs} regs" in row.resources() for row in rows.values())
    printed = capsys.readouterr().out
    assert "tileworkbench autotuning for function staged_matmul" in printed
    assert f"best config selected: {tuned.best_config};" in printed
    assert f"shared {results[3]['shared']}" in printed and f"shared {results[2]['shared']}" in printed
    assert printed.count(" ms; regs ") == 2
