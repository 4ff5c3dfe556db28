"""`%%tilekernel --sweep "BLOCK=256,512,1024 num_warps=4,8"`: run the cell once per config and compare.

Each config re-runs the cell with its constexprs and launch options imposed on the launches
(`runtime.record.launch_overrides`), builds that launch's report (time, check) and adds the registers,
spills, shared memory and occupancy of the same specialization compiled for the GPU (where the launch ran
in the interpreter, from compiling it for the interpreter's model GPU). The table, a plot, and each config's
own report (all its stages) form one `SweepSection` of the first report.

Once the first config has run, the launch it recorded says which kernel and arguments the others
need: on a target with the on-disk cache, the other configs compile in worker processes
(runtime/parallel_compile.py) and each runs as soon as it is built, its run then a cache hit.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
from dataclasses import dataclass
from typing import Any

from ..errors import TileworkbenchError
from .resources import resources_of

LAUNCH_OPTIONS = ("num_warps", "num_stages")


class SweepSyntaxError(TileworkbenchError):
    """A malformed --sweep value; the message says which part and what was expected."""


def parse_sweep(text: str) -> list[dict[str, Any]]:
    """`"BLOCK=256,512 num_warps=4,8"` -> every combination, in order, as {name: value} dicts."""
    import ast

    axes: list[tuple[str, list[Any]]] = []
    for part in text.split():
        name, sep, values = part.partition("=")
        if not sep or not name.isidentifier() or not values:
            raise SweepSyntaxError(
                f'--sweep: {part!r} is not NAME=V1,V2,... (e.g. "BLOCK=256,512 num_warps=4,8")'
            )
        parsed = []
        for value in values.split(","):
            try:
                parsed.append(ast.literal_eval(value))
            except (ValueError, SyntaxError):
                parsed.append(value)
        axes.append((name, parsed))
    if not axes:
        raise SweepSyntaxError("--sweep needs at least one NAME=V1,V2,... axis")
    names = [name for name, _ in axes]
    return [dict(zip(names, combo)) for combo in itertools.product(*(v for _, v in axes))]


def config_label(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


@dataclass
class SweepRow:
    """One config: its report (None when it failed before launching) and why it failed, if it did."""

    config: dict[str, Any]
    report: Any = None
    failure: str | None = None
    gpu: Any = None  # Resources of the GPU compile of this specialization
    compile_s: float | None = None  # a compile worker's seconds (None: compiled by the cell's run)
    where: str = "this process"  # the compile worker (pid, host) that built it

    @property
    def label(self) -> str:
        return config_label(self.config)

    @property
    def ms(self) -> float | None:
        timing = getattr(self.report, "timing", None)
        return timing.median_ms if timing else None

    def throughput(self) -> str:
        """Bytes per second for memory-bound work, FLOP/s where FLOPs dominate (intensity above 10)."""
        counts = getattr(self.report, "counts", None)
        if counts is None or self.ms is None:
            return "-"
        from .text_view import _size

        seconds = self.ms * 1e-3
        if counts.flops and counts.bytes and counts.flops / counts.bytes > 10:
            return _size(counts.flops / seconds, "FLOP/s")
        return _size(counts.bytes / seconds, "B/s") if counts.bytes else "-"

    def status(self) -> str:
        if self.failure:
            return "failed: " + self.failure
        check = getattr(self.report, "check", None)
        if check is not None and not check.passed:
            return "check failed: " + check.summary()
        return "ok"


def gpu_resources(compiled: Any):
    """Registers, spills and shared memory of the GPU build of `compiled`: itself for a GPU kernel, the
    interpreter's model-GPU compile otherwise (the one place the sweep tells the two apart)."""
    model = getattr(compiled, "_gpu_model", None)
    gpu = model() if callable(model) else compiled
    from .report import metadata_of

    meta = metadata_of(gpu)
    return resources_of(meta, str(meta.get("target") or ""))


class SweepSection:
    """The sweep's table, plot and per-config reports; shown in every view of the report."""

    title = "sweep"

    def __init__(self, rows: list[SweepRow], time_source: str):
        self.rows = rows
        self.time_source = time_source  # e.g. "interpreter (CPU) time" or "GPU time"

    def table(self) -> list[tuple[str, ...]]:
        """(config, time, throughput, registers, spills, shared, occupancy, status, compile s,
        compiled in) per row."""
        out = []
        for row in self.rows:
            res = row.gpu
            occ = getattr(res, "occupancy", None)
            out.append(
                (
                    row.label,
                    "-" if row.ms is None else f"{row.ms:.4g}",
                    row.throughput(),
                    _num(getattr(res, "n_regs", None)),
                    _num(getattr(res, "n_spills", None)),
                    _num(getattr(res, "shared", None)),
                    "-" if occ is None else f"{100 * occ:.0f}%",
                    row.status(),
                    "-" if row.compile_s is None else f"{row.compile_s:.2f}",
                    row.where,
                )
            )
        return out

    def headers(self) -> tuple[str, ...]:
        return (
            "config",
            f"ms ({self.time_source})",
            "throughput",
            "registers",
            "spills",
            "shared B",
            "occupancy",
            "status",
            "compile s",
            "compiled in",
        )

    def best(self) -> SweepRow | None:
        timed = [r for r in self.rows if r.ms is not None and r.status() == "ok"]
        return min(timed, key=lambda r: r.ms) if timed else None

    def text(self) -> list[str]:
        lines = [" | ".join(self.headers())]
        lines += [" | ".join(row) for row in self.table()]
        best = self.best()
        if best is not None:
            lines.append(f"fastest: {best.label}")
        return lines

    def plot_png(self) -> str | None:
        """A bar chart of time per config (failed configs marked), as base64 PNG."""
        if not any(r.ms is not None for r in self.rows):
            return None
        from matplotlib.figure import Figure

        fig = Figure(figsize=(max(4.0, 0.9 * len(self.rows) + 2), 2.8))
        ax = fig.subplots()
        labels = [r.label.replace(" ", "\n") for r in self.rows]
        times = [r.ms or 0.0 for r in self.rows]
        colors = ["#4a90d9" if r.status() == "ok" else "#d9534f" for r in self.rows]
        ax.bar(range(len(self.rows)), times, color=colors)
        ax.set_xticks(range(len(self.rows)), labels, fontsize=8)
        ax.set_ylabel(f"ms ({self.time_source})", fontsize=9)
        ax.set_title("sweep: time per config (red: failed)", fontsize=10)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
        return base64.b64encode(buffer.getvalue()).decode()

    def roofline_png(self) -> str | None:
        """The GPU-timed configs together on one roofline (interpreter times are not placed)."""
        from dataclasses import replace

        from .roofline import Roofline

        points, peaks = [], None
        for row in self.rows:
            point = getattr(row.report, "point", None)
            if point is not None and point.seconds and row.status() == "ok":
                points.append(replace(point, label=row.label))
                peaks = row.report.peaks
        if not points:
            return None
        return base64.b64encode(Roofline(points, peaks).to_bytes("png")).decode()

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers())
        best = self.best()
        body = []
        for row, cells in zip(self.rows, self.table()):
            style = ' style="font-weight:600"' if row is best else ""
            body.append(
                f"<tr{style}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            )
        parts = [f'<table class="twtable twsweep"><tr>{head}</tr>{"".join(body)}</table>']
        if not hasattr(self, "_png"):
            self._png = self.plot_png()  # drawn once: every view of the report shows it
            self._roofline = self.roofline_png()
        for alt, png in (("sweep plot", self._png), ("sweep roofline", self._roofline)):
            if png:
                parts.append(f'<img alt="{alt}" src="data:image/png;base64,{png}">')
        for row in self.rows:  # every config's own stages, folded, compact (plain text, passes
            if row.report is not None:  # as diffs): coloured, 8 configs took 12 s on 2 cores
                parts.append(
                    f"<details><summary>open {html.escape(row.label)}</summary>"
                    f"{row.report.html(compact=True)}</details>"
                )
        return "".join(parts)

    def widget(self, widgets, uid: str):
        """The table and plot, and a picker that opens any config's report below them."""
        table = widgets.HTML(f'<div class="twr {uid}">' + self._table_and_plot() + "</div>")
        options = [("(pick a config to open its stages)", None)] + [
            (row.label, i) for i, row in enumerate(self.rows) if row.report is not None
        ]
        picker = widgets.Dropdown(options=options, value=None, description="open config")
        shown = widgets.VBox([])

        def open_config(change):
            index = change["new"]
            shown.children = [] if index is None else [self.rows[index].report.widget()]

        picker.observe(open_config, names="value")
        box = widgets.VBox([widgets.HTML("<b>sweep</b>"), table, picker, shown])
        box.sweep_picker = picker  # reachable from tests
        return box

    def _table_and_plot(self) -> str:
        return self.html().split("<details>")[0]


def _num(value) -> str:
    return "-" if value is None else str(value)


def run_sweep(
    shell, cell: str, sweep: str, recorder, build_report, run_inner, executor: Any = None
) -> SweepSection:
    """Run `cell` once per config of `sweep` and collect a row for each.

    Args:
        build_report: (record) -> KernelReport for one launch (time, check as the cell's options say).
        run_inner: (shell, cell) -> IPython's ExecutionResult, running the cell without history.
        executor: where the configs after the first compile: None, local worker processes; or
            a `concurrent.futures.Executor` or Dask `distributed.Client`
            (runtime/parallel_compile.py).
    """
    configs = parse_sweep(sweep)
    rows = [SweepRow(config) for config in configs]
    launch = _run_config(shell, cell, rows[0], recorder, build_report, run_inner)
    jobs = _compile_jobs(launch, configs[1:], executor) if launch is not None else None
    if jobs is None:
        for row in rows[1:]:
            _run_config(shell, cell, row, recorder, build_report, run_inner)
    else:
        from ..runtime.parallel_compile import build, runs_on_host

        builds = build(jobs, executor)  # each config runs as soon as it is built,
        if runs_on_host(launch.target):  # or, where it runs on the cores the workers compile
            builds = list(builds)  # on, once all are (runtime/parallel_compile.py)
        for built in builds:
            row = rows[int(built.label)]
            if built.fallback is None:
                row.compile_s, row.where = built.seconds, built.where
            _run_config(shell, cell, row, recorder, build_report, run_inner)
    methods = {r.report.timing.method for r in rows if r.report is not None and r.report.timing}
    return SweepSection(rows, _time_source(methods))


def _run_config(shell, cell: str, row: SweepRow, recorder, build_report, run_inner):
    """Run the cell under `row`'s config and fill the row in; the launch it recorded, or None."""
    from ..runtime.record import launch_overrides

    try:
        with launch_overrides(row.config), recorder() as launches:
            result = run_inner(shell, cell)
        error = result.error_in_exec or result.error_before_exec
        if error is not None:
            row.failure = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        elif not launches:
            row.failure = "the cell launched no kernel"
        else:
            row.report = build_report(launches[-1])
            row.gpu = gpu_resources(launches[-1].compiled)
            return launches[-1]
    except TileworkbenchError as exc:
        row.failure = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return None


def _compile_jobs(launch, configs: list[dict[str, Any]], executor: Any = None):
    """Label ("1", "2", ...: the row) -> CompileJob for each config after the first, made from the
    first config's recorded launch; None where workers would not help (one worker, the interpreter,
    a kernel defined in the notebook where no local worker is a fork of this process, as another
    engine's workers are not). A job that turns out wrong (a config naming no parameter) only costs
    its worker's time: the cell's own run reports it."""
    from ..runtime import compile_pool
    from ..runtime import parallel_compile as pc
    from ..runtime.record import LAUNCH_OPTIONS as RUN_OPTIONS

    if not configs or pc.worker_count(len(configs)) <= 1:
        return None
    try:
        target = pc.launch_target({})
        if target != launch.target or not pc.cacheable_target(target):
            return None
        place = pc.locate(launch.kernel, forked=executor is None and compile_pool.forks_here())
        meta = launch.compiled.metadata
        base = {name: pc.encode_value(value) for name, value in launch.args.items()}
        for name in (
            "num_warps",
            "num_stages",
            "enable_fp_fusion",
            "maxnreg",
            "enable_reflect_ftz",
            "debug",
        ):  # as the first config compiled, unless a config sets them
            base[name] = {"plain": getattr(meta, name)}
    except Exception:  # NotShippable, an argument with no stand-in, ...
        return None
    jobs = {}
    for index, config in enumerate(configs, start=1):
        kwargs = dict(base)
        try:
            for name, value in config.items():
                if name in RUN_OPTIONS or name in launch.args:
                    kwargs[name] = pc.encode_value(value)
        except pc.NotShippable:
            return None
        jobs[str(index)] = pc.CompileJob(
            str(index), *place, args=[], kwargs=kwargs, settings=pc.worker_settings(target)
        )
    return jobs


def _time_source(methods: set[str]) -> str:
    """How the times were measured, said plainly: a host-clock time of the interpreter is no GPU time."""
    if methods and all("CUDA" in m for m in methods):
        return "GPU time"
    return "interpreter, CPU time" if methods else "not timed"
