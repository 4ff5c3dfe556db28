"""A compiled kernel's resources in one object: registers and spills (ptxas), shared memory region by
region (each `cp.async` ring as slots x bytes, staged tiles, scratch, static arrays) against the
device's limit, and the tensor-core instruction counts of its PTX and SASS.

`compiled.resources` returns one (print it); the workbench's resource panel shows the same lines. The
backend supplies the limit and the counts (`Backend.shared_limit`, `Backend.instruction_counts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ResourceSummary:
    """What one compiled kernel uses. `None`: unknown (no ptxas, or a target without the notion)."""

    name: str
    target: str
    num_warps: int
    n_regs: int | None = None
    n_spills: int | None = None
    shared: int = 0
    shared_plan: list[dict] = field(default_factory=list)
    shared_limit: int | None = None
    instructions: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, compiled: Any) -> ResourceSummary:
        """The summary of a CompiledKernel (waits for ptxas and the disassembler where they run)."""
        from ..backends import backend_for

        md = compiled.metadata
        backend = backend_for(md.target)
        return cls(
            name=md.name,
            target=md.target,
            num_warps=md.num_warps,
            n_regs=md.n_regs,
            n_spills=md.n_spills,
            shared=md.shared,
            shared_plan=list(md.shared_plan or []),
            shared_limit=backend.shared_limit(md.target),
            instructions=backend.instruction_counts(compiled.asm),
        )

    @property
    def plan_total(self) -> int:
        """Bytes per block by the plan: the end of the furthest dynamic region plus the static arrays."""
        return plan_total(self.shared_plan)

    def lines(self) -> list[str]:
        """The summary as text: registers, the shared-memory plan, the instruction counts."""
        regs = "?" if self.n_regs is None else self.n_regs
        spills = "?" if self.n_spills is None else self.n_spills
        lines = [
            f"{self.name} [{self.target}], {self.num_warps} warps: {regs} registers/thread, "
            f"{spills} spills, {kb(self.shared)} shared"
        ]
        if self.shared_plan:
            lines.append("shared memory:")
            lines += ["  " + line for line in plan_lines(self.shared_plan, self.shared_limit)]
        for stage, counts in self.instructions.items():
            if counts:
                lines.append(
                    f"{stage} tensor-core and async-copy instructions (static): "
                    + counts_text(counts)
                )
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(str(self))


def plan_total(plan: list[dict]) -> int:
    dynamic = max((e["offset"] + e["bytes"] for e in plan if e["space"] == "dynamic"), default=0)
    return dynamic + sum(e["bytes"] for e in plan if e["space"] == "static")


def kb(n: int) -> str:
    """Bytes as `96 KB`, `1.5 KB` or `16 B`."""
    if n < 1024:
        return f"{n} B"
    return f"{n // 1024} KB" if n % 1024 == 0 else f"{n / 1024:.1f} KB"


def plan_row(e: dict) -> tuple[str, str, str, str]:
    """(what, where in shared memory, size, detail) of one region of the plan."""
    what = e["use"] + (f" `{e['value']}`" if e.get("value") else "")
    what += f" (line {e['line']})" if e.get("line") else ""
    where = f"@{e['offset']}" if e["space"] == "dynamic" else "static"
    if "slots" in e:
        slot = "x".join(map(str, e["shape"][1:]))
        detail = f"{e['slots']} slots x {kb(e['slot_bytes'])} ({slot} {e['dtype']})"
    elif "shape" in e:
        detail = f"{'x'.join(map(str, e['shape']))} {e['dtype']}"
    else:
        detail = ", ".join(e.get("users", []))
    return what, where, kb(e["bytes"]), detail


def total_text(plan: list[dict], limit: int | None) -> str:
    total = plan_total(plan)
    if not limit:
        return f"total {kb(total)}"
    return f"total {kb(total)} of {kb(limit)} a block may have ({100 * total / limit:.0f}%)"


def plan_lines(plan: list[dict], limit: int | None) -> list[str]:
    """One line per region, then the total against the limit."""
    lines = [
        f"{what} {where}: {size}; {detail}" for what, where, size, detail in map(plan_row, plan)
    ]
    return lines + [total_text(plan, limit)]


def counts_text(counts: dict[str, int]) -> str:
    return "; ".join(f"{name}: {n}" for name, n in counts.items())
