"""Finds shared-memory accesses that no barrier separates, in the LLVM IR of a kernel (before or
after O3): a read after another use's write (RAW) or a write after another use's read (WAR) with no
`barrier0` between them on some path, loop back edges included. The CPU emulator runs every thread
to a barrier at host speed and can hide such races; this check reads them off the IR instead.

Per path since the last barrier, the kinds of access (read, write) made to each shared array
(`@global_smem`, a reduction's private `@scratch_smem_N`, or unknown -> all) are tracked over the
control-flow graph to a fixpoint. An access through a pointer value the thread used since the
barrier is a thread updating its own element and is not reported. Inline asm that reads (`ldmatrix`,
`ld.shared`) or writes (`cp.async`, `st.shared`) shared memory counts as an access of unknown array.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = re.compile(r'^"?([\w.\-]+)"?:')
_TARGETS = re.compile(r'label %"?([\w.\-]+)"?')
_DEF = re.compile(r'^\s*(%"?[\w.\-]+"?) = ')
_SHARED_GLOBAL = re.compile(r'@"?(\w*smem\w*)"?')
_VALUE = re.compile(r'%"?[\w.\-]+"?')
_ASM_READS = ("ldmatrix", "ld.shared")
_ASM_WRITES = ("cp.async.ca", "cp.async.cg", "st.shared", "stmatrix")
UNKNOWN = "?"


@dataclass(frozen=True)
class Hazard:
    kind: str  # "RAW" or "WAR"
    array: str
    line: int  # 1-based line of the access in the IR text
    text: str

    def __str__(self) -> str:
        return f"{self.kind} on {self.array} at line {self.line}: {self.text.strip()}"


def _blocks(lines: list[str]) -> tuple[dict[str, list[int]], list[str]]:
    """Basic blocks of the first function with a body: name -> line indices, in order."""
    blocks: dict[str, list[int]] = {}
    order: list[str] = []
    current = None
    inside = False
    for i, line in enumerate(lines):
        if line.startswith("define "):
            inside, current = True, "%entry"
            blocks[current], order = [], [current]
            continue
        if not inside:
            continue
        if line.startswith("}"):
            break
        m = _LABEL.match(line)
        if m:
            current = m.group(1)
            blocks[current] = []
            order.append(current)
        elif line.strip():
            blocks[current].append(i)
    if blocks.get("%entry") == []:
        del blocks["%entry"]
        order.remove("%entry")
    return blocks, order


def _bases(lines: list[str]) -> dict[str, str]:
    """SSA value -> the shared array it points into (through GEPs, casts and phis of one array)."""
    bases: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for line in lines:
            m = _DEF.match(line)
            if not m or "addrspace(3)" not in line or m.group(1) in bases:
                continue
            rhs = line[m.end():]
            named = set(_SHARED_GLOBAL.findall(rhs))
            named |= {bases[v] for v in _VALUE.findall(rhs) if v in bases}
            if named:
                bases[m.group(1)] = named.pop() if len(named) == 1 else UNKNOWN
                changed = True
    return bases


def _access(line: str, bases: dict[str, str]) -> tuple[str, str, str] | None:
    """(kind "R"/"W", array, pointer) of a shared-memory access on this line, else None."""
    text = line.strip()
    if " asm " in text:
        if any(t in text for t in _ASM_READS):
            return "R", UNKNOWN, text
        if any(t in text for t in _ASM_WRITES):
            return "W", UNKNOWN, text
        return None
    if "addrspace(3)" not in text:
        return None
    is_store = text.startswith("store ") or " atomicrmw " in text  # atomics: writes, for RAW
    is_load = " = load " in text
    if not (is_store or is_load):
        return None
    pointer = text.split("addrspace(3)", 1)[1].split(",")[0].strip()
    if pointer.startswith("@"):
        array = _SHARED_GLOBAL.match(pointer).group(1) if _SHARED_GLOBAL.match(pointer) else UNKNOWN
    else:
        array = bases.get(pointer, UNKNOWN)
    return ("W" if is_store else "R"), array, pointer


def _is_barrier(line: str) -> bool:
    """`barrier0` before O3; LLVM upgrades it to `barrier.cta.sync.aligned.all` (or inline asm)."""
    return "llvm.nvvm.barrier" in line or "bar.sync" in line or "barrier.sync" in line


def _conflicts(array: str, other: str) -> bool:
    return array == other or UNKNOWN in (array, other)


def find_hazards(llvm_text: str) -> list[Hazard]:
    """Every shared-memory access that some path reaches with a conflicting access pending."""
    lines = llvm_text.split("\n")
    blocks, order = _blocks(lines)
    bases = _bases(lines)
    successors = {}
    for name, indices in blocks.items():
        last = lines[indices[-1]] if indices else ""
        branches = last.strip().startswith(("br ", "switch "))
        successors[name] = _TARGETS.findall(last) if branches else []
    entry_state: dict[str, frozenset] = {name: frozenset() for name in order}
    hazards: dict[int, Hazard] = {}
    work = list(order)
    while work:
        name = work.pop(0)
        pending = set(entry_state[name])  # {(kind, array, pointer)} since the last barrier
        for i in blocks[name]:
            line = lines[i]
            if _is_barrier(line):
                pending.clear()
                continue
            access = _access(line, bases)
            if access is None:
                continue
            kind, array, pointer = access
            against = "W" if kind == "R" else "R"
            # through a pointer this thread used since the barrier: it updates (or reads back)
            # an element it owns in this phase (a sort network's compare-exchange)
            own = any(k == against and p == pointer for k, _, p in pending)
            for other_kind, other, _ in pending:
                if other_kind == against and _conflicts(array, other) and not own:
                    kind_name = "RAW" if kind == "R" else "WAR"
                    hazards.setdefault(i, Hazard(kind_name, array, i + 1, line))
            pending.add(access)
        for succ in successors[name]:
            merged = entry_state[succ] | pending
            if merged != entry_state[succ]:
                entry_state[succ] = frozenset(merged)
                work.append(succ)
    return sorted(hazards.values(), key=lambda h: h.line)


def lowered_llvm(fn, signature: dict, constexprs: dict, num_warps: int = 4,
                 arch: str = "sm_80") -> str:
    """The kernel's LLVM module as the NVPTX lowering builds it (before O3)."""
    from tileworkbench.backends.nvptx.lower import Lowering
    from tileworkbench.passes.axis_info import axis_info
    from tileworkbench.passes.pipeline import TILE_GPU, run_passes
    from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir

    func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]
    func.num_warps = num_warps
    run_passes(func, TILE_GPU)
    return str(Lowering(func, arch, num_warps, axis_info(func)).run())
