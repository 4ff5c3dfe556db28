"""The kernel report: every stage, the passes, the line map, resources, timing, check and roofline.

A `KernelReport` is plain data built from a compiled kernel (and, when there was one, its launch). It
shows itself three ways: a widget in Jupyter (`widgets.py`), static HTML for nbconvert and GitHub
(`html_view.py`) and plain text for terminal IPython. `build.inspect()` builds one outside the
magic.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field
from typing import Any

from .check import CheckResult
from .counts import Counts
from .peaks import Peaks
from .resources import Resources, resources_of
from .roofline import Bound, RooflinePoint, bound_of
from .timing import Timing

STAGES = ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx", "sass")


@dataclass
class AutotuneRow:
    """One autotuner config: its time, or why it failed or was pruned."""

    config: str
    ms: float | None = None
    status: str = (
        "ok"  # "ok", "best", "screened" (not a finalist: runtime/screening.py), "failed", "pruned"
    )
    reason: str = ""
    regs: int | None = None  # per thread, GPU kernels (None: unknown, e.g. no ptxas)
    spills: int | None = None
    shared: int | None = None  # bytes per program
    compile_s: float | None = None  # seconds to compile it (in a worker process, or here)
    bench_s: float | None = None  # seconds to time it in full
    load_s: float | None = None  # seconds this process took to load a worker's build
    screen_s: float | None = None  # seconds its screen (a short timing) took
    screen_ms: float | None = None  # its screen time
    where: str = ""  # "compiled pid 4711, timed GPU 0": the process, host or GPU it ran on

    def cost(self) -> str:
        """ "compile 1.2 s, load 0.01 s, screen 0.03 s, bench 0.3 s" (the parts known), or ""."""
        parts = []
        for name in ("compile", "load", "screen", "bench"):
            seconds = getattr(self, f"{name}_s")
            if seconds is not None:
                parts.append(f"{name} {seconds:.2f} s")
        return ", ".join(parts)

    def resources(self) -> str:
        """ "96 regs, 0 spills, 64 KB shared" (the parts known), or ""."""
        parts = []
        if self.regs is not None:
            parts.append(f"{self.regs} regs")
        if self.spills is not None:
            parts.append(f"{self.spills} spills")
        if self.shared is not None:
            parts.append(f"{self.shared / 1024:.4g} KB shared")
        return ", ".join(parts)


@dataclass
class TritonResult:
    """The same kernel compiled and timed by Triton (`--compare triton`)."""

    asm: dict[str, str] = field(default_factory=dict)
    timing: Timing | None = None
    error: str | None = None


@dataclass
class KernelReport:
    """Everything the workbench shows about one kernel (one compiled variant and its last launch)."""

    name: str
    target: str
    asm: dict[str, str]
    passes: list[tuple[str, str]] = field(default_factory=list)
    line_map: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    source_lines: dict[int, str] = field(default_factory=dict)  # kernel line -> its text
    metadata: dict[str, Any] = field(default_factory=dict)
    resources: Resources | None = None
    counts: Counts | None = None
    timing: Timing | None = None
    check: CheckResult | None = None
    point: RooflinePoint | None = None
    peaks: Peaks | None = None
    show_roofline: bool = True
    autotune: list[AutotuneRow] | None = None
    triton: TritonResult | None = None
    grid: tuple[int, ...] | None = None
    launches: int = 0
    stages: tuple[str, ...] | None = None  # the tabs to show; None: every stage present
    notes: list[str] = field(default_factory=list)
    compiled: Any = None
    # views beyond the stages (sections.py): what changed, sweep, check map, accesses, export
    sections: list[Any] = field(default_factory=list)
    record: Any = None  # the LaunchRecord of a launch report (export's reproducer reruns it)

    # -- derived ------------------------------------------------------------------------------------
    @property
    def shown_stages(self) -> list[str]:
        wanted = self.stages or STAGES
        return [s for s in wanted if s in self.asm]

    @property
    def bound(self) -> Bound | None:
        if self.point is None or self.peaks is None:
            return None
        return bound_of(self.point, self.peaks)

    def stage_lines_for(self, source_line: int) -> dict[str, list[int]]:
        """For one kernel source line: the lines of every stage it became."""
        out = {}
        for stage in self.shown_stages:
            lines = self.line_map.get(stage, {}).get(source_line)
            if lines:
                out[stage] = sorted(lines)
        return out

    def linked_lines(self) -> list[int]:
        """Kernel lines that became code in some stage after `source` (the line picker's choices)."""
        return [
            line
            for line in sorted(self.source_lines)
            if any(s != "source" for s in self.stage_lines_for(line))
        ]

    def roofline(self):
        """This kernel alone on a roofline (a `Roofline`, which shows itself as a PNG)."""
        from .roofline import Roofline

        if self.point is None:
            return None
        return Roofline([self.point], self.peaks)

    # -- views ----------------------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        from .text_view import summary_lines

        return summary_lines(self)

    def __repr__(self) -> str:
        return "\n".join(self.summary_lines())

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return self.html()

    def html(self, compact: bool = False) -> str:
        """The static HTML view; `compact`: stage texts uncoloured, each pass as its diff only."""
        from .html_view import render_report

        return render_report(self, compact=compact)

    def widget(self):
        """The interactive ipywidgets view (needs ipywidgets)."""
        from .widgets import build_widget

        return build_widget(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """Widget view in a live Jupyter kernel, with the static HTML and the text as fallbacks."""
        bundle = {"text/plain": repr(self), "text/html": self._repr_html_()}
        if _in_kernel():
            try:
                bundle.update(self.widget()._repr_mimebundle_() or {})
                bundle["text/plain"] = repr(self)
            except ImportError:  # no ipywidgets: the static HTML is the view
                pass
        return bundle

    def save_html(self, path: str) -> str:
        """Write the report as a standalone HTML page."""
        from .html_view import page

        with open(path, "w", encoding="utf-8") as f:
            f.write(page([self]))
        return str(path)

    def access_map(self, pid: tuple[int, ...] = (0, 0, 0)):
        """Which elements program `pid` of the launch loaded and stored (rerun alone, on copies)."""
        from .access_map import access_map

        if self.record is None:
            raise ValueError(
                f"{self.name}: the access picture needs a launch (this report has none)"
            )
        return access_map(self.record, pid)

    def coverage(self):
        """Which programs of the launch wrote each output element (the whole grid rerun on copies):
        elements no program wrote, or two did, and by whom."""
        from .coverage import coverage

        if self.record is None:
            raise ValueError(
                f"{self.name}: the coverage view needs a launch (this report has none)"
            )
        return coverage(self.record)

    def export(self, folder: str) -> dict[str, str]:
        """Write a self-contained HTML page and (for a launch) a reproducer script into `folder`."""
        from .export import export_report

        return export_report(self, folder)


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (where widgets render), false in terminal IPython or plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def source_lines_of(compiled: Any) -> dict[int, str]:
    """Kernel file line -> its text, for the lines the kernel spans."""
    text = (getattr(compiled, "asm", {}) or {}).get("source", "")
    first = getattr(compiled, "source_first_line", None) or 1
    file = getattr(compiled, "source_file", None)
    source_map = (getattr(compiled, "line_map", {}) or {}).get("source")
    lines = text.split("\n")
    if source_map:
        return {int(k): lines[v[0] - 1] for k, v in source_map.items() if v and v[0] <= len(lines)}
    if file and linecache.getline(file, first):
        return {
            first + i: linecache.getline(file, first + i).rstrip("\n")
            for i in range(len(lines))
            if linecache.getline(file, first + i)
        }
    return {first + i: line for i, line in enumerate(lines)}


def line_map_of(compiled: Any) -> dict[str, dict[int, list[int]]]:
    """The compiled kernel's line map, with the `source` stage filled in when the compiler left it out."""
    line_map = {
        k: {int(a): list(b) for a, b in v.items()}
        for k, v in (getattr(compiled, "line_map", None) or {}).items()
    }
    if "source" not in line_map and "source" in (compiled.asm or {}):
        first = getattr(compiled, "source_first_line", None) or 1
        count = len(compiled.asm["source"].split("\n"))
        line_map["source"] = {first + i: [i + 1] for i in range(count)}
    return line_map


def metadata_of(compiled: Any) -> dict[str, Any]:
    meta = getattr(compiled, "metadata", None)
    if meta is None:
        return {}
    if hasattr(meta, "as_dict"):
        return dict(meta.as_dict())
    if isinstance(meta, dict):
        return dict(meta)
    return {k: v for k, v in vars(meta).items() if not k.startswith("_")}


def base_report(compiled: Any, stages: tuple[str, ...] | None = None) -> KernelReport:
    """A report with the compiled kernel's stages, passes, line map and resources (no launch data)."""
    meta = metadata_of(compiled)
    for key in ("n_regs", "n_spills"):
        if meta.get(key) is None and getattr(compiled, key, None) is not None:
            meta[key] = getattr(compiled, key)
    target = str(meta.get("target") or getattr(compiled, "target", "") or "")
    name = getattr(compiled, "name", None) or meta.get("name") or "kernel"
    return KernelReport(
        name=name,
        target=target,
        asm=dict(compiled.asm),
        passes=list(compiled.passes or []),
        line_map=line_map_of(compiled),
        source_lines=source_lines_of(compiled),
        metadata=meta,
        resources=resources_of(meta, target, dict(compiled.asm)),
        stages=stages,
        compiled=compiled,
    )
