"""Finds shared-memory accesses that no barrier separates, in the LLVM IR of a kernel (before or
after O3): a read after another use's write (RAW) or a write after another use's read (WAR) with no
`barrier0` between them on some path, loop back edges included, and a read while a `cp.async`
copy may still be landing (ASYNC: no `cp.async.wait_group` then barrier since it was issued). The
CPU emulator runs every thread to a barrier at host speed and can hide such races; this check reads
them off the IR instead.

Per path since the last barrier, the kinds of access (read, write) made to each shared array
(`@global_smem`, a reduction's private `@scratch_smem_N`, or unknown -> all) are tracked over the
control-flow graph to a fixpoint. An access through a pointer value the thread used since the
barrier is a thread updating its own element and is not reported. `ldmatrix` reads; inline asm that
reads (`ldmatrix`, `ld.shared`) or writes (`st.shared`) counts as an access of unknown array. Not
followed: addresses (which slot of a cp.async ring a copy fills: copies are not checked for WAR) and
wait_group's count (any wait counts as waiting for every copy).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

_LABEL = re.compile(r'^"?([\w.\-]+)"?:')
_TARGETS = re.compile(r'label %"?([\w.\-]+)"?')
_DEF = re.compile(r'^\s*(%"?[\w.\-]+"?) = ')
_SHARED_GLOBAL = re.compile(r'@"?(\w*smem\w*)"?')
_VALUE = re.compile(r'%"?[\w.\-]+"?')
_ASM_READS = ("ldmatrix", "ld.shared")
_ASM_WRITES = ("st.shared", "stmatrix")
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


_POINTER = re.compile(r'addrspace\(3\)\s+(@"?[\w.]+"?|%"?[\w.\-]+"?)')
_INTRINSIC_READS = ("llvm.nvvm.ldmatrix",)
_INTRINSIC_WRITES = ("llvm.nvvm.stmatrix",)


def _access(line: str, bases: dict[str, str]) -> tuple[str, str, str] | None:
    """(kind, array, pointer) of a shared-memory access on this line, else None. Kinds: "R", "W",
    "COPY" (a cp.async issued) and "WAIT" (cp.async.wait_group / wait_all)."""
    text = line.strip()
    if "cp.async" in text:
        if "cp.async.wait" in text:
            return "WAIT", UNKNOWN, ""
        if "commit" not in text and not text.startswith("declare"):
            return "COPY", UNKNOWN, ""
        return None
    if " asm " in text:
        if any(t in text for t in _ASM_READS):
            return "R", UNKNOWN, text
        if any(t in text for t in _ASM_WRITES):
            return "W", UNKNOWN, text
        return None
    if "addrspace(3)" not in text or text.startswith("declare"):
        return None
    is_store = text.startswith("store ") or " atomicrmw " in text  # atomics: writes, for RAW
    is_store = is_store or any(t in text for t in _INTRINSIC_WRITES)
    is_load = " = load " in text or any(t in text for t in _INTRINSIC_READS)
    if not (is_store or is_load):
        return None
    pointer = _POINTER.search(text).group(1)
    if pointer.startswith("@"):
        array = pointer.strip("@").strip('"')
    else:
        array = bases.get(pointer, UNKNOWN)
    return ("W" if is_store else "R"), array, pointer


def _is_barrier(line: str) -> bool:
    """`barrier0` before O3; LLVM upgrades it to `barrier.cta.sync.aligned.all` (or inline asm)."""
    return "llvm.nvvm.barrier" in line or "bar.sync" in line or "barrier.sync" in line


def _conflicts(array: str, other: str) -> bool:
    return array == other or UNKNOWN in (array, other)


# markers in the pending set: cp.async copies issued and not waited for; waited, not yet fenced
_COPIED = ("COPY", UNKNOWN, "issued")
_WAITED = ("COPY", UNKNOWN, "waited")


def _after_barrier(pending: set) -> set:
    """A barrier orders every access before it, and publishes the copies this thread waited for;
    copies not waited for may still land."""
    return {_COPIED} if _COPIED in pending else set()


def _step(pending: set, access, line_index: int, line: str, hazards: dict) -> None:
    kind, array, pointer = access
    if kind == "COPY":
        pending.add(_COPIED)
        return
    if kind == "WAIT":
        if _COPIED in pending:
            pending.discard(_COPIED)
            pending.add(_WAITED)
        return
    if kind == "R" and (_COPIED in pending or _WAITED in pending):
        hazards.setdefault(line_index, Hazard("ASYNC", array, line_index + 1, line))
    against = "W" if kind == "R" else "R"
    # through a pointer this thread used since the barrier: it updates (or reads back) an element
    # it owns in this phase (a sort network's compare-exchange)
    own = any(k == against and p == pointer for k, _, p in pending)
    for other_kind, other, _ in pending:
        if other_kind == against and _conflicts(array, other) and not own:
            kind_name = "RAW" if kind == "R" else "WAR"
            hazards.setdefault(line_index, Hazard(kind_name, array, line_index + 1, line))
    pending.add(access)


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
            if _is_barrier(lines[i]):
                pending = _after_barrier(pending)
                continue
            access = _access(lines[i], bases)
            if access is not None:
                _step(pending, access, i, lines[i], hazards)
        for succ in successors[name]:
            merged = entry_state[succ] | pending
            if merged != entry_state[succ]:
                entry_state[succ] = frozenset(merged)
                work.append(succ)
    return sorted(hazards.values(), key=lambda h: h.line)


def lowered_llvm(fn, signature: dict, constexprs: dict, num_warps: int = 4, arch: str = "sm_80",
                 num_stages: int = 3) -> str:
    """The kernel's LLVM module as the NVPTX lowering builds it for `arch` (before O3)."""
    from tileworkbench.backends.llvm.lower import Lowering
    from tileworkbench.backends.nvptx.hooks import NVPTX_HOOKS
    from tileworkbench.backends.nvptx.archs import ARCHS
    from tileworkbench.passes.axis_info import axis_info
    from tileworkbench.passes.pipeline import TILE_GPU, run_passes
    from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir

    func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]
    # as the NVPTX driver: dots on mma.sync where they fit (not wgmma; no shared-memory room known)
    target = dataclasses.replace(ARCHS[arch].target_info(num_warps, num_stages),
                                 tensor_cores="mma.sync", shared_per_block=0, shared_per_sm=0)
    run_passes(func, TILE_GPU, target=target)
    return str(Lowering(func, arch, num_warps, axis_info(func), hooks=NVPTX_HOOKS, target=target).run())
