"""What a compiled NVIDIA kernel holds, for the resource panel: its shared-memory plan (each `cp.async`
ring, staged tile and scratch region, in bytes, against the device's limit) and its tensor-core
instruction counts (`mma.sync` per shape, `ldmatrix`, `cp.async`, `wgmma` in the PTX; HMMA, HGMMA,
LDSM, LDGSTS in the SASS where a disassembler made it).

The plan is recorded by the lowering (`shared_plan`), which places every region; the counts are read
from the stage texts (`instruction_counts`), so they hold for kernels loaded from the cache too.
`runtime/resource_summary.py` shows both.
"""

from __future__ import annotations

import re
from collections import Counter

from ...ir.ops import ttg
from ...ir.ops.ttg import BlockedEncoding, MmaEncoding
from ..llvm.llvm_types import byte_size

# -- the shared-memory plan ----------------------------------------------------------------------------


def shared_plan(lw) -> list[dict]:
    """Every shared-memory region of a lowered kernel (`Lowering` after `run`), in offset order: the
    `local_alloc` regions, the scratch after them, and the static arrays."""
    plan = [alloc_entry(op, offset, size) for op, offset, size in lw.alloc_regions]
    if lw.smem_bytes > lw.smem_base:
        plan.append(scratch_entry(lw.smem_base, lw.smem_bytes - lw.smem_base, lw.scratch_users))
    plan += [static_entry(op, size) for op, size in lw.static_uses]
    return plan


def shared_limit(arch: str) -> int:
    """The most shared memory a block of `arch` may have."""
    from .archs import arch as arch_row

    return arch_row(arch).shared_per_block


def alloc_use(op: ttg.LocalAllocOp) -> str:
    """What a `local_alloc` is for: a ring that async copies fill, the epilogue's staging of a
    tensor-core result on its way to a coalesced store, or a dot operand staged for `ldmatrix`."""
    if op.name == "ttng.tma_ring":
        return "TMA ring"
    if op.name == "ttng.tma_store":  # its staging tile, where it lies over the rings
        return "TMA store staging"
    if op.src is None:
        return "cp.async ring"
    if isinstance(op.src.type.encoding, MmaEncoding):
        return "epilogue staging"
    if isinstance(op.src.type.encoding, BlockedEncoding):
        return "operand staging"
    return "staged tile"


def alloc_entry(op: ttg.LocalAllocOp, offset: int, size: int) -> dict:
    """One `local_alloc`'s (or TMA store staging tile's) row of the plan (its region is `size`
    bytes at `offset`)."""
    value = op.value if op.name == "ttng.tma_store" else op.result
    t = value.type
    use = alloc_use(op)
    entry = {
        "use": use,
        "value": value.name_hint or "",
        "line": _line(op),
        "shape": list(t.shape),
        "dtype": str(t.element),
        "offset": offset,
        "bytes": size,
        "space": "dynamic",
    }
    if use in ("cp.async ring", "TMA ring"):
        entry["slots"] = t.shape[0]
        entry["slot_bytes"] = _numel(t.shape[1:]) * byte_size(t.element)
    return entry


def scratch_entry(offset: int, size: int, users: list) -> dict:
    """The scratch region after the allocations: its users take turns, fenced by barriers."""
    names = sorted({f"{op.name} (line {_line(op)})" if _line(op) else op.name for op in users})
    return {"use": "scratch", "offset": offset, "bytes": size, "space": "dynamic", "users": names}


# what a static shared array of its own holds, by the op that asked for it (else a reduction's partials)
_STATIC_USES = {
    "ttng.tma_ring": "TMA ring mbarriers",
    "ttng.tma_load": "TMA load mbarrier",
    "ttng.tensormap_create": "tensor map template",
}


def static_entry(op, size: int) -> dict:
    """A static shared array of its own: a reduction's partials outside loops, the mbarriers of TMA
    copies, the template a tensor map made in the kernel is built in."""
    use = _STATIC_USES.get(getattr(op, "name", None), "reduction partials")
    return {
        "use": use,
        "line": _line(op),
        "bytes": size,
        "space": "static",
        "users": [op.name] if op is not None else [],
    }


def _line(op) -> int:
    loc = getattr(op, "loc", None)
    return loc.line if loc is not None and loc.line > 0 else 0


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# -- instruction counts --------------------------------------------------------------------------------

_PTX_PATTERNS = (
    # (pattern over a PTX line, how to name what it matched)
    (
        re.compile(r"^\s*mma\.sync\.aligned\.(m\d+n\d+k\d+)\.row\.col\.([\w.]+)"),
        lambda m: f"mma.sync.{m.group(1)} ({m.group(2)})",
    ),
    (
        re.compile(r"^\s*wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\.([\w.]+)"),
        lambda m: f"wgmma.{m.group(1)} ({m.group(2)})",
    ),
    (
        re.compile(r"^\s*ldmatrix\.sync\.aligned\.m8n8\.(x\d)(\.trans)?"),
        lambda m: f"ldmatrix.{m.group(1)}{m.group(2) or ''}",
    ),
    (
        re.compile(r"^\s*cp\.async\.(ca|cg)\.shared\.global\S*\s+\[[^]]*\],\s*\[[^]]*\],\s*(\d+)"),
        lambda m: f"cp.async {m.group(2)} B",
    ),
    (re.compile(r"^\s*cp\.async\.commit_group"), lambda m: "cp.async commit"),
    (re.compile(r"^\s*cp\.async\.wait_group"), lambda m: "cp.async wait"),
    (re.compile(r"^\s*cp\.async\.bulk\.tensor"), lambda m: "cp.async.bulk.tensor (TMA)"),
    (re.compile(r"^\s*bar\.sync|^\s*barrier\.sync"), lambda m: "bar.sync"),
)
_SASS_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
# SASS opcodes the panel counts: tensor-core math, their operand loads and the async-copy machinery
_SASS_COUNTED = (
    "HMMA",
    "HGMMA",
    "IMMA",
    "QGMMA",
    "LDSM",
    "LDGSTS",
    "LDGDEPBAR",
    "DEPBAR",
    "UTMALDG",
    "BAR",
    "WARPGROUP",
)
_SASS_FULL = ("HMMA", "HGMMA", "IMMA", "QGMMA", "LDSM")  # counted with their shape modifiers


def ptx_counts(ptx: str) -> dict[str, int]:
    """Tensor-core and async-copy instructions in PTX text, by kind (static: a loop body once)."""
    counts: Counter = Counter()
    for line in ptx.splitlines():
        for pattern, name in _PTX_PATTERNS:
            m = pattern.match(line)
            if m:
                counts[name(m)] += 1
                break
    return dict(sorted(counts.items()))


def sass_counts(sass: str) -> dict[str, int]:
    """HMMA/HGMMA (with their shapes), LDSM, LDGSTS, BAR, ... in a SASS listing (static counts)."""
    counts: Counter = Counter()
    for m in _SASS_OPCODE.finditer(sass):
        opcode = m.group(1)
        base = opcode.split(".")[0]
        if base in _SASS_FULL:
            counts[opcode] += 1
        elif base in _SASS_COUNTED:
            counts[base] += 1
    return dict(sorted(counts.items()))


def instruction_counts(asm: dict[str, str]) -> dict[str, dict[str, int]]:
    """{"ptx": counts, "sass": counts} for the stages present (`sass` only where it was made)."""
    out = {}
    if asm.get("ptx"):
        out["ptx"] = ptx_counts(asm["ptx"])
    if asm.get("sass"):
        out["sass"] = sass_counts(asm["sass"])
    return out
