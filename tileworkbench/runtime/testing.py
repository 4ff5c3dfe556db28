"""Benchmarking and checking helpers with Triton's names: `do_bench`, `assert_close`, `Benchmark`,
`perf_report`. They accept NumPy, CuPy and PyTorch arrays and need neither pandas nor a GPU.

`do_bench` times with CUDA events (through CuPy) when a GPU is usable; on a machine without one (or
with TILEWORKBENCH_INTERPRET=1) it times `fn` on the host with `time.perf_counter`, which is what
the interpreter's kernels cost there.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Triton's L2 flush: a buffer larger than any L2 (H200: 60 MB), written before every repetition
FLUSH_BYTES = 256 * 1024 * 1024
_RETURN_MODES = ("min", "max", "mean", "median", "all")
_ESTIMATE_RUNS = 5


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
    *,
    timer: str = "auto",
) -> float | list[float]:
    """Time `fn()` in milliseconds, as Triton's `do_bench` does.

    `fn` runs once, then a few times to estimate its cost (L2 flush included); from that estimate
    it runs about `warmup` ms unmeasured and about `rep` ms measured, one timing per run, with the
    L2 cache flushed (a 256 MB buffer written) before each measured run.

    Args:
        fn: what to time; it launches GPU work (or, in host mode, does the work).
        warmup: warm-up budget in ms.
        rep: measurement budget in ms.
        grad_to_none: tensors whose `.grad` is reset to None before each run (PyTorch).
        quantiles: when given, return these quantiles (one float if only one).
        return_mode: "mean" (default, as Triton), "median", "min", "max" or "all" (the list).
        timer: "auto" (CUDA events when a GPU is usable, else host), "cuda" or "host".

    Returns:
        The statistic asked for, in ms.
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {_RETURN_MODES}; got {return_mode!r}")
    if timer not in _TIMERS:
        raise ValueError(f"timer must be 'auto', 'cuda' or 'host'; got {timer!r}")
    events = _TIMERS[timer]
    if events or (events is None and _gpu_timing()):
        times = _bench_cuda(fn, warmup, rep, grad_to_none)
    else:
        times = _bench_host(fn, warmup, rep, grad_to_none)
    return _summarize(times, quantiles, return_mode)


_TIMERS = {
    "auto": None,
    "cuda": True,
    "host": False,
}  # timer -> CUDA events (None: where launches go)


def _gpu_timing() -> bool:
    """Whether launches now go to a GPU (the default target's backend says), so CUDA events time them."""
    from tileworkbench.backends import is_gpu

    return is_gpu(None)


def _run_counts(estimate_ms: float, warmup: float, rep: float) -> tuple[int, int]:
    estimate_ms = max(estimate_ms, 1e-4)  # a no-op fn must not divide by zero
    return max(1, int(warmup / estimate_ms)), max(1, int(rep / estimate_ms))


def _clear_grads(grad_to_none: Sequence[Any] | None) -> None:
    for tensor in grad_to_none or ():
        tensor.grad = None


def _bench_cuda(fn, warmup: float, rep: float, grad_to_none) -> list[float]:
    import cupy

    device = cupy.cuda.Device()
    fn()
    device.synchronize()
    flush = cupy.empty(FLUSH_BYTES // 4, dtype=cupy.int32)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(_ESTIMATE_RUNS):
        flush.fill(0)
        fn()
    end.record()
    end.synchronize()
    estimate = cupy.cuda.get_elapsed_time(start, end) / _ESTIMATE_RUNS
    n_warmup, n_repeat = _run_counts(estimate, warmup, rep)
    starts = [cupy.cuda.Event() for _ in range(n_repeat)]
    ends = [cupy.cuda.Event() for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for start_event, end_event in zip(starts, ends):
        _clear_grads(grad_to_none)
        flush.fill(0)
        start_event.record()
        fn()
        end_event.record()
    device.synchronize()
    return [cupy.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends)]


def _bench_host(fn, warmup: float, rep: float, grad_to_none) -> list[float]:
    clock = time.perf_counter
    fn()
    begin = clock()
    for _ in range(_ESTIMATE_RUNS):
        fn()
    estimate = (clock() - begin) * 1e3 / _ESTIMATE_RUNS
    n_warmup, n_repeat = _run_counts(estimate, warmup, rep)
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        _clear_grads(grad_to_none)
        begin = clock()
        fn()
        times.append((clock() - begin) * 1e3)
    return times


def _summarize(times: list[float], quantiles, return_mode: str):
    if quantiles is not None:
        values = [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    summary = {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}
    return float(summary[return_mode](times))


def _to_numpy(value: Any) -> np.ndarray:
    """A host NumPy array from NumPy, CuPy, PyTorch (any device) or a Python scalar/list."""
    if isinstance(value, np.ndarray):
        return value
    module = type(value).__module__
    if module.startswith("torch"):
        value = value.detach().cpu()
        if str(value.dtype) in ("torch.bfloat16",) or "float8" in str(value.dtype):
            value = value.float()  # NumPy has no bf16/fp8; float32 holds them exactly
        return value.numpy()
    if module.startswith("cupy"):
        return value.get()
    return np.asarray(value)


def _comparable(array: np.ndarray) -> np.ndarray:
    """ml_dtypes arrays (bf16, fp8) do not work with every NumPy test; widen them to float64."""
    if array.dtype.kind not in "biufc":
        return array.astype(np.float64)
    return array


def assert_close(x: Any, y: Any, atol=None, rtol=None, err_msg: str = "") -> None:
    """Raise AssertionError unless x and y are elementwise close: |x - y| <= atol + rtol * |y|.

    As Triton's: `atol` defaults to 1e-2 and `rtol` to 0, either may be a function of x's dtype,
    NaNs in the same places compare equal, and arrays may be NumPy, CuPy or PyTorch.
    """
    x_host = _comparable(_to_numpy(x))
    y_host = _comparable(_to_numpy(y))
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(x_host.dtype) if callable(atol) else atol
    rtol = rtol(x_host.dtype) if callable(rtol) else rtol
    if x_host.size > 1 or y_host.size > 1:
        np.testing.assert_allclose(
            x_host, y_host, rtol=rtol, atol=atol, equal_nan=True, err_msg=err_msg
        )
        return
    if not np.allclose(x_host, y_host, rtol=rtol, atol=atol, equal_nan=True):
        raise AssertionError(
            f"{err_msg} {x_host} is not close to {y_host} (atol={atol}, rtol={rtol})".strip()
        )


@dataclass
class Benchmark:
    """One line plot for `perf_report`: for each value of x (`x_vals`, given to every name in
    `x_names`) and each line (`line_vals` of argument `line_arg`), the benchmark function is
    called and returns a number or (value, min, max). Argument names are Triton's."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list[tuple[str, str]] | None = None
    color: Any = None  # accepted as older Triton did; unused (styles set the colors)


class ResultTable:
    """A small column table (what `Mark.run(return_df=True)` returns when pandas is missing)."""

    def __init__(self, columns: list[str]):
        self.columns = list(columns)
        self.rows: list[list[Any]] = []

    def append(self, row: list[Any]) -> None:
        self.rows.append(list(row))

    def __getitem__(self, column: str) -> list[Any]:
        index = self.columns.index(column)
        return [row[index] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def select(self, columns: list[str]) -> ResultTable:
        table = ResultTable(columns)
        for row in self.rows:
            table.append([row[self.columns.index(name)] for name in columns])
        return table

    def to_pandas(self):
        import pandas

        return pandas.DataFrame(self.rows, columns=self.columns)

    def to_csv(self, path: str) -> None:
        with open(path, "w") as out:
            out.write(",".join(self.columns) + "\n")
            for row in self.rows:
                out.write(",".join(_cell(value, csv=True) for value in row) + "\n")

    def __str__(self) -> str:
        cells = [self.columns] + [[_cell(value) for value in row] for row in self.rows]
        widths = [max(len(str(line[i])) for line in cells) for i in range(len(self.columns))]
        lines = [
            "  ".join(str(text).rjust(width) for text, width in zip(line, widths)) for line in cells
        ]
        return "\n".join(lines)

    __repr__ = __str__


def _cell(value: Any, csv: bool = False) -> str:
    if value is None:
        return "" if csv else "-"
    if isinstance(value, float):
        return f"{value:.1f}" if csv else f"{value:.6g}"
    return str(value)


class Mark:
    """A benchmark function with its `Benchmark`s; `run` measures, prints, plots and saves."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]):
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench: Benchmark, **kwargs) -> ResultTable:
        extremes = [f"{name}-min" for name in bench.line_names]
        extremes += [f"{name}-max" for name in bench.line_names]
        table = ResultTable(list(bench.x_names) + list(bench.line_names) + extremes)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) and len(x) == len(bench.x_names) else None
            x_args = dict(zip(bench.x_names, xs)) if xs else {n: x for n in bench.x_names}
            means, lows, highs = [], [], []
            for line in bench.line_vals:
                result = self.fn(**x_args, **{bench.line_arg: line}, **bench.args, **kwargs)
                mean, low, high = _split_result(result)
                means.append(mean)
                lows.append(low)
                highs.append(high)
            table.append(list(x_args.values()) + means + lows + highs)
        return table

    def _plot(self, bench: Benchmark, table: ResultTable, show_plots: bool, save_path) -> None:
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots()
        xs = table[bench.x_names[0]]
        for i, name in enumerate(bench.line_names):
            color, style = bench.styles[i] if bench.styles else (None, None)
            axes.plot(xs, table[name], label=name, color=color, ls=style)
            low, high = table[f"{name}-min"], table[f"{name}-max"]
            if all(v is not None for v in low + high):
                axes.fill_between(xs, low, high, alpha=0.15, color=color)
        axes.legend()
        axes.set_xlabel(bench.xlabel or " = ".join(bench.x_names))
        axes.set_ylabel(bench.ylabel)
        axes.set_xscale("log" if bench.x_log else "linear")
        axes.set_yscale("log" if bench.y_log else "linear")
        if save_path:
            figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show_plots:
            plt.show()
        plt.close(figure)

    def _run(self, bench, show_plots, print_data, save_path, **kwargs):
        table = self._measure(bench, **kwargs)
        if bench.plot_name and (show_plots or save_path):
            self._plot(bench, table, show_plots, save_path)
        table = table.select(list(bench.x_names) + list(bench.line_names))
        if print_data:
            print(f"{bench.plot_name}:")
            print(table)
        if save_path:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"))
        return table

    def run(
        self,
        show_plots: bool = False,
        print_data: bool = True,
        save_path: str | None = None,
        return_df: bool = False,
        **kwargs,
    ):
        """Run every benchmark: print each table, plot it (matplotlib) when `show_plots` or
        `save_path`, and save PNG/CSV plus results.html under `save_path`.

        Returns:
            With `return_df`, the table (a pandas DataFrame if pandas is installed, else a
            ResultTable), or a list of them for several benchmarks; otherwise None.
        """
        benchmarks = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        tables = [
            self._run(bench, show_plots, print_data, save_path, **kwargs) for bench in benchmarks
        ]
        if save_path:
            _write_html(save_path, benchmarks)
        if not return_df:
            return None
        frames = [_as_frame(table) for table in tables]
        return frames[0] if len(frames) == 1 else frames


def _split_result(result: Any) -> tuple[Any, Any, Any]:
    if isinstance(result, (tuple, list)) and len(result) == 3:
        return result[0], result[1], result[2]
    return result, None, None


def _as_frame(table: ResultTable):
    try:
        return table.to_pandas()
    except ImportError:
        return table


def _write_html(save_path: str, benchmarks: list[Benchmark]) -> None:
    with open(os.path.join(save_path, "results.html"), "w") as html:
        html.write("<html><body>\n")
        for bench in benchmarks:
            html.write(f'<image src="{bench.plot_name}.png"/>\n')
        html.write("</body></html>\n")


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorate a benchmark function; call `.run(...)` on the result to measure and report it."""

    def decorator(fn: Callable[..., Any]) -> Mark:
        return Mark(fn, benchmarks)

    return decorator


from .device_limits import (  # noqa: E402,F401  (Triton's triton.testing names that need the GPU)
    get_dram_gbps,
    get_max_simd_tflops,
    get_max_tensorcore_tflops,
)


def do_bench_cudagraph(
    fn: Callable[[], Any],
    rep: float = 20,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
):
    """Time `fn()` in ms as Triton's `do_bench_cudagraph` does: its launches are captured into a CUDA
    graph (on a CuPy stream, which tileworkbench kernels launch on) and the graph is replayed, so launch
    overhead is not counted. Without a GPU it times on the host, as `do_bench` does there.

    Raises:
        LaunchError: `fn` launched work that a CUDA graph cannot capture (e.g. on torch's stream).
    """
    if not _gpu_timing():
        return do_bench(
            fn,
            rep=rep,
            grad_to_none=grad_to_none,
            quantiles=quantiles,
            return_mode=return_mode,
            timer="host",
        )
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fn()  # compile and warm up outside the capture
        stream.synchronize()
        estimate = _graph_time(stream, fn, 5) / 5
        repeats = max(1, int(rep / max(estimate, 1e-3)))
        graph_ms = [_graph_time(stream, fn, repeats) / repeats for _ in range(10)]
    return _summarize(graph_ms, quantiles, return_mode)


def _graph_time(stream, fn: Callable[[], Any], repeats: int) -> float:
    """ms for one replay of a graph holding `repeats` calls of `fn`."""
    import cupy

    from ..errors import LaunchError

    stream.begin_capture()
    try:
        for _ in range(repeats):
            fn()
    finally:
        graph = stream.end_capture()
    if graph is None:
        raise LaunchError("do_bench_cudagraph captured nothing: launch on CuPy's current stream")
    graph.upload(stream)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    graph.launch(stream)
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end)
