"""`--profile`: why a kernel runs at its speed, line by line, from counters Nsight Compute measured.

The pieces: ncu.py runs ncu on a child process that launches the kernel and parses its pages; this
module attributes ncu's per-SASS-instruction counters to the kernel's Python lines through the
cubin's line table (sass_link.py: nvdisasm `--print-line-info` of the very cubin the launch used, so
instructions are matched by address and checked by opcode), sums them per line, and summarizes the
kernel (DRAM and L2 bandwidth, occupancy, tensor-pipe use, the three largest stall reasons in words,
the roofline point from measured bytes and FLOPs). The sums per line equal ncu's own totals: every
instruction lands on exactly one line (line 0: no line info), and `check_totals` compares them.
profile_view.py draws the result; `profile_launch` is what the magic and the CLI call.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ncu import NcuUnavailable, SourcePage, parse_raw, parse_source, run_ncu
from .sass_link import SassInstr

# source-page column -> the raw-page metric that is its kernel total
TOTALS = {
    "Instructions Executed": "smsp__inst_executed.sum",
    "Warp Stall Sampling (All Samples)": "smsp__pcsamp_sample_count",
}
# the raw-page metrics the summary and the roofline read (to_json keeps these)
KEPT_TOTALS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum.per_second",
    "lts__t_sectors.sum",
    "lts__t_bytes.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
)
INSTRUCTIONS = "Instructions Executed"
SAMPLES = "Warp Stall Sampling (All Samples)"
# the columns the per-line table shows (where the source page has them), with short headings
SHOWN = (
    ("Instructions Executed", "instr"),
    ("Warp Stall Sampling (All Samples)", "samples"),
    ("L2 Theoretical Sectors Global", "global sectors"),
    ("L2 Theoretical Sectors Local", "local sectors"),  # spills
    ("L1 Wavefronts Shared", "shared wavefronts"),
    ("L1 Wavefronts Shared Excessive", "bank conflicts"),
)
# stall reason (ncu's short name, as in `smsp__pcsamp_warps_issue_stalled_<name>` or a source-page
# column `stall_<name>`) -> what it means, in words a learner follows
STALL_WORDS = {
    "long_scoreboard": "waiting on global or local memory (a load's result)",
    "short_scoreboard": "waiting on shared memory or a special-function (MUFU) result",
    "barrier": "waiting at a barrier for the other warps of the block",
    "membar": "waiting on a memory fence",
    "mio_throttle": "the shared-memory / special-instruction queue is full",
    "lg_throttle": "the global/local memory queue is full (many loads or stores, or spills)",
    "math_pipe_throttle": "the math pipe is busy (compute bound at this line)",
    "tex_throttle": "the texture unit queue is full",
    "wait": "a fixed-latency dependency (the next instruction needs this one's result)",
    "not_selected": "ready, but another warp issued (no loss: enough warps)",
    "selected": "issuing (not a stall)",
    "dispatch_stall": "the dispatcher stalled",
    "drain": "draining stores at the end of the kernel",
    "no_instruction": "waiting for instructions (instruction-cache miss)",
    "branch_resolving": "resolving a branch",
    "imc_miss": "a constant-cache miss",
    "sleeping": "sleeping",
    "misc": "a miscellaneous reason",
    "gmma": "waiting on a warpgroup MMA (HGMMA) to finish",
    "math_dependency": "waiting on a math result",
}
_STALL_COLUMN = re.compile(r"^(?:smsp__pcsamp_warps_issue_stalled_|stall_)([a-z_]+)$")
# the source page's short column names (`stall_long_sb`) -> the metric names' reasons
SHORT_STALLS = {
    "long_sb": "long_scoreboard",
    "short_sb": "short_scoreboard",
    "lg": "lg_throttle",
    "mio": "mio_throttle",
    "math": "math_pipe_throttle",
    "tex": "tex_throttle",
    "imc": "imc_miss",
    "no_inst": "no_instruction",
    "sleep": "sleeping",
    "dispatch": "dispatch_stall",
}
# FLOPs per *thread* instruction of the CUDA-core floating-point ops (FFMA: a multiply and an add)
THREAD_FLOPS = {
    "FFMA": 2,
    "FADD": 1,
    "FMUL": 1,
    "HFMA2": 4,
    "HADD2": 2,
    "HMUL2": 2,
    "DFMA": 2,
    "DADD": 1,
    "DMUL": 1,
}


@dataclass
class LineCounters:
    """The counters of one source line: column -> sum over its SASS instructions."""

    line: int
    file: str | None
    values: dict[str, float] = field(default_factory=dict)
    stalls: dict[str, float] = field(default_factory=dict)
    sass: list[int] = field(default_factory=list)  # indices of its SASS instructions

    def get(self, column: str) -> float:
        return self.values.get(column, 0.0)


@dataclass
class StallNote:
    reason: str
    samples: float
    share: float
    line: int

    def words(self) -> str:
        what = STALL_WORDS.get(self.reason, self.reason.replace("_", " "))
        return f"{what} at line {self.line} ({100 * self.share:.0f}% of samples)"


@dataclass
class Profile:
    """What ncu measured for one launch, attributed to the kernel's lines."""

    kernel: str
    lines: dict[int, LineCounters]
    totals: dict[str, float]  # the raw page's metrics (base units)
    columns: list[str]
    stalls: list[StallNote]
    unmatched: int = 0  # source-page rows whose address or opcode the cubin did not confirm
    tensor_flops: float = 0.0
    cuda_core_flops: float = 0.0
    source: str = "measured"  # or "recorded on <device>"
    by_pc: dict[int, tuple[float, float]] = field(default_factory=dict)  # (executed, samples)

    def column_total(self, column: str) -> float:
        return sum(lc.get(column) for lc in self.lines.values())

    def hottest(self, n: int = 3, column: str = SAMPLES) -> list[int]:
        key = column if any(lc.get(column) for lc in self.lines.values()) else INSTRUCTIONS
        ranked = sorted(
            (lc for lc in self.lines.values() if lc.line > 0 and lc.get(key) > 0),
            key=lambda lc: -lc.get(key),
        )
        return [lc.line for lc in ranked[:n]]

    def metric(self, *names: str) -> float | None:
        for name in names:
            value = self.totals.get(name)
            if isinstance(value, float):
                return value
        return None

    @property
    def seconds(self) -> float | None:
        return self.metric("gpu__time_duration.sum")

    @property
    def dram_bytes(self) -> float | None:
        read = self.metric("dram__bytes_read.sum")
        write = self.metric("dram__bytes_write.sum")
        if read is None and write is None:
            return None
        return (read or 0.0) + (write or 0.0)

    @property
    def l2_bytes(self) -> float | None:
        sectors = self.metric("lts__t_sectors.sum")  # 32-byte sectors
        return self.metric("lts__t_bytes.sum") or (32 * sectors if sectors is not None else None)

    @property
    def flops(self) -> float:
        return self.tensor_flops + self.cuda_core_flops

    def summary(self) -> dict[str, float | None]:
        seconds = self.seconds
        per_s = lambda b: b / seconds if b is not None and seconds else None
        return {
            "seconds": seconds,
            "dram_bytes_per_s": per_s(self.dram_bytes),
            "l2_bytes_per_s": per_s(self.l2_bytes),
            "achieved_occupancy_pct": self.metric(
                "sm__warps_active.avg.pct_of_peak_sustained_active"
            ),
            "tensor_pipe_pct": self.tensor_pipe_pct(),
            "flops": self.flops,
            "dram_bytes": self.dram_bytes,
        }

    def tensor_pipe_pct(self) -> float | None:
        found = [
            v
            for k, v in self.totals.items()
            if isinstance(v, float)
            and k.startswith("sm__pipe_tensor")
            and k.endswith("cycles_active.avg.pct_of_peak_sustained_active")
        ]
        return max(found) if found else None

    def roofline_point(self, label: str | None = None, compute: str = "fp32"):
        """The roofline point from measured DRAM bytes, measured FLOPs and ncu's duration."""
        from .roofline import RooflinePoint

        if not self.dram_bytes or not self.flops:
            return None
        return RooflinePoint(
            label or self.kernel,
            self.flops,
            self.dram_bytes,
            self.seconds,
            compute=compute,
            flops_source="measured (ncu instruction counts)",
            bytes_source="measured DRAM bytes (ncu)",
        )

    def to_json(self, every_metric: bool = False) -> dict:
        """The profile as JSON; the raw page's totals cut to those the views read (ncu's raw page
        has ~2000) unless `every_metric`."""
        keep = KEPT_TOTALS + tuple(TOTALS.values())
        totals = {
            k: v
            for k, v in self.totals.items()
            if isinstance(v, float)
            and (every_metric or k in keep or k.startswith("sm__pipe_tensor"))
        }
        return {
            "kernel": self.kernel,
            "columns": self.columns,
            "source": self.source,
            "totals": totals,
            "lines": {
                str(k): {
                    "file": v.file,
                    "values": {c: x for c, x in v.values.items() if x},
                    "stalls": {r: x for r, x in v.stalls.items() if x},
                }
                for k, v in self.lines.items()
            },
            "tensor_flops": self.tensor_flops,
            "cuda_core_flops": self.cuda_core_flops,
            "unmatched": self.unmatched,
        }

    @classmethod
    def from_json(cls, data: dict) -> Profile:
        lines = {
            int(k): LineCounters(int(k), v.get("file"), dict(v["values"]), dict(v["stalls"]))
            for k, v in data["lines"].items()
        }
        prof = cls(
            data["kernel"],
            lines,
            dict(data["totals"]),
            list(data["columns"]),
            [],
            data.get("unmatched", 0),
            data.get("tensor_flops", 0.0),
            data.get("cuda_core_flops", 0.0),
            data.get("source", "recorded"),
        )
        prof.stalls = top_stalls(prof)
        return prof


def stall_reason(column: str) -> str | None:
    """`smsp__pcsamp_warps_issue_stalled_long_scoreboard` / `stall_long_sb`-style names -> reason;
    the not-issued variants are left out (they are a subset of the same samples)."""
    if column.endswith(("_not_issued", "(Not Issued)")):
        return None
    m = _STALL_COLUMN.match(column)
    return SHORT_STALLS.get(m.group(1), m.group(1)) if m else None


def mma_flops(opcode: str) -> float:
    """FLOPs one *warp* executes for one HMMA/HGMMA instruction (what ncu's instruction count counts).
    HMMA.16816: 2*16*8*16; HGMMA.64xNx16: 2*64*N*K over the 4 warps of the warpgroup."""
    parts = opcode.split(".")
    if parts[0] == "HMMA" and len(parts) > 1:
        m = re.fullmatch(r"(\d\d)(\d)(\d+)", parts[1])
        if m:
            return 2.0 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
    if parts[0] == "HGMMA" and len(parts) > 1:
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", parts[1])
        if m:
            return 2.0 * int(m.group(1)) * int(m.group(2)) * int(m.group(3)) / 4
    return 0.0


def attribute(page: SourcePage, sass: list[SassInstr], totals: dict) -> Profile:
    """Sum the source page's per-instruction counters per source line of `sass` (the cubin the
    launch ran), matching rows by address; a row the cubin lacks goes to line 0."""
    at = {s.pc: s for s in sass}
    columns = page.numeric_columns()
    lines: dict[int, LineCounters] = {}
    unmatched = 0
    tensor = cuda = 0.0
    by_pc: dict[int, tuple[float, float]] = {}
    thread_col = next(
        (
            c
            for c in ("Predicated-On Thread Instructions Executed", "Thread Instructions Executed")
            if c in columns
        ),
        None,
    )
    for row in page.rows:
        instr = at.get(page.address(row))
        text = str(row.get("Source", ""))
        if instr is not None and text and instr.mnemonic not in text:
            instr = None  # the address exists but holds another instruction: not this cubin
        if instr is None:
            unmatched += 1
        line = instr.line if instr is not None else 0
        entry = lines.setdefault(line, LineCounters(line, instr.file if instr else None))
        if instr is not None:
            entry.sass.append(instr.index)
            executed, samples = row.get(INSTRUCTIONS), row.get(SAMPLES)
            by_pc[instr.pc] = (
                executed if isinstance(executed, float) else 0.0,
                samples if isinstance(samples, float) else 0.0,
            )
        for column in columns:
            value = row.get(column)
            if not isinstance(value, float):
                continue
            entry.values[column] = entry.values.get(column, 0.0) + value
            reason = stall_reason(column)
            if reason is not None:
                entry.stalls[reason] = entry.stalls.get(reason, 0.0) + value
        mnemonic = (
            instr.mnemonic if instr is not None else text.split(" ")[0].lstrip("@!P0123456789 ")
        )
        executed = row.get(INSTRUCTIONS)
        if isinstance(executed, float) and instr is not None:
            tensor += executed * mma_flops(instr.opcode)
        threads = row.get(thread_col) if thread_col else None
        if isinstance(threads, float):
            cuda += threads * THREAD_FLOPS.get(mnemonic.split(".")[0], 0)
    prof = Profile(page.kernel, lines, totals, columns, [], unmatched, tensor, cuda, by_pc=by_pc)
    prof.stalls = top_stalls(prof)
    return prof


def top_stalls(prof: Profile, n: int = 3) -> list[StallNote]:
    """The n largest stall reasons over the kernel (not `selected`, which is issuing), each with the
    line that has most samples of it."""
    per_reason: dict[str, float] = {}
    for lc in prof.lines.values():
        for reason, samples in lc.stalls.items():
            per_reason[reason] = per_reason.get(reason, 0.0) + samples
    every = sum(per_reason.values())
    notes = []
    for reason, samples in sorted(per_reason.items(), key=lambda kv: -kv[1]):
        if reason == "selected" or samples <= 0:
            continue
        line = max(prof.lines.values(), key=lambda lc: lc.stalls.get(reason, 0.0)).line
        notes.append(StallNote(reason, samples, samples / every if every else 0.0, line))
        if len(notes) == n:
            break
    return notes


def check_totals(prof: Profile, rel: float = 1e-6) -> list[str]:
    """Where the per-line sums differ from ncu's kernel totals (empty: they agree)."""
    out = []
    for column, metric in TOTALS.items():
        total = prof.totals.get(metric)
        if column not in prof.columns or not isinstance(total, float):
            continue
        summed = prof.column_total(column)
        if abs(summed - total) > rel * max(abs(total), 1.0):
            out.append(
                f"{column}: the lines sum to {summed:.0f}, ncu's total {metric} is {total:.0f}"
            )
    return out


def from_pages(
    source_csv: str, raw_csv: str, sass: list[SassInstr], kernel: str | None = None, index: int = 0
) -> Profile:
    """A Profile from ncu's exported pages: the `index`-th kernel (of name `kernel` if given)."""
    pages = parse_source(source_csv)
    raws = parse_raw(raw_csv)
    if kernel is not None:
        named = [i for i, p in enumerate(pages) if kernel in p.kernel] or list(range(len(pages)))
        pick = named[index]
        raw_named = [r for r in raws if kernel in str(r.get("Kernel Name", ""))] or raws
        raw = raw_named[index] if index < len(raw_named) else {}
    else:
        pick, raw = index, raws[index] if index < len(raws) else {}
    if not pages:
        raise NcuUnavailable("ncu's source page held no SASS rows (was SourceCounters collected?)")
    return attribute(pages[pick], sass, raw)


def profile_launch(report: Any) -> Profile:
    """Profile a recorded launch: write its reproducer (export.py), run ncu on it in a child process,
    attribute the counters through the cubin the launch used. Raises NcuUnavailable with the reason."""
    import numpy as np

    from ..backends import is_gpu
    from .export import reproducer
    from .sass_link import parse_ptx, parse_sass, with_ptx_lines

    record = getattr(report, "record", None)
    compiled = getattr(
        record, "compiled", None
    )  # what the launch ran (report.asm may be retargeted)
    if record is None or compiled is None or not is_gpu(str(record.target)):
        where = getattr(record, "target", None) or "no launch"
        raise NcuUnavailable(f"the launch ran on {where}, not a GPU: no hardware counters to read")
    try:
        sass_text = compiled.asm["sass"]
    except KeyError as exc:
        raise NcuUnavailable(f"no SASS to attribute counters with: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="tileworkbench-profile-") as tmp:
        stem = re.sub(r"[^A-Za-z0-9_]", "_", report.name)
        script, arrays = reproducer(report, record, f"{stem}_args.npz")
        np.savez(Path(tmp) / f"{stem}_args.npz", **arrays)
        path = Path(tmp) / f"{stem}_repro.py"
        path.write_text(script)
        # the child imports this very tileworkbench (a checkout on sys.path need not be installed)
        package_root = str(Path(__file__).resolve().parents[2])
        path_env = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        pages = run_ncu(str(path), compiled.name, tmp, env={"PYTHONPATH": path_env})
    sass = with_ptx_lines(parse_sass(sass_text), parse_ptx(compiled.asm.get("ptx", "")))
    return from_pages(pages["source"], pages["raw"], sass, compiled.name)
