"""PTX <-> SASS linking from line info plus instruction order, and the SASS program counter -> source
line table that `--profile` attributes ncu's per-instruction counters through.

nvdisasm `-c -g --print-line-info` writes `//## File "k.py", line 14` before the SASS of each line, and
the PTX carries `.loc 1 14 9` before the PTX of each line (backends/nvptx/debuginfo.py). Within one
source line, a PTX instruction and the SASS it became share a *family* (`mma.sync` -> `HMMA`,
`wgmma.mma_async` -> `HGMMA`, `cp.async` -> `LDGSTS`, `ld.global` -> `LDG`, ...): the k-th PTX
instruction of a family on a line is linked to the k-th SASS instruction of that family on that line
(or, when ptxas unrolled or fused so the counts differ, to the proportional one). Instructions of no
family (integer arithmetic, moves) are linked only through their line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

# PTX opcode prefix -> family, most specific first (cp.async.bulk.tensor is TMA, not cp.async).
PTX_FAMILIES = (
    ("wgmma.mma_async", "wgmma"),
    ("wgmma.", "wgmma-sync"),
    ("mma.sync", "mma"),
    ("ldmatrix", "ldmatrix"),
    ("stmatrix", "stmatrix"),
    ("cp.async.bulk.tensor", "tma-load"),
    ("cp.async.bulk", "bulk-copy"),
    ("cp.async.commit_group", "cp-commit"),
    ("cp.async.wait", "cp-wait"),
    ("cp.async", "cp.async"),
    ("ld.global", "ld.global"),
    ("st.global", "st.global"),
    ("ld.shared", "ld.shared"),
    ("st.shared", "st.shared"),
    ("ld.local", "ld.local"),
    ("st.local", "st.local"),
    ("ld.param", "ld.param"),
    ("atom.global", "atomic"),
    ("red.global", "atomic"),
    ("bar.sync", "barrier"),
    ("barrier.sync", "barrier"),
    ("shfl.sync", "shuffle"),
    ("ex2.approx", "mufu"),
    ("rcp.approx", "mufu"),
    ("rsqrt.approx", "mufu"),
    ("sqrt.approx", "mufu"),
    ("lg2.approx", "mufu"),
    ("sin.approx", "mufu"),
    ("cos.approx", "mufu"),
    ("tanh.approx", "mufu"),
    ("fma.rn.f32", "ffma"),
)
# SASS mnemonic -> family (what the PTX families above become on sm_80/sm_90)
SASS_FAMILIES = {
    "HGMMA": "wgmma",
    "WARPGROUP": "wgmma-sync",
    "HMMA": "mma",
    "LDSM": "ldmatrix",
    "STSM": "stmatrix",
    "UTMALDG": "tma-load",
    "UBLKCP": "bulk-copy",
    "LDGDEPBAR": "cp-commit",
    "DEPBAR": "cp-wait",
    "LDGSTS": "cp.async",
    "LDG": "ld.global",
    "STG": "st.global",
    "LDS": "ld.shared",
    "STS": "st.shared",
    "LDL": "ld.local",
    "STL": "st.local",
    "ATOMG": "atomic",
    "RED": "atomic",
    "REDG": "atomic",
    "BAR": "barrier",
    "SHFL": "shuffle",
    "MUFU": "mufu",
    "FFMA": "ffma",
    "LDC": "ld.param",
    "ULDC": "ld.param",
}

_PTX_LOC = re.compile(r"^\s*\.loc\s+[0-9]+\s+([0-9]+)")
_SASS_FILE = re.compile(r'//## File "(?P<file>[^"]*)", line (?P<line>[0-9]+)')
_SASS_INSTR = re.compile(
    r"^\s*/\*(?P<pc>[0-9a-f]{4,})\*/\s+(?P<pred>@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?P<rest>[^;]*);"
)


@dataclass
class SassInstr:
    """One SASS instruction: its offset in the kernel (ncu's "Address"), its text and source line."""

    index: int  # 0-based position in the kernel's instruction list
    pc: int
    opcode: str  # the mnemonic with its modifiers: `HMMA.16816.F32`
    text: str
    file: str | None
    line: int  # 0 where nvdisasm gave none

    @property
    def mnemonic(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def family(self) -> str | None:
        return SASS_FAMILIES.get(self.mnemonic)


@dataclass
class PtxInstr:
    """One PTX instruction: its 1-based line in the PTX text, its text and source line."""

    index: int
    ptx_line: int
    text: str
    line: int

    @property
    def opcode(self) -> str:
        word = self.text.split()[0] if self.text.split() else ""
        if word.startswith("@") and len(self.text.split()) > 1:
            word = self.text.split()[1]
        return word.rstrip(";")

    @property
    def family(self) -> str | None:
        op = self.opcode
        return next((fam for prefix, fam in PTX_FAMILIES if op.startswith(prefix)), None)


def parse_sass(text: str) -> list[SassInstr]:
    """The instructions of nvdisasm `-c -g --print-line-info` output (one kernel), in order."""
    out: list[SassInstr] = []
    file, line = None, 0
    for raw in text.splitlines():
        m = _SASS_FILE.search(raw)
        if m:
            file, line = m.group("file"), int(m.group("line"))
            continue
        m = _SASS_INSTR.match(raw)
        if m:
            body = (m.group("pred") or "") + m.group("op") + m.group("rest")
            out.append(
                SassInstr(
                    len(out),
                    int(m.group("pc"), 16),
                    m.group("op"),
                    " ".join(body.split()),
                    file,
                    line,
                )
            )
    return out


def parse_ptx(text: str) -> list[PtxInstr]:
    """The PTX instructions of the kernel body with the `.loc` line in force before each."""
    out: list[PtxInstr] = []
    current, in_body = 0, False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        m = _PTX_LOC.match(raw)
        if m:
            current, in_body = int(m.group(1)), True
            continue
        if not in_body or not stripped or stripped.startswith(("//", ".", "$", "{", "}", ")")):
            continue
        out.append(PtxInstr(len(out), number, stripped, current))
    return out


@dataclass
class Links:
    """PTX instruction index <-> SASS instruction indices, both ways."""

    ptx_to_sass: dict[int, list[int]] = field(default_factory=dict)
    sass_to_ptx: dict[int, list[int]] = field(default_factory=dict)

    def add(self, p: int, s: int) -> None:
        if s not in self.ptx_to_sass.setdefault(p, []):
            self.ptx_to_sass[p].append(s)
        if p not in self.sass_to_ptx.setdefault(s, []):
            self.sass_to_ptx[s].append(p)


def link(ptx: list[PtxInstr], sass: list[SassInstr]) -> Links:
    """Link the PTX and SASS instructions of one kernel (family by family, line by line, in order)."""
    groups_p: dict[tuple[int, str], list[PtxInstr]] = {}
    groups_s: dict[tuple[int, str], list[SassInstr]] = {}
    for p in ptx:
        if p.family:
            groups_p.setdefault((p.line, p.family), []).append(p)
    for s in sass:
        if s.family:
            groups_s.setdefault((s.line, s.family), []).append(s)
    links = Links()
    for key, ps in groups_p.items():
        _pair(links, ps, groups_s.get(key, []))
    # what no line paired (ptxas moved an instruction to a neighbouring line's code, e.g. a
    # software-pipelined prologue): pair the rest of each family in kernel order
    for family in {p.family for p in ptx if p.family}:
        every_p = [p for p in ptx if p.family == family]
        every_s = [s for s in sass if s.family == family]
        for s in (s for s in every_s if s.index not in links.sass_to_ptx):
            links.add(_nearest(every_p, s.index / max(len(sass), 1), len(ptx)).index, s.index)
        for p in (p for p in every_p if p.index not in links.ptx_to_sass):
            if every_s:
                links.add(p.index, _nearest(every_s, p.index / max(len(ptx), 1), len(sass)).index)
    return links


def _nearest(items: list, position: float, total: int):
    """The item whose relative position in its kernel (index / total) is closest to `position`."""
    return min(items, key=lambda item: abs(item.index / max(total, 1) - position))


def _pair(links: Links, ps: list[PtxInstr], ss: list[SassInstr]) -> None:
    if not ps or not ss:
        return
    if len(ps) >= len(ss):  # PTX fused into fewer SASS (vectorized loads): several to one
        for i, p in enumerate(ps):
            links.add(p.index, ss[i * len(ss) // len(ps)].index)
    else:  # one PTX became several SASS (unrolled, split wide loads): one to several
        for j, s in enumerate(ss):
            links.add(ps[j * len(ps) // len(ss)].index, s.index)


# families whose every SASS instruction is the PTX's own (ptxas makes none of them up, as it makes
# FFMAs out of a mul and an add, or LDL/STL for spills): where nvdisasm puts one on a line whose PTX
# has none of its family, it is the linked PTX instruction's, moved by ptxas's scheduler
_OWN_FAMILIES = ("wgmma", "mma", "ldmatrix", "stmatrix", "tma-load", "bulk-copy", "cp.async")


def with_ptx_lines(sass: list[SassInstr], ptx: list[PtxInstr]) -> list[SassInstr]:
    """`sass` with each tensor-core or asynchronous-copy instruction that nvdisasm's line table
    puts on a line where the PTX has no instruction of its family given the line of the PTX
    instruction it links to (ptxas schedules a register-A `wgmma`'s HGMMAs among the softmax's
    sums before it, and gives them that code's line), so a `tl.dot` line keeps its tensor work."""
    if not ptx:
        return sass
    links = link(ptx, sass)
    lines = {(p.line, p.family) for p in ptx if p.family}
    moved = []
    for s in sass:
        linked = links.sass_to_ptx.get(s.index)
        if s.family in _OWN_FAMILIES and s.line and (s.line, s.family) not in lines and linked:
            s = replace(s, line=ptx[linked[0]].line)
        moved.append(s)
    return moved


def pc_lines(sass: list[SassInstr]) -> dict[int, tuple[str | None, int]]:
    """SASS offset -> (file, line): the table ncu's per-instruction counters are attributed with."""
    return {s.pc: (s.file, s.line) for s in sass}
