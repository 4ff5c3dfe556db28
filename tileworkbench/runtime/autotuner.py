"""`autotune`, `heuristics` and `Config`, as Triton's: wrappers around a jit function that choose its
meta-parameters (and num_warps/num_stages) per call.

The autotuner times every config once per key (the values of the `key` arguments and the dtypes of
the array arguments) and caches the fastest. Unlike Triton it keeps every config's outcome in
`last_results`: its time and the compiled kernel's resources (registers, spills, shared memory), the
error that stopped it (compile error, out of resources, ...), or why it was pruned, and what it cost
and where (compile and bench seconds; the process, host or GPU), for the workbench to show.
`TILEWORKBENCH_PRINT_AUTOTUNING=1` prints that table and the choice after each tuning.

The configs compile in worker processes (or an outside engine's workers: `executor=`) and each is
timed as soon as it is built, one config per GPU at a time (runtime/parallel_compile.py). That
timing is a short screen by default; once every config is built, the screen's finalists are timed
with the full do_bench and the choice is made among them (runtime/screening.py;
TILEWORKBENCH_AUTOTUNE_SCREEN=0 times every config in full). With TILEWORKBENCH_COMPILE_WORKERS=0
the tuner is the sequential one: compile, time in full, next.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from tileworkbench.config import config as settings
from tileworkbench.errors import TileworkbenchError
from tileworkbench.runtime import compile_pool, parallel_compile, record, screening


class Config:
    """One choice of meta-parameters and launch options for an autotuned kernel.

    Args:
        kwargs: the constexpr values, e.g. {"BLOCK_SIZE": 1024}.
        num_warps: warps per program.
        num_stages: software-pipelining depth for loops.
        num_ctas: CTAs per cluster (accepted for Triton compatibility; 1 only).
        maxnreg: at most this many registers per thread (NVPTX: `.maxnreg` on the kernel entry).
        pre_hook: called with the full argument dict before each launch with this config.
    """

    def __init__(
        self,
        kwargs: dict[str, Any],
        num_warps: int = 4,
        num_stages: int = 3,
        num_ctas: int = 1,
        maxnreg: int | None = None,
        pre_hook: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def _launch_options(self) -> dict[str, Any]:
        options = {"num_warps": self.num_warps, "num_stages": self.num_stages}
        # the Triton-only options are passed on only when set, so fn.run need not know them
        if self.num_ctas != 1:
            options["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return options

    def all_kwargs(self) -> dict[str, Any]:
        """The constexprs and the launch options in one dict, as `fn.run` takes them."""
        return {**self.kwargs, **self._launch_options()}

    def _identity(self) -> tuple:
        return (
            tuple(sorted(self.kwargs.items(), key=lambda item: item[0])),
            tuple(sorted(self._launch_options().items())),
            self.pre_hook,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        try:
            return hash(self._identity())
        except TypeError:  # an unhashable constexpr value: equal configs still hash alike
            return hash(repr(self._identity()))

    def __str__(self) -> str:
        items = [f"{name}: {value}" for name, value in self.kwargs.items()]
        items += [f"{name}: {value}" for name, value in self._launch_options().items()]
        return ", ".join(items)

    def __repr__(self) -> str:
        return f"Config({self})"


class KernelInterface:
    """What autotune and heuristics wrap and are: `.run(*args, grid=..., **kwargs)` and
    `kernel[grid](*args, **kwargs)`."""

    fn: Any
    arg_names: list[str]

    def run(self, *args, grid, warmup: bool = False, **kwargs):
        raise NotImplementedError

    def __getitem__(self, grid) -> Callable[..., Any]:
        def launcher(*args, **kwargs):
            return self.run(*args, grid=grid, warmup=False, **kwargs)

        return launcher


def _base_function(fn: Any) -> Callable[..., Any]:
    """The user's Python function under any stack of wrappers (each exposing `.fn`)."""
    seen = set()
    while not inspect.isfunction(fn) and hasattr(fn, "fn") and id(fn) not in seen:
        seen.add(id(fn))  # a wrapper whose .fn is itself must not loop forever
        fn = fn.fn
    return fn


class Autotuner(KernelInterface):
    """Chooses the fastest `Config` for each key and launches `fn` with it. See `autotune`."""

    def __init__(
        self,
        fn,
        arg_names: list[str],
        configs: Sequence[Config],
        key: Sequence[str],
        reset_to_zero: Sequence[str] | None = None,
        restore_value: Sequence[str] | None = None,
        prune_configs_by: dict[str, Any] | None = None,
        warmup: float | None = None,
        rep: float | None = None,
        do_bench: Callable[..., Any] | None = None,
        executor: Any = None,
    ):
        if not configs:
            raise ValueError(f"autotune of {_name(fn)} needs at least one Config")
        self.fn = fn
        self.base_fn = _base_function(fn)
        self.arg_names = list(arg_names)
        self.configs = list(configs)
        self.keys = list(key)
        _check_names(self.keys, self.arg_names, "key", fn)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        _check_names(self.reset_to_zero, self.arg_names, "reset_to_zero", fn)
        _check_names(self.restore_value, self.arg_names, "restore_value", fn)
        prune = prune_configs_by or {}
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.warmup = warmup
        self.rep = rep
        self.user_do_bench = do_bench
        self.executor = executor  # compiles configs on an outside engine (parallel_compile.build)
        self.cache: dict[tuple, Config] = {}
        self.configs_timings: dict[Config, float] = {}
        self.last_results: dict[Config, dict[str, Any]] = {}
        self.results: dict[tuple, dict[Config, dict[str, Any]]] = {}  # per key
        self.timings: dict[tuple, dict[Config, float]] = {}  # per key
        self.best_config: Config | None = None
        self.bench_time_s = 0.0
        self.phase_seconds: dict[str, Any] = {}

    # -- the key and the configs to try -------------------------------------------------------

    def _key(self, named_args: dict[str, Any]) -> tuple:
        key = [named_args[name] for name in self.keys if name in named_args]
        key += [str(value.dtype) for value in named_args.values() if hasattr(value, "dtype")]
        return tuple(key)

    def prune_configs(self, named_args: dict[str, Any], kwargs: dict[str, Any]) -> list[Config]:
        """The configs worth timing; the others get a "pruned" entry in `last_results`."""
        configs = list(self.configs)
        if self.early_config_prune is not None:
            kept = list(self.early_config_prune(configs, named_args, **kwargs))
            self._mark_pruned([c for c in configs if c not in kept], "early_config_prune")
            configs = kept
        if self.perf_model is not None and configs:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))
            estimates = {
                c: self.perf_model(**named_args, **kwargs, **c.all_kwargs()) for c in configs
            }
            ranked = sorted(configs, key=lambda c: estimates[c])
            for config in ranked[top_k:]:
                self.last_results[config] = {
                    "pruned": f"perf_model estimate {estimates[config]:.4g} not in top {top_k}"
                }
            configs = ranked[:top_k]
        return configs

    def _mark_pruned(self, configs: list[Config], reason: str) -> None:
        for config in configs:
            self.last_results[config] = {"pruned": reason}

    # -- hooks for kernels that accumulate into their outputs ---------------------------------

    def _before_bench(self, named_args: dict[str, Any]) -> None:
        for name in self.reset_to_zero:
            _zero(named_args[name])

    def _save_values(self, named_args: dict[str, Any]) -> dict[str, Any]:
        return {name: _copy(named_args[name]) for name in self.restore_value}

    def _restore_values(self, named_args: dict[str, Any], saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            _assign(named_args[name], value)

    # -- timing --------------------------------------------------------------------------------

    def _bench(
        self,
        args: tuple,
        named_args: dict[str, Any],
        config: Config,
        grid,
        kwargs: dict[str, Any],
        screen: bool = False,
    ) -> tuple[float, Any]:
        """The config's time in ms and the compiled kernel it launched."""
        conflicts = sorted(set(kwargs) & set(config.kwargs))
        if conflicts:
            raise ValueError(
                f"conflicting meta-parameters {', '.join(conflicts)} in the call of "
                f"{_name(self.fn)}: they are autotuned, do not pass them"
            )
        options = {**kwargs, **config.all_kwargs()}
        full_args = {**named_args, **options}
        launched = []

        def kernel_call():
            if config.pre_hook is not None:
                config.pre_hook(full_args)
            self._before_bench(named_args)
            launched.append(self.fn.run(*args, grid=grid, warmup=False, **options))
            del launched[:-1]

        ms = _first(self._do_bench(kernel_call, screen))
        return ms, launched[-1] if launched else None

    def _do_bench(self, kernel_call: Callable[[], None], screen: bool = False):
        if self.user_do_bench is not None:
            return self.user_do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        from tileworkbench.runtime.testing import do_bench

        warmup = 25 if self.warmup is None else self.warmup
        rep = 100 if self.rep is None else self.rep
        if screen:
            return screening.screen_bench(kernel_call, warmup, rep)
        return do_bench(kernel_call, warmup=warmup, rep=rep, quantiles=(0.5, 0.2, 0.8))

    def _tune(self, args: tuple, named_args: dict[str, Any], grid, kwargs) -> Config:
        begin = time.perf_counter()
        self.last_results = {}
        configs = self.prune_configs(named_args, kwargs)
        for config in configs:  # the table keeps the configs' order whatever order they finish in
            self.last_results[config] = {}
        saved = self._save_values(named_args)
        lanes = self._lanes(args, named_args, grid, kwargs, saved)
        screen = self._screens(configs)
        phase = "screen" if screen else "full"
        with record.paused():  # the workbench records the real launch, not the timing runs
            built = self._built(args, named_args, grid, kwargs, configs, len(lanes))
            done = parallel_compile.time_on_lanes(
                ((config, item, phase) for config, item in built), lanes, _handed_back
            )
            for (config, item, _), lane, outcome in done:
                self.last_results[config] = self._result(item, lane, outcome, phase)
            built_at = time.perf_counter()
            if screen:
                self._time_finalists(lanes, {item[0]: item[1] for item, _, _ in done})
        # wall seconds of the tune's two parts: compiling and timing (or screening) as configs
        # are built, then timing the screen's finalists
        self.phase_seconds = {
            "built": built_at - begin,
            "finalists": time.perf_counter() - built_at,
            "screened": screen,
        }
        timings = {config: self.last_results[config].get("ms", float("inf")) for config in configs}
        self.configs_timings = {
            config: result.get("ms", result.get("screen_ms", float("inf")))
            for config, result in self.last_results.items()
            if config in timings
        }
        self.bench_time_s = time.perf_counter() - begin
        usable = [config for config, ms in timings.items() if ms != float("inf")]
        if not usable:
            raise TileworkbenchError(self._all_failed_message())
        best = min(usable, key=timings.__getitem__)
        if settings.print_autotuning:
            print(self._tuning_summary(named_args, best), flush=True)
        return best

    def _screens(self, configs: list[Config]) -> bool:
        """Whether this tune screens (runtime/screening.py): the parallel tuner's default (configs
        compile in workers), with Triton's do_bench (a user's do_bench times every config)."""
        parallel = self.executor is not None or parallel_compile.worker_count(len(configs)) > 1
        return (
            settings.autotune_screen
            and parallel
            and self.user_do_bench is None
            and screening.screens(len(configs), settings.autotune_finalists)
        )

    def _result(self, built, lane: str, outcome, phase: str) -> dict[str, Any]:
        """A config's `last_results` entry from its lane's outcome: (ms, compiled, compile or
        load seconds, timing seconds), or the TileworkbenchError that stopped it."""
        if isinstance(outcome, BaseException) and not isinstance(outcome, TileworkbenchError):
            raise outcome
        result: dict[str, Any] = {}
        if isinstance(outcome, TileworkbenchError):  # compile error, out of resources, ...
            kind = getattr(outcome, "kind", None) or type(outcome).__name__
            result["error"] = f"{kind}: {outcome}"
        else:
            ms, compiled, compile_s, bench_s = outcome
            if phase == "screen":
                result.update(screen_ms=ms, **resources(compiled), screen_s=bench_s)
            else:
                result.update(ms=ms, **resources(compiled), bench_s=bench_s)
            if built.fallback is not None:
                result["compile_s"] = compile_s
            else:  # built by a worker: this process loaded it from the cache
                result["load_s"] = compile_s
                hit = getattr(getattr(compiled, "metadata", None), "cache_hit", True)
                if not hit and phase != "final":
                    built.notes.append("compiled again here: the worker's build was not found")
        if built.seconds is not None and built.fallback is None:
            result["compile_s"] = built.seconds
        timed = None if "error" in result else lane
        result["where"] = {"compiled": built.where, "timed": timed}
        if built.notes:
            result["notes"] = list(built.notes)
        return result

    def _time_finalists(self, lanes: list, built: dict[Config, Any]) -> None:
        """Time the screen's finalists in full, on the lanes; the choice is made among them."""
        screen_ms = {
            config: result["screen_ms"]
            for config, result in self.last_results.items()
            if "screen_ms" in result
        }
        chosen = screening.finalists(screen_ms, settings.autotune_finalists)
        for config in screen_ms:
            self.last_results[config]["finalist"] = config in chosen
        done = parallel_compile.time_on_lanes(
            ((config, built[config], "final") for config in chosen), lanes, _handed_back
        )
        for (config, item, _), lane, outcome in done:
            final = self._result(item, lane, outcome, "final")
            result = self.last_results[config]
            if "error" in final:
                result["error"] = final["error"]
                continue
            result.update(ms=final["ms"], bench_s=final["bench_s"])
            result["where"]["timed"] = lane

    def _built(
        self, args: tuple, named_args: dict[str, Any], grid, kwargs, configs: list[Config], lanes=1
    ):
        """(config, parallel_compile.Built) as each config is compiled: in worker processes (or
        `executor`'s workers) where they can take it, else one after another in this process."""
        jobs = self._jobs(args, named_args, kwargs, configs)
        if jobs is None:
            for config in configs:
                yield config, parallel_compile.Built(str(config), fallback="sequential")
            return
        by_label = {str(i): config for i, config in enumerate(configs)}
        labelled = {str(i): jobs[config] for i, config in enumerate(configs)}
        builds = parallel_compile.build(labelled, self.executor, lanes=lanes)
        if parallel_compile.runs_on_host(parallel_compile.launch_target(kwargs)):
            builds = list(builds)  # all built before any is timed: see runs_on_host
        for built in builds:
            config = by_label[built.label]
            if built.error is not None:  # the config's own failure, as a sequential tune reports it
                built.error = _WorkerError(built.error)
            yield config, built

    def _jobs(self, args: tuple, named_args: dict[str, Any], kwargs, configs: list[Config]):
        """Config -> CompileJob (None: compiled here), or None where workers would not help: one
        worker, a target with no on-disk cache (the interpreter), a kernel no worker can find."""
        if self.executor is None and parallel_compile.worker_count(len(configs)) <= 1:
            return None
        try:
            target = parallel_compile.launch_target(kwargs)
            if not parallel_compile.cacheable_target(target):
                return None
            forked = self.executor is None and compile_pool.forks_here()
            place = parallel_compile.locate(self.fn, forked=forked)
        except (parallel_compile.NotShippable, TileworkbenchError):
            return None
        jobs = {}
        for index, config in enumerate(configs):
            try:
                jobs[config] = self._job(str(index), place, target, args, kwargs, config)
            except Exception:  # no stand-in for an argument, a pre_hook that needs real arrays
                jobs[config] = None
        return jobs

    def _job(self, label: str, place, target: str, args: tuple, kwargs, config: Config):
        options = {**kwargs, **config.all_kwargs()}
        stand_args = [parallel_compile.stand_in(value) for value in args]
        stand_options = {name: parallel_compile.stand_in(value) for name, value in options.items()}
        if config.pre_hook is not None:  # e.g. tutorial 06's: descriptors' block shapes per config
            named = dict(zip(self.arg_names, stand_args))
            named.update({k: v for k, v in stand_options.items() if k in self.arg_names})
            config.pre_hook({**named, **stand_options})
        encode = parallel_compile.encode_value
        return parallel_compile.CompileJob(
            label,
            *place,
            args=[encode(value) for value in stand_args],
            kwargs={name: encode(value) for name, value in stand_options.items()},
            settings=parallel_compile.worker_settings(target, sass=False),
        )

    def _lanes(self, args: tuple, named_args, grid, kwargs, saved) -> list:
        """The devices that time configs: this one, or with TILEWORKBENCH_AUTOTUNE_GPUS every GPU
        asked for, each with its own copy of the arguments."""

        def bench_here(item):
            config, built, phase = item
            if isinstance(built.error, TileworkbenchError):
                raise built.error
            try:
                return self._bench_timed(args, named_args, config, grid, kwargs, phase)
            finally:
                self._restore_values(named_args, saved)

        lanes = [parallel_compile.Lane(_device_name(), bench_here)]
        for device in _other_gpus():
            lanes.append(self._gpu_lane(device, args, kwargs, grid))
        return lanes

    def _gpu_lane(self, device: int, args: tuple, kwargs, grid):
        """A lane on GPU `device`: the arguments copied there, each config timed in its context."""
        copied = tuple(_to_device(value, device) for value in args)
        copied_kwargs = {name: _to_device(value, device) for name, value in kwargs.items()}
        named = dict(zip(self.arg_names, copied))
        named.update({k: v for k, v in copied_kwargs.items() if k in self.arg_names})
        saved = self._save_values(named)

        def bench_there(item):
            config, built, phase = item
            if isinstance(built.error, TileworkbenchError):
                raise built.error
            with _device_context(device):
                try:
                    return self._bench_timed(copied, named, config, grid, copied_kwargs, phase)
                finally:
                    self._restore_values(named, saved)

        return parallel_compile.Lane(_device_name(device), bench_there)

    def _bench_timed(
        self, args: tuple, named_args, config: Config, grid, kwargs, phase: str = "full"
    ):
        """(ms, compiled, seconds to compile or load it here, seconds to time it); `phase`:
        "screen" (a short timing), "full" or "final" (do_bench's settings)."""
        begin = time.perf_counter()
        options = {**kwargs, **config.all_kwargs()}
        if not (set(kwargs) & set(config.kwargs)):  # _bench explains a conflict
            if config.pre_hook is not None:  # the specialization may depend on what it sets
                config.pre_hook({**named_args, **options})
            self.fn.run(*args, grid=grid, warmup=True, **options)
        compiled_at = time.perf_counter()
        ms, compiled = self._bench(args, named_args, config, grid, kwargs, phase == "screen")
        return ms, compiled, compiled_at - begin, time.perf_counter() - compiled_at

    def _tuning_summary(self, named_args: dict[str, Any], best: Config) -> str:
        """What TILEWORKBENCH_PRINT_AUTOTUNING=1 prints: the choice (in Triton's words) and the table."""
        lines = [
            f"tileworkbench autotuning for function {_name(self.fn)}, with key as "
            f"{self._key(named_args)}, finished after {self.bench_time_s:.2f}s; "
            f"best config selected: {best};"
        ]
        for config, result in self.last_results.items():
            if "ms" not in result and "screen_ms" in result:
                lines.append(
                    f"  {config}: screen {result['screen_ms']:.4g} ms (not a finalist)"
                    f"{_cost(result)}"
                )
            elif "ms" in result:
                used = ", ".join(
                    f"{name} {result[name]}"
                    for name in ("regs", "spills", "shared")
                    if result.get(name) is not None
                )
                lines.append(
                    f"  {config}: {result['ms']:.4g} ms{'; ' + used if used else ''}{_cost(result)}"
                )
            else:
                lines.append(
                    f"  {config}: {result.get('pruned') or result.get('error')}{_cost(result)}"
                )
        return "\n".join(lines)

    def _all_failed_message(self) -> str:
        lines = [f"every config of {_name(self.fn)} failed or was pruned:"]
        lines += [f"  {config}: {result}" for config, result in self.last_results.items()]
        return "\n".join(lines)

    # -- launching -----------------------------------------------------------------------------

    def run(self, *args, grid, warmup: bool = False, **kwargs):
        """Launch with the best config for these arguments, tuning first on a new key."""
        named_args = dict(zip(self.arg_names, args))
        named_args.update({k: v for k, v in kwargs.items() if k in self.arg_names})
        if warmup:
            return self._warmup(args, named_args, grid, kwargs)
        if len(self.configs) > 1:
            key = self._key(named_args)
            if key not in self.cache:
                self.cache[key] = self._tune(args, named_args, grid, kwargs)
                self.results[key] = self.last_results
                self.timings[key] = self.configs_timings
            config = self.cache[key]
            # what the workbench shows: the tuning behind this launch's key
            self.last_results = self.results.get(key, {})
            self.configs_timings = self.timings.get(key, {})
        else:
            config = self.configs[0]
        self.best_config = config
        options = {**kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook({**named_args, **options})
        return self.fn.run(*args, grid=grid, warmup=warmup, **options)

    def _warmup(self, args: tuple, named_args: dict[str, Any], grid, kwargs) -> list:
        """Compile every config that survives pruning, launching nothing (Triton's warmup)."""
        return [
            self.fn.run(*args, grid=grid, warmup=True, **{**kwargs, **config.all_kwargs()})
            for config in self.prune_configs(named_args, kwargs)
        ]


class Heuristics(KernelInterface):
    """Computes meta-parameters from the arguments before each launch. See `heuristics`."""

    def __init__(self, fn, arg_names: list[str], values: dict[str, Callable[[dict], Any]]):
        self.fn = fn
        self.base_fn = _base_function(fn)
        self.arg_names = list(arg_names)
        self.values = dict(values)

    def run(self, *args, grid, warmup: bool = False, **kwargs):
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        for name, rule in self.values.items():
            kwargs[name] = rule(named)
            named[name] = kwargs[name]  # a later rule may use an earlier one's value
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)


def autotune(
    configs: Sequence[Config],
    key: Sequence[str],
    prune_configs_by: dict[str, Any] | None = None,
    reset_to_zero: Sequence[str] | None = None,
    restore_value: Sequence[str] | None = None,
    warmup: float | None = None,
    rep: float | None = None,
    do_bench: Callable[..., Any] | None = None,
    executor: Any = None,
) -> Callable[[Any], Autotuner]:
    """Decorator: time `configs` whenever the values of the `key` arguments change, and launch with
    the fastest.

    Args:
        configs: the `Config`s to try.
        key: argument names whose values (with the array arguments' dtypes) select a tuning.
        prune_configs_by: {"early_config_prune": fn(configs, named_args, **kwargs) -> configs,
            "perf_model": fn(**args, **config) -> estimate, "top_k": int or fraction}.
        reset_to_zero: arguments zeroed before each timed run (kernels that accumulate).
        restore_value: arguments copied before tuning and restored after each config.
        warmup: warm-up budget per config, ms (default 25).
        rep: measurement budget per config, ms (default 100).
        do_bench: a replacement for `do_bench`, called as do_bench(fn, quantiles=(0.5, 0.2, 0.8)).
        executor: where configs compile: None, local worker processes
            (TILEWORKBENCH_COMPILE_WORKERS); or a `concurrent.futures.Executor` or a Dask
            `distributed.Client` (e.g. on dask-cuda's `LocalCUDACluster`) whose workers compile
            them, over machines (tileworkbench's extension).
            Configs are timed on this host's GPU(s) as soon as each is built.
    """

    def decorator(fn) -> Autotuner:
        tuner = Autotuner(
            fn,
            _arg_names(fn),
            configs,
            key,
            reset_to_zero,
            restore_value,
            prune_configs_by,
            warmup,
            rep,
            do_bench,
            executor,
        )
        if executor is None and _prestarts(fn, len(configs)):
            compile_pool.prestart_server(target=_default_target)
        return tuner

    return decorator


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Decorator: before each launch set each meta-parameter in `values` to rule(named_args)."""

    def decorator(fn) -> Heuristics:
        return Heuristics(fn, _arg_names(fn), values)

    return decorator


def _prestarts(fn, n_configs: int) -> bool:
    """Whether decorating `fn` starts the compile workers' forkserver, or where workers are forks
    of this process imports the compiler for them (config.compile_prestart: unset, on hosts of 8
    cores or more): never in a compile worker or another engine's worker process, nor where
    workers would not be used (one config or worker, a kernel they cannot import or be handed)."""
    import multiprocessing

    wanted = settings.compile_prestart
    if wanted is None:
        wanted = (os.cpu_count() or 1) >= _PRESTART_CORES
    return (
        wanted
        and multiprocessing.current_process().name == "MainProcess"
        and parallel_compile.worker_count(n_configs) > 1
        and (compile_pool.forks_here() or parallel_compile.may_ship(fn))
    )


_PRESTART_CORES = 8


def _default_target() -> str | None:
    """The target a launch with no options compiles for (what prestarted workers warm up for)."""
    try:
        return parallel_compile.launch_target({})
    except Exception:  # no target resolves yet: the workers warm up nothing
        return None


def _arg_names(fn) -> list[str]:
    names = getattr(fn, "arg_names", None)
    if names is None:
        raise TypeError(f"autotune/heuristics wrap a @jit function; got {fn!r}")
    return list(names)


def _check_names(names: list[str], arg_names: list[str], what: str, fn) -> None:
    unknown = [name for name in names if name not in arg_names]
    if unknown:
        raise ValueError(
            f"{what} of {_name(fn)} names {unknown}, which are not its arguments {arg_names}"
        )


def _name(fn) -> str:
    return getattr(_base_function(fn), "__name__", repr(fn))


def resources(compiled: Any) -> dict[str, Any]:
    """Registers, spills and shared memory (bytes) of a compiled GPU kernel (n_regs waits for ptxas;
    None without it); nothing for the interpreter's and the cpu target's kernels."""
    from tileworkbench.backends import is_gpu

    metadata = getattr(compiled, "metadata", None)
    if metadata is None or not is_gpu(getattr(metadata, "target", None) or None):
        return {}
    return {
        "regs": getattr(metadata, "n_regs", None),
        "spills": getattr(metadata, "n_spills", None),
        "shared": getattr(metadata, "shared", None),
    }


def _cost(result: dict[str, Any]) -> str:
    """ "; compile 1.2 s (pid 4711), screen 0.03 s, bench 0.3 s (GPU 0)": what a config cost and
    where it ran (screening.BuildStats)."""
    parts = screening.BuildStats.from_result(result).parts()
    return "; " + ", ".join(parts) if parts else ""


def _handed_back(item, error: BaseException):
    """A lane's error, handed back to the tune (raised there, or reported for its config)."""
    return error


class _WorkerError(TileworkbenchError):
    """A config's compile error or out-of-resources error as a compile worker reported it."""

    def __init__(self, text: str):
        kind, _, message = text.partition(": ")
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return super().__str__()


def _device_name(device: int | None = None) -> str:
    """Where a config is timed: "GPU 0", or the CPU target's or the interpreter's name."""
    from tileworkbench.backends import default_target, is_gpu

    try:
        target = default_target()
    except Exception:
        return "here"
    if not is_gpu(target):
        return f"{target} (CPU)"
    if device is None:
        try:
            import cupy

            device = cupy.cuda.Device().id
        except Exception:
            device = 0
    return f"GPU {device}"


def _other_gpus() -> list[int]:
    """The GPUs besides the current one that time configs too (TILEWORKBENCH_AUTOTUNE_GPUS)."""
    wanted = settings.autotune_gpus
    if wanted == 1:
        return []
    from tileworkbench.backends import default_target, is_gpu

    if not is_gpu(default_target()):
        return []
    from tileworkbench.cuda.device import device_count

    import cupy

    current = cupy.cuda.Device().id
    count = device_count()
    chosen = [d for d in range(count) if d != current]
    return chosen if wanted == 0 else chosen[: max(0, wanted - 1)]


def _to_device(value, device: int):
    """`value` with its arrays copied to GPU `device` (a host descriptor: a copy over the copied
    base)."""
    import copy

    from tileworkbench.frontend.descriptor_args import is_host_descriptor

    if is_host_descriptor(value):
        moved = copy.copy(value)
        moved.base = _to_device(value.base, device)
        return moved
    module = type(value).__module__.split(".")[0]
    if module == "torch" and hasattr(value, "to"):
        return value.to(f"cuda:{device}")
    if module == "cupy":
        import cupy

        with cupy.cuda.Device(device):
            return cupy.array(value)
    return value


def _device_context(device: int):
    """CuPy's (and torch's, where loaded) current device set to `device`."""
    import contextlib
    import sys

    import cupy

    stack = contextlib.ExitStack()
    stack.enter_context(cupy.cuda.Device(device))
    torch = sys.modules.get("torch")
    if torch is not None:
        stack.enter_context(torch.cuda.device(device))
    return stack


def _first(result) -> float:
    if isinstance(result, (list, tuple)):
        return float(result[0])
    return float(result)


def _zero(array) -> None:
    if hasattr(array, "zero_"):
        array.zero_()  # torch
    else:
        array[...] = 0  # NumPy, CuPy


def _copy(array):
    return array.clone() if hasattr(array, "clone") else array.copy()


def _assign(array, value) -> None:
    if hasattr(array, "copy_"):
        array.copy_(value)  # torch
    else:
        array[...] = value
