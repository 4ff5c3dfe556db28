"""What changed since the last run of a cell: PTX/SASS diff, registers, spills, shared memory and time.

A `RunHistory` lives in the magic's session state (one per `TileKernelMagics`), keyed by the
notebook cell (Jupyter's cell id, where the front end sends one: JupyterLab does, nbclient does
not), the kind of cell (a launch, or compile-only) and the kernel name; after each cell it compares
every report with the one the same kernel had in the same cell last time and attaches a
`ChangesSection` to it. Another cell with the same kernel (a compile-only view after a launch) is no
"last run of this cell".
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from .ssa_diff import diff_rows, render_rows

DIFFED_STAGES = ("tile-opt", "ptx", "sass")


@dataclass
class Snapshot:
    """What one run of a kernel looked like, as far as a later run compares it."""

    asm: dict[str, str]
    numbers: dict[str, float | None]  # registers, spills, shared bytes, time (ms)

    @classmethod
    def of(cls, report) -> Snapshot:
        res = report.resources
        return cls(
            asm={s: report.asm[s] for s in DIFFED_STAGES if s in report.asm},
            numbers={
                "registers/thread": getattr(res, "n_regs", None),
                "spills": getattr(res, "n_spills", None),
                "shared memory (B)": getattr(res, "shared", None),
                "time (ms)": report.timing.median_ms if report.timing else None,
            },
        )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


@dataclass
class ChangesSection:
    """The differences between the previous run of a kernel and this one."""

    before: Snapshot
    after: Snapshot
    title: str = "changed since the last run of this cell"
    diffs: dict[str, list] = field(default_factory=dict)

    def __post_init__(self):
        for stage in DIFFED_STAGES:
            if stage in self.before.asm and stage in self.after.asm:
                self.diffs[stage] = diff_rows(self.before.asm[stage], self.after.asm[stage])

    def changed_stages(self) -> list[str]:
        return [s for s, rows in self.diffs.items() if any(r.kind != "=" for r in rows)]

    def number_rows(self) -> list[tuple[str, str, str, str]]:
        """(what, before, after, change) for each number either run knows."""
        rows = []
        for key, old in self.before.numbers.items():
            new = self.after.numbers.get(key)
            if old is None and new is None:
                continue
            change = ""
            if old is not None and new is not None and old != new:
                change = f"{new - old:+.4g}"
                if key.startswith("time") and old:
                    change += f" ({100 * (new - old) / old:+.0f}%)"
            rows.append((key, _fmt(old), _fmt(new), change))
        return rows

    def text(self) -> list[str]:
        lines = [f"{k}: {a} -> {b} {c}".rstrip() for k, a, b, c in self.number_rows()]
        for stage, rows in self.diffs.items():
            added = sum(r.kind == "+" for r in rows)
            removed = sum(r.kind == "-" for r in rows)
            state = f"+{added} -{removed} lines" if added or removed else "unchanged"
            lines.append(f"{stage}: {state}")
        return lines

    def html(self) -> str:
        body = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{a}</td><td>{b}</td><td>{c}</td></tr>"
            for k, a, b, c in self.number_rows()
        )
        parts = [
            '<table class="twtable twchanges"><tr><th></th><th>last run</th><th>this run</th>'
            f"<th>change</th></tr>{body}</table>"
        ]
        for stage, rows in self.diffs.items():
            if any(r.kind != "=" for r in rows):
                parts.append(f"<div><b>{stage} diff</b></div>" + render_rows(rows, stage))
            else:
                parts.append(f'<div class="twnote">{stage}: unchanged (value names ignored)</div>')
        return "".join(parts)


class RunHistory:
    """The last snapshot of each (cell, kernel name), for one notebook session."""

    def __init__(self):
        self.last: dict[tuple, Snapshot] = {}

    def annotate(self, reports: list, cell: tuple = ()) -> None:
        """Attach what changed since its last run in this cell to each report, then remember this
        run. `cell` tells cells apart: (cell id or None, "launch" or "compile-only")."""
        for report in reports:
            now = Snapshot.of(report)
            key = (*cell, report.name)
            before = self.last.get(key)
            if before is not None:
                report.sections.insert(0, ChangesSection(before, now))
            self.last[key] = now


def current_cell_id(shell) -> str | None:
    """The notebook cell being run, as its front end names it (`cellId` in the execute request's
    metadata: JupyterLab, VS Code, nbclient), or None where there is none (terminal IPython)."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except (AttributeError, TypeError):
        return None
    return ((parent or {}).get("metadata") or {}).get("cellId")
