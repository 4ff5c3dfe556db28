"""What `%%tilekernel` does, without IPython's magic machinery: run the cell recording launches, then
build one report per kernel (or compile one kernel, compile-only), and collect the options' values.

`run_tilekernel(shell, options, cell, recorder)` is tested with IPython's InteractiveShell.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backends import is_gpu
from ..errors import TileworkbenchError
from .build import ReportOptions, report_for_compiled, report_for_launch
from .capture import capture_c_stdout
from .gpu_stages import add_gpu_stages, note_compiler_choices, note_missing_sass


@dataclass
class MagicOptions:
    """The parsed options of one `%%tilekernel` cell (see magic.py for their documentation)."""

    signature: str | None = None
    constexprs: str | None = None
    kernel: str | None = None
    target: str | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    no_fp_fusion: bool = False
    stages: str | None = None
    ref: str | None = None
    out: str | None = None
    bench: int | None = None
    flops: str | None = None
    bytes: str | None = None
    no_roofline: bool = False
    force: bool = False
    compare: str | None = None
    # -- wbB: views beyond the stages (session.py) --
    sweep: str | None = None
    export: str | None = None
    profile: bool = False  # issue 22: Nsight Compute counters per source line (profile.py)


def unquote(value: Any) -> Any:
    """IPython's magic argument splitter keeps quotes: `--ref 'x + y'` gives "'x + y'"."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def default_recorder() -> Callable[[], Any]:
    """The runtime's `record_launches`, or a recorder that records nothing on an older runtime."""
    try:
        from ..runtime.record import record_launches
    except ImportError:

        @contextlib.contextmanager
        def record_launches():
            yield []

    return record_launches


def find_kernel(shell, name: str | None, before: dict[str, int]) -> Any:
    """The kernel to compile: `--kernel NAME`, else the single @jit kernel the cell (re)defined."""
    ns = shell.user_ns
    if name:
        if name not in ns:
            raise UsageError(f"--kernel {name}: no such name in the notebook")
        return ns[name]
    new = [k for k, v in ns.items() if is_kernel(v) and before.get(k) != id(v)]
    if len(new) == 1:
        return ns[new[0]]
    if not new:
        raise UsageError(
            "compile-only mode found no @tw.jit kernel defined in this cell; "
            "define one or name it with --kernel NAME"
        )
    raise UsageError(
        f"the cell defines several kernels ({', '.join(sorted(new))}); "
        "choose one with --kernel NAME"
    )


def is_kernel(value: Any) -> bool:
    """A tileworkbench @jit (or autotuned / heuristics-wrapped) kernel."""
    return type(value).__module__.startswith("tileworkbench.runtime") and hasattr(value, "fn")


class UsageError(TileworkbenchError):
    """A bad `%%tilekernel` option; shown as one line, without a traceback."""


def report_options(shell, options: MagicOptions) -> ReportOptions:
    """ReportOptions with --ref/--out/--flops/--bytes evaluated in the user's namespace."""

    def evaluate(expr: str | None, what: str) -> Any:
        if expr is None:
            return None
        try:
            return eval(expr, shell.user_ns)
        except Exception as exc:
            raise UsageError(f"{what} {expr!r} failed: {type(exc).__name__}: {exc}") from None

    stages = tuple(s.strip() for s in options.stages.split(",")) if options.stages else None
    return ReportOptions(
        stages=stages,
        bench=options.bench,
        ref=evaluate(options.ref, "--ref"),
        out=evaluate(options.out, "--out"),
        flops=evaluate(options.flops, "--flops"),
        bytes=evaluate(options.bytes, "--bytes"),
        roofline=not options.no_roofline,
        compare=options.compare,
    )


def compile_only(shell, options: MagicOptions, cell: str) -> list:
    """Run the cell (it defines the kernel), then compile the kernel with no launch."""
    from .compile_only import compile_kernel

    before = {k: id(v) for k, v in shell.user_ns.items()}
    with captured_error(shell) as caught:
        result = run_inner(shell, cell)
    raise_failure(result, caught, [])
    kernel = find_kernel(shell, options.kernel, before)
    compiled = compile_kernel(
        kernel,
        options.signature,
        options.constexprs,
        options.target,
        options.num_warps,
        options.num_stages,
        force=options.force,
        fp_fusion=not options.no_fp_fusion,
    )
    report = report_for_compiled(compiled, report_options(shell, options))
    note_missing_sass(report)
    note_compiler_choices(report)
    return [report]


@contextlib.contextmanager
def _target_scope(target: str | None):
    """`--target interpreter` (or `cpu`) runs the cell's launches on that host target."""
    if target is None or is_gpu(target):
        yield
        return
    from ..config import config

    saved = config.interpret, config.target
    config.interpret, config.target = False, target
    try:
        yield
    finally:
        config.interpret, config.target = saved


def run_inner(shell, cell: str):
    """`shell.run_cell(cell)` without storing history, where a trailing `;` still hides the result.

    IPython's display hook (before 8.17) decides `;` from the last *stored* input, which is the magic
    call itself, so the inner cell is shown to it for the duration. A comment line stands for
    the `%%tilekernel` line (IPython drops leading blank lines), so kernel line numbers
    (`In[3]:5`) are the lines the notebook shows."""
    cell = "# %%tilekernel\n" + cell
    history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
    if history is None:
        return shell.run_cell(cell, store_history=False)
    with _outer_count(shell, history):
        history.append(cell)
        try:
            return shell.run_cell(cell, store_history=False)
        finally:
            if history and history[-1] is cell:
                history.pop()


@contextlib.contextmanager
def _outer_count(shell, history: list):
    """While the inner cell runs, the execution count of the cell that holds it: IPython counts a
    stored cell before running it, and the inner cell's code would otherwise be named `In[N+1]`."""
    count = getattr(shell, "execution_count", None)
    stored = bool(history) and "tilekernel" in str(history[-1])  # the magic's own cell, stored
    if not isinstance(count, int) or not stored or count < 2:
        yield
        return
    shell.execution_count = count - 1
    try:
        yield
    finally:
        shell.execution_count = count


def checked_launch(records: list, out: Any) -> Any:
    """The launch `--ref` is compared with: the one given `--out` as an argument, else the last."""
    if out is not None:
        for record in reversed(records):
            if any(value is out for value in record.args.values()):
                return record
    return records[-1] if records else None


def forget_compiled(namespace: dict) -> None:
    """`--force`: empty the in-memory kernel caches of every @jit kernel in the notebook (through
    autotuner and heuristics wrappers), so the next launch compiles again."""
    for value in list(namespace.values()):
        for _ in range(8):  # JITFunction, or Autotuner/Heuristics wrapping one (or each other)
            if not is_kernel(value):
                break
            clear = getattr(value, "clear_cache", None)
            cache = getattr(value, "cache", None)
            if callable(clear):
                clear()
            elif isinstance(cache, dict):
                cache.clear()
            value = getattr(value, "fn", None)


def launch_cell(shell, options: MagicOptions, cell: str, recorder: Callable[[], Any]) -> list:
    """Run the cell with launches recorded and C stdout captured; one report per compiled kernel."""
    from .compile_only import fresh_cache

    if options.force:
        forget_compiled(shell.user_ns)
    force = fresh_cache() if options.force else contextlib.nullcontext()
    with _target_scope(options.target), force, recorder() as launches, capture_c_stdout():
        with captured_error(shell) as caught:
            result = run_inner(shell, cell)
    records = list(launches)
    if not result.success:  # show what was compiled (a failed launch included), then fail the cell
        show_failure_view(result.error_in_exec, records)  # the program id and offsets gone wrong
        raise_failure(result, caught, failed_reports(records, options))
    if not records:
        print(
            "%%tilekernel: the cell launched no tileworkbench kernel (for compile-only use, "
            "pass --signature)"
        )
        return []
    opts = report_options(shell, options)
    groups = group_launches(records, shell.user_ns)
    checked = checked_launch([record for record, _ in groups], opts.out)
    unchecked = dataclasses.replace(opts, ref=None, out=None)
    reports = []
    for record, count in groups:
        report = report_for_launch(record, opts if record is checked else unchecked, count)
        add_gpu_stages(report, record, options.target)
        reports.append(report)
    # the mismatch map and the access picture (launch_views.py)
    from .build import default_output
    from .launch_views import add_launch_sections

    for report, (record, _) in zip(reports, groups):
        out = opts.out if opts.out is not None else default_output(record)
        add_launch_sections(report, record, out if record is checked else None, opts.ref)
        if options.profile:  # after the sections: the reproducer it profiles needs report.record
            from .profile_view import profile_section

            report.sections.insert(0, profile_section(report))
    return reports


def failed_reports(records: list, options: MagicOptions) -> list:
    """Reports of the launches of a cell that raised: stages and resources only (a relaunch to time
    or check would fail again), so an out-of-bounds launch still shows what it compiled to."""
    reports = []
    for record, count in group_launches(records):
        report = report_for_launch(record, ReportOptions(roofline=False), count)
        add_gpu_stages(report, record, options.target)
        reports.append(report)
    return reports


def show_failure_view(error: BaseException | None, launches: list) -> None:
    """wbB: after an out-of-bounds launch, show what the failing program touched."""
    from .launch_views import failure_view

    view = failure_view(error, list(launches)) if error is not None else None
    if view is not None:
        from IPython.display import display

        display(view)


def group_launches(records: list, namespace: dict | None = None) -> list[tuple[Any, int]]:
    """One (last record, launch count) per compiled kernel, in order of first launch.

    Launches made by an autotuner while it benchmarks its configs are folded into the launch of the
    config it chose, which carries the autotuner's table (found through the Autotuner object in the
    notebook's namespace when the runtime did not attach it to the record)."""
    records = _fold_autotuning(records, namespace or {})
    groups: dict[int, list] = {}
    for record in records:
        key = id(record.compiled)
        groups.setdefault(key, [record, 0])
        groups[key][0] = record
        groups[key][1] += 1
    return [(record, count) for record, count in groups.values()]


def _autotuners(namespace: dict) -> list[Any]:
    return [
        v
        for v in namespace.values()
        if hasattr(v, "last_results") and hasattr(v, "configs") and hasattr(v, "fn")
    ]


def _matches(config: Any, compiled: Any) -> bool:
    meta = getattr(compiled, "metadata", None)
    constexprs = getattr(meta, "constexprs", {}) or {}
    if getattr(meta, "num_warps", config.num_warps) != config.num_warps:
        return False
    return all(str(constexprs.get(k)) in (repr(v), str(v)) for k, v in config.kwargs.items())


def _fold_autotuning(records: list, namespace: dict) -> list:
    out = list(records)
    for tuner in _autotuners(namespace):
        results = dict(getattr(tuner, "last_results", None) or {})
        mine = [r for r in out if r.kernel is tuner or r.kernel is tuner.fn]
        if not mine or not results:
            continue
        timed = {c: r["ms"] for c, r in results.items() if "ms" in r}
        best = getattr(tuner, "best_config", None) or (min(timed, key=timed.get) if timed else None)
        chosen = [r for r in mine if best is not None and _matches(best, r.compiled)] or mine[-1:]
        for record in chosen:
            if getattr(record, "autotuner_results", None) is None:
                record.autotuner_results = results
        drop = {id(r) for r in mine} - {id(r) for r in chosen}
        out = [r for r in out if id(r) not in drop]
    return out


def run_tilekernel(
    shell, options: MagicOptions, cell: str, recorder: Callable[[], Any] | None = None
) -> list:
    """The whole magic: returns the reports it built (the magic displays them).

    Raises:
        CellFailed: the cell raised, or an option or the compile-only kernel was bad; it carries the
            reports to show before the cell fails.
    """
    try:
        if options.signature is not None:
            return compile_only(shell, options, cell)
        return launch_cell(shell, options, cell, recorder or default_recorder())
    except TileworkbenchError as exc:
        raise CellFailed(exc, []) from None


def format_error(exc: BaseException) -> list[str]:
    """A tileworkbench error as compilers print it: its own message (with file:line and carets)."""
    name = type(exc).__name__
    text = str(exc)
    lines = [f"{name}: {text}"] if "\n" not in text else [f"{name}:"] + text.splitlines()
    hint = getattr(exc, "hint", None)
    if hint and "hint:" not in text:
        lines.append(f"hint: {hint}")
    return lines


class CellFailed(Exception):
    """A `%%tilekernel` cell that must fail (so Run All and nbclient stop), its reports shown first.

    `error` is what the cell raised; `reports` what it compiled before. The magic re-raises `error`
    itself, so the cell's error has the user's exception type, rendered as `stb` (IPython's
    `_render_traceback_` protocol): compiler-style for tileworkbench errors, else the traceback of
    the user's code as IPython would have shown it.
    """

    def __init__(self, error: BaseException, reports: list, stb: list[str] | None = None):
        super().__init__(str(error))
        self.error = error
        self.reports = reports
        self.stb = stb or format_error(error)

    def error_to_raise(self) -> BaseException:
        stb = self.stb
        try:
            self.error._render_traceback_ = lambda: stb
        except AttributeError:  # an exception type without a __dict__: raise ours instead
            return self
        return self.error

    def _render_traceback_(self) -> list[str]:
        return self.stb


def raise_failure(result, caught: list, reports: list) -> None:
    """Raise the CellFailed for a cell run that did not succeed (no-op when it did)."""
    if result.success:
        return
    if caught:
        caught[0].reports = reports
        raise caught[0]
    # a syntax error (before the cell ran) or an interrupt: IPython has shown it already
    error = result.error_before_exec or result.error_in_exec or RuntimeError("the cell failed")
    raise CellFailed(error, reports, [f"%%tilekernel: the cell stopped ({type(error).__name__})"])


@contextlib.contextmanager
def captured_error(shell):
    """While the cell runs, an exception it raises is kept (with the traceback IPython would show)
    instead of shown: the magic shows the reports first, then raises it."""
    saved = (shell.custom_exceptions, shell.CustomTB)
    caught: list[CellFailed] = []

    def handler(self, etype, value, tb, tb_offset=None):
        if isinstance(value, TileworkbenchError):
            stb = format_error(value)
        else:
            stb = self.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
        caught.append(CellFailed(value, [], stb))
        return stb

    shell.set_custom_exc((Exception,), handler)
    try:
        yield caught
    finally:
        shell.custom_exceptions, shell.CustomTB = saved
