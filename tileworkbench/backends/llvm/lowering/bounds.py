"""Debug mode's device-side checks (`debug=True`): every load, store and atomic is checked against the
byte range of the array its pointer came from, and `tl.device_assert` records its failure; a failure
is written to a small error buffer that the launcher reads after the kernel (`runtime/debug_checks.py`).

Kernel ABI in debug mode: the kernel's own parameters, then two hidden `u64`s per pointer parameter
(the first and one-past-the-last byte address of its array, which the launcher knows), then the
error buffer (`ptr addrspace(1)` to `RECORD_WORDS` u64 words, zeroed). The first failure wins an
atomic compare-and-swap on word 0 and writes (site id, value, ctaid.x, ctaid.y, ctaid.z) to words
1..5; `value` is the access's address (the vector's first byte) or, for an assert, the flat index
of a failing element. Site ids index `BoundsChecks.sites`, which the compiled kernel's metadata
keeps, so the device records numbers and the host writes the message.

A failing lane is masked off (a load gives `other`, or 0; a store or atomic does nothing): the kernel
runs on without corrupting memory or faulting, so the CUDA context stays usable and the launch can
raise a Python error. Masked-off lanes are never checked. Which arrays a pointer may come from is
`passes/provenance.py`'s answer: one argument, or several (an `arith.select` of two arguments: the
access must fall in one of them); a pointer of unknown origin (loaded from memory, made from an
integer) is not checked, and a note in the metadata says so.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.types import element_type
from ....passes.provenance import is_pointer, pointer_provenance
from ..llvm_types import GLOBAL_PTR, I32, I64
from ..values import TVal

RECORD_WORDS = 8
_REPORT = "tw_debug_report"


class BoundsChecks:
    """The checks of one kernel being lowered in debug mode: its hidden parameters and its sites."""

    def __init__(self, func):
        self.provenance = pointer_provenance(func)
        self.pointer_params = [a.index for a in func.body.block.args if is_pointer(a)]
        self.sites: list[dict] = []
        self.unchecked: list[str] = []
        self._site_ids: dict[tuple, int] = {}
        self.ranges: dict[int, tuple[ir.Value, ir.Value]] = {}
        self.buffer: ir.Value | None = None
        self._report: ir.Function | None = None
        self._limits: dict[tuple, ir.Value] = {}
        self._pending: list[
            tuple[ir.Value, ir.Value]
        ] = []  # (failed, value) of the op being lowered
        self._pending_site = 0

    def param_types(self) -> list[ir.Type]:
        """The hidden parameters appended to the kernel's own."""
        return [I64, I64] * len(self.pointer_params) + [GLOBAL_PTR]

    def attach(self, lw, hidden: list) -> None:
        """Take the hidden parameters of the LLVM function being built."""
        for i, index in enumerate(self.pointer_params):
            low, high = hidden[2 * i], hidden[2 * i + 1]
            name = lw.func.body.block.args[index].name_hint or f"arg{index}"
            low.name, high.name = f"{name}.first_byte", f"{name}.end_byte"
            self.ranges[index] = (low, high)
        self.buffer = hidden[-1]
        self.buffer.name = "debug.error_buffer"

    def metadata(self) -> dict:
        """What the launcher needs to pass the hidden parameters and to explain a failure."""
        return {
            "pointer_params": self.pointer_params,
            "sites": self.sites,
            "unchecked": self.unchecked,
            "record_words": RECORD_WORDS,
        }

    # -- sites -----------------------------------------------------------------------------------
    def site(self, op, kind: str, **facts) -> int:
        key = (id(op), kind)
        if key not in self._site_ids:
            self._site_ids[key] = len(self.sites)
            self.sites.append({"kind": kind, "loc": _loc_chain(op.loc), **facts})
        return self._site_ids[key]

    def _note_unchecked(self, op, kind: str) -> None:
        loc = op.loc
        where = f"{loc.file}:{loc.line}" if loc.line > 0 else "<unknown location>"
        note = (
            f"{where}: {kind} not bounds-checked: its pointer does not come from a pointer argument "
            "alone (a pointer loaded from memory or made from an integer)"
        )
        if note not in self.unchecked:
            self.unchecked.append(note)

    # -- the checks ------------------------------------------------------------------------------
    def guard(self, lw, op, kind: str, address: ir.Value, mask: ir.Value | None, vec: int):
        """The mask of the access of `vec` elements at `address`, narrowed to in-bounds lanes; emits
        the report of an active lane that is out of bounds (or misaligned)."""
        origin = self.provenance.origin(op.ptr)
        if not origin.checkable:
            self._note_unchecked(op, kind)
            return mask
        pointee = element_type(op.ptr.type).pointee
        elem_bytes = max(1, pointee.bitwidth // 8)
        site = self.site(op, kind, args=sorted(origin.args), pointee=pointee.name, vector=vec)
        b = lw.builder
        addr = b.ptrtoint(address, I64)
        ok = None
        for index in sorted(origin.args):
            low = self.ranges[index][0]
            inside = b.and_(
                b.icmp_unsigned(">=", addr, low),
                b.icmp_unsigned("<=", addr, self._last_start(lw, index, elem_bytes * vec)),
            )
            ok = inside if ok is None else b.or_(ok, inside)
        if elem_bytes > 1 and min(lw.axis.info(op.ptr).divisibility) < elem_bytes:
            # misaligned pointers fault; where axis info proves alignment (an aligned argument plus
            # whole elements, as the vector widths already rely on), the check is left out
            low_bits = b.and_(addr, ir.Constant(I64, elem_bytes - 1))
            ok = b.and_(ok, b.icmp_unsigned("==", low_bits, ir.Constant(I64, 0)))
        bad = b.not_(ok) if mask is None else b.and_(mask, b.not_(ok))
        self._fail_if(bad, site, addr)
        return ok if mask is None else b.and_(mask, ok)

    def _last_start(self, lw, index: int, nbytes: int) -> ir.Value:
        """The last address an access of `nbytes` may start at in argument `index`'s array (computed once,
        in the entry block; `end - nbytes` rather than `addr + nbytes <= end`, which can wrap)."""
        key = (index, nbytes)
        if key not in self._limits:
            high = self.ranges[index][1]
            self._limits[key] = lw.entry_builder.sub(high, ir.Constant(I64, nbytes))
        return self._limits[key]

    def _fail_if(self, condition: ir.Value, site: int, value: ir.Value) -> None:
        self._pending.append((condition, value))
        self._pending_site = site

    def flush(self, lw) -> None:
        """After each op: one branch to the report for all its checks (the first failing value wins),
        rather than a branch per register or vector."""
        if not self._pending:
            return
        b = lw.builder
        failed, value = self._pending[-1]
        for condition, candidate in reversed(self._pending[:-1]):
            value = b.select(condition, candidate, value)
            failed = b.or_(failed, condition)
        self._pending = []
        with b.if_then(failed, likely=False):
            # the program id from the target's hooks (the cpu target's are kernel parameters)
            pid = [lw.hooks.special_register(lw, f"ctaid.{axis}") for axis in "xyz"]
            site = ir.Constant(I32, self._pending_site)
            b.call(self._report_function(lw), [self.buffer, site, value, *pid])

    def _report_function(self, lw) -> ir.Function:
        """`tw_debug_report(buffer, site, value, pid x, y, z)`: the first caller of the launch
        records its failure."""
        if self._report is not None:
            return self._report
        params = [GLOBAL_PTR, I32, I64] + [I32] * 3  # the program id last
        fn = ir.Function(lw.module, ir.FunctionType(ir.VoidType(), params), _REPORT)
        fn.linkage = "internal"
        fn.attributes.add("noinline")  # cold: one call per check, not its body
        buffer, site, value, *pid = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        claim = b.cmpxchg(
            buffer, ir.Constant(I32, 0), ir.Constant(I32, 1), "monotonic", "monotonic"
        )
        with b.if_then(b.extract_value(claim, 1)):
            words = [b.zext(site, I64), value] + [b.zext(ctaid, I64) for ctaid in pid]
            for i, word in enumerate(words, start=1):
                b.store(word, b.gep(buffer, [ir.Constant(I64, i)], source_etype=I64))
        b.ret_void()
        self._report = fn
        return fn

    def lower_assert(self, lw, op) -> None:
        """`tl.device_assert`: a failing element reports its flat index (masked ones passed already)."""
        cond = lw.get(op.condition)
        shape = list(getattr(op.condition.type, "shape", ()))
        site = self.site(op, "assert", message=op.message, shape=shape)
        b = lw.builder
        if not isinstance(cond, TVal):
            self._fail_if(b.not_(_as_bool(b, cond)), site, ir.Constant(I64, 0))
            return
        layout = cond.layout
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        thread_index = lw.thread_offset(layout, lambda v: sum(x * s for x, s in zip(v, strides)))
        for r, coords in enumerate(layout.all_reg_coords()):
            flat = sum(c * s for c, s in zip(coords, strides))
            index = b.zext(b.add(thread_index, ir.Constant(I32, flat)), I64)
            self._fail_if(b.not_(_as_bool(b, cond.vals[r])), site, index)


def _as_bool(b, value: ir.Value) -> ir.Value:
    if isinstance(value.type, ir.IntType) and value.type.width != 1:
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    return value


def _loc_chain(loc) -> list[list]:
    """[[file, line], ...] from the op's own place out through the call sites of inlined callees."""
    chain = []
    while loc is not None:
        chain.append([loc.file, loc.line])
        loc = loc.call_site
    return chain


def check_access(lw, op, kind: str, address: ir.Value, mask: ir.Value | None, vec: int = 1):
    """The lowering rules' hook: `mask` unchanged outside debug mode, else narrowed by `guard`."""
    checks = lw.bounds
    if checks is None:
        return mask
    return checks.guard(lw, op, kind, address, mask, vec)
