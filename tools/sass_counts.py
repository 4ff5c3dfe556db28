"""Opcode counts of a kernel's SASS (cuobjdump's text), over the whole kernel and over its hottest
loop: a span between a backward branch (`BRA 0x...` to a lower address) and its target (the
innermost one with tensor-core math).
Used by the GPU probes to set our SASS beside Triton's (HGMMA, STSM, LDGSTS, barriers, ...).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

OPCODES = ("HGMMA", "HMMA", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR", "LDSM", "STSM", "LDGSTS",
           "LDGDEPBAR", "DEPBAR", "BAR.SYNC", "FENCE.VIEW.ASYNC", "STS", "LDS", "STG", "LDG",
           "F2FP", "R2UR", "MEMBAR")
_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
_BRANCH = re.compile(r"\bBRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")


def instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction text) of every instruction line of `sass`."""
    return [(int(m.group(1), 16), m.group(2).strip()) for m in map(_LINE.search, sass.splitlines())
            if m]


def _count(code: list[str]) -> dict[str, int]:
    """Instructions whose opcode (after any predicate) starts with each of OPCODES (STS counts
    STS.128, not STSM; LDS not LDSM)."""
    counts = dict.fromkeys(OPCODES, 0)
    for text in code:
        words = text.split()
        if not words:
            continue
        opcode = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        for name in OPCODES:
            if opcode == name or opcode.startswith(name + "."):
                counts[name] += 1
    return counts


def hot_loop(sass: str) -> list[str]:
    """The instructions of the innermost loop with tensor-core math (the shortest backward-branch
    body holding an HGMMA or HMMA: a persistent kernel's k loop, not its tile loop), else of the
    longest loop."""
    code = instructions(sass)
    loops = []
    for address, text in code:
        match = _BRANCH.search(text)
        if not match or match.group(1) is None:
            continue
        target = int(match.group(1), 16)
        if target < address:
            loops.append([t for a, t in code if target <= a <= address])
    math = [body for body in loops if any(re.search(r"\bH(G)?MMA\b", t) for t in body)]
    if math:
        return min(math, key=len)
    return max(loops, key=len, default=[])


def counts(sass: str) -> dict:
    """{"all": opcode counts, "loop": opcode counts of the hot loop plus its length}."""
    loop = hot_loop(sass)
    return {"all": _count([t for _, t in instructions(sass)]),
            "loop": {**_count(loop), "instructions": len(loop)}}


def disassemble(cubin: bytes | None, tool: str | None) -> str:
    """The SASS of `cubin` by `tool` (cuobjdump --dump-sass, or nvdisasm); "" without either."""
    if not cubin or not tool:
        return ""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        dump = ["--dump-sass"] if "cuobjdump" in Path(tool).name else []
        return subprocess.run([tool, *dump, str(path)], capture_output=True, text=True).stdout


def sass_of(compiled) -> str:
    """A compiled kernel's SASS: the compiler's own, else its cubin disassembled, else ""."""
    try:
        text = compiled.asm.get("sass") or ""
    except Exception:  # noqa: BLE001 - the probes report, they do not stop
        text = ""
    tool = shutil.which("cuobjdump") or shutil.which("nvdisasm")
    return text or disassemble(getattr(compiled, "cubin", None), tool)


def brief(c: dict, keys=("HGMMA", "STSM", "STS", "LDS", "LDSM", "LDGSTS", "STG", "BAR.SYNC")) -> str:
    """A one-line summary: whole-kernel counts, then the hot loop's."""
    whole = " ".join(f"{k}={c['all'][k]}" for k in keys)
    loop = " ".join(f"{k}={c['loop'][k]}" for k in keys if c["loop"][k])
    return f"{whole} | loop({c['loop']['instructions']} instr) {loop}"
