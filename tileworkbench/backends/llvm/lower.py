"""The shared lowering driver (NVPTX and cpu): builds one LLVM kernel from `tile-gpu` IR with
`llvmlite.ir`; every target fact comes from the `TargetHooks` it is given (hooks.py).

A tensor becomes a `TVal`: the LLVM values of the elements this thread holds, in the register order of
its `LinearLayout`. An element's coordinates are a per-thread part (computed once, in the entry block,
from the lane and warp ids) plus a per-register constant, so index math stays simple. Ops dispatch
through the tables in `lowering/` (`LOWERINGS` by op class, `ELEMENTWISE` for per-element rules).
"""

from __future__ import annotations

from llvmlite import ir

from ...errors import CompilationError, TileTypeError
from ...ir.ops import tt
from ...ir.ops.ttg import WARP_SIZE, LinearLayout
from ...ir.types import ScalarType, TensorType
from ...ir.values import Value
from ...target import GENERIC, TargetInfo
from .debuginfo import DebugInfo
from .llvm_types import GLOBAL_PTR, I1, I8, I32, llvm_type


def kernel_param_type(t) -> ir.Type:
    """Kernel ABI: pointers are `ptr addrspace(1)` (u64), `i1` travels as an i32, others by type."""
    if isinstance(t, ScalarType) and t.is_bool:
        return I32
    return llvm_type(t)


class Lowering:
    """Lowers one `tt.func` whose tensors all carry encodings (after the GPU passes). Every target
    fact comes from `hooks` (hooks.py; the NVPTX backend passes NVPTX_HOOKS, the cpu backend its
    CpuHooks)."""

    def __init__(
        self,
        func: tt.FuncOp,
        arch: str,
        num_warps: int,
        axis,
        fp_fusion: bool = True,
        debug: bool = False,
        *,
        hooks,
        maxnreg: int | None = None,
        reflect_ftz: bool = True,
        target: TargetInfo = GENERIC,
    ):
        self.func = func
        self.hooks = hooks
        self.target = target  # the facts the GPU passes had (tensor-core forms, stmatrix)
        self.arch = arch  # the backend's hooks read its facts (nvptx: the archs.ARCHS row)
        self.num_warps = num_warps
        self.axis = axis
        # float add/sub/mul may contract into FMA (Triton's enable_fp_fusion, on by default); without
        # `contract` LLVM keeps each op and writes `.rn`, which stops ptxas fusing them too
        self.fp_flags = ("contract",) if fp_fusion else ()
        self.maxnreg = maxnreg  # registers per thread, `.maxnreg` (hooks.annotate); None: ptxas's
        self.reflect_ftz = reflect_ftz  # flush-to-zero approximate math (lowering/math.py)
        self.values: dict[int, object] = {}
        self.smem_bytes = 0  # dynamic shared memory (the launch's)
        self.static_smem_bytes = 0  # static shared arrays (private_shared_memory)
        self.uses_libdevice = False
        self.module = ir.Module(name=func.sym_name)
        self.module.triple = self.hooks.triple
        self.module.data_layout = self.hooks.data_layout
        params = [kernel_param_type(a.type) for a in func.args]
        from .lowering.tma import tensor_map_param_types

        params = tensor_map_param_types(func, params)  # TMA's CUtensorMaps travel by value
        from .lowering.tensormap_device import global_scratch_params

        scratch = global_scratch_params(func)  # in-kernel tensor maps: the launch's global scratch
        # debug mode (lowering/bounds.py): checked accesses and hidden parameters after the kernel's own
        self.bounds = None
        if debug:
            from .lowering.bounds import BoundsChecks

            self.bounds = BoundsChecks(func)
        hidden = self.bounds.param_types() if self.bounds is not None else []
        self.function = self.hooks.declare_kernel(
            self, self.module, func.sym_name, params + scratch + hidden
        )
        self.global_scratch = self.function.args[len(params)] if scratch else None
        self.entry = self.function.append_basic_block("entry")
        self.entry_builder = ir.IRBuilder(self.entry)
        self.builder = ir.IRBuilder(self.function.append_basic_block("body"))
        self.debug = DebugInfo(self.module, self.function, func.loc)
        self.entry_builder.debug_metadata = self.debug.default
        self._cache: dict[object, object] = {}
        self._smem = None
        self._layout_cache: dict[tuple, LinearLayout] = {}
        self.current_op = None
        self._shared_used = False
        self.users: dict[int, list] = {}  # value id -> the ops that use it
        for op in func.walk():
            for v in op.operands:
                self.users.setdefault(id(v), []).append(op)
        # ops a rule lowered out of block order (a loop's wgmma drain, lowering/control.py)
        self.lowered_ahead: set = set()
        self.loop_depth = 0  # > 0 while lowering a loop body: shared memory is reused per iteration
        self.alloc_offsets: dict[
            int, int
        ] = {}  # local_alloc -> its byte offset (lowering/shared.py)
        # the shared-memory plan's records (inventory.py): (local_alloc, offset, bytes), the ops that
        # use the scratch, and (op, bytes) of each static array
        self.alloc_regions: list[tuple] = []
        self.scratch_users: list = []
        self.static_uses: list[tuple] = []
        self.smem_base = 0  # scratch shared memory starts after the local_alloc regions
        # warp specialization (lowering/warp_specialize.py): the warps added for the producer, the
        # thread that issues TMA copies, the threads a barrier waits for (None: the whole block)
        self.producer_warps = 0
        self.first_thread = 0
        self.barrier_threads: int | None = None
        if self.bounds is not None:
            first = len(params) + len(scratch)
            self.bounds.attach(self, self.function.args[first : first + len(hidden)])

    # -- driver -----------------------------------------------------------------------------------
    def run(self) -> ir.Module:
        from .lowering.shared import assign_shared_offsets

        assign_shared_offsets(self, self.func)
        for arg, param in zip(self.func.args, self.function.args):
            param.name = arg.name_hint or f"arg{arg.index}"
            if isinstance(arg.type, ScalarType) and arg.type.is_bool:
                self.values[id(arg)] = self.entry_builder.icmp_unsigned(
                    "!=", param, ir.Constant(I32, 0)
                )
            else:
                self.values[id(arg)] = param
        self.lower_block(self.func.body.block)
        if not self.builder.block.is_terminated:
            self.builder.ret_void()
        from .lowering.tma import finish_tensor_maps

        finish_tensor_maps(self)  # byval maps; the mbarriers' prologue (may move the entry builder)
        self.entry_builder.branch(self.function.basic_blocks[1])
        self.hooks.annotate(self)
        return self.module

    def lower_block(self, block) -> list:
        """Lower every op of `block` except its terminator; return the terminator's lowered operands."""
        for op in block.ops:
            if op.is_terminator:
                return [self.get(v) for v in op.operands]
            if op not in self.lowered_ahead:
                self.lower_op(op)
        return []

    def lower_op(self, op) -> None:
        """Lower one op at the builder's position."""
        from .lowering import LOWERINGS

        self.current_op = op
        self.builder.debug_metadata = self.debug.location(op.loc)
        rule = LOWERINGS.get(type(op))
        own = self.hooks.own_rule(op)
        if rule is None and own is None:
            raise self.error(op, f"the NVPTX back end cannot lower `{op.name}` yet")
        try:
            if own is None or own(self, op) is NotImplemented:
                rule(self, op)
        except TileTypeError as exc:  # a type the target lacks (llvm_types): give it the op's place
            error = self.error(op, str(exc))
            error.hint = exc.hint
            raise error from None
        if self.bounds is not None:
            self.bounds.flush(self)  # one report branch per checked op

    def error(self, op, message: str) -> CompilationError:
        where = f"{op.loc}: " if op is not None and op.loc.line > 0 else ""
        return CompilationError(f"{where}{message}", loc=op.loc if op is not None else None)

    # -- values -----------------------------------------------------------------------------------
    def get(self, v: Value):
        try:
            return self.values[id(v)]
        except KeyError:
            raise self.error(self.current_op, f"internal: value {v!r} was not lowered") from None

    def set(self, v: Value, x) -> None:
        self.values[id(v)] = x

    def layout(self, v: Value) -> LinearLayout:
        """The linear layout of tensor value `v` (its type's encoding on its shape)."""
        t = v.type
        if not isinstance(t, TensorType) or t.encoding is None:
            raise self.error(self.current_op, f"internal: {v!r} has no layout encoding")
        key = (t.encoding, t.shape)
        if key not in self._layout_cache:
            self._layout_cache[key] = t.encoding.linear(t.shape)
        return self._layout_cache[key]

    # -- thread ids and per-thread coordinate parts, computed once in the entry block --------------
    def sreg(self, name: str) -> ir.Value:
        key = ("sreg", name)
        if key not in self._cache:
            self._cache[key] = self.hooks.special_register(self, name)
        return self._cache[key]

    def lane_and_warp(self) -> tuple[ir.Value, ir.Value]:
        key = ("lane_warp",)
        if key not in self._cache:
            tid = self.sreg("tid.x")
            b = self.entry_builder
            self._cache[key] = (
                b.and_(tid, ir.Constant(I32, WARP_SIZE - 1)),
                b.lshr(tid, ir.Constant(I32, 5)),
            )
        return self._cache[key]

    def thread_offset(self, layout: LinearLayout, weight) -> ir.Value:
        """sum over lane/warp bits of bit * weight(basis): a linear function of this thread's elements'
        coordinates (one coordinate, or a flat index). tid.x is warp * 32 + lane, so the lane bits and
        then the warp bits are tid.x's bits: consecutive bits with doubling weights, across the lane/warp
        boundary too, fold into one shift-and-mask of tid.x, and a run up to the top bit needs no mask
        (`.reqntid` bounds tid.x). A row-per-thread layout is then `tid.x * 8`, where lane and warp
        terms took four instructions on the path to the first load."""
        weights = tuple(weight(b) for b in layout.lanes) + tuple(weight(b) for b in layout.warps)
        key = ("offset", weights)
        if key in self._cache:
            return self._cache[key]
        tid = self.sreg("tid.x")
        thread_bits = (WARP_SIZE * self.num_warps).bit_length() - 1
        assert len(layout.lanes) == 5 and len(layout.warps) == thread_bits - 5, layout
        b = self.entry_builder
        total = None
        for start, length, w in _runs(weights):
            term = b.lshr(tid, ir.Constant(I32, start)) if start else tid
            if start + length < thread_bits:
                term = b.and_(term, ir.Constant(I32, (1 << length) - 1))
            term = b.mul(term, ir.Constant(I32, w)) if w != 1 else term
            total = term if total is None else b.add(total, term)
        total = total if total is not None else ir.Constant(I32, 0)
        self._cache[key] = total
        return total

    def owner_predicate(self, layout: LinearLayout | None) -> ir.Value:
        """True in the one thread that owns each element (lanes/warps that merely duplicate get
        false): atomics, histograms and prints must not repeat. A scalar is owned by thread 0."""
        lane, warp = self.lane_and_warp()
        if layout is None:
            lane_mask, warp_mask = WARP_SIZE - 1, self.num_warps - 1
        else:
            lane_mask = sum(1 << j for j, v in enumerate(layout.lanes) if not any(v))
            warp_mask = sum(1 << j for j, v in enumerate(layout.warps) if not any(v))
        key = ("owner", lane_mask, warp_mask)
        if key not in self._cache:
            b = self.entry_builder
            pred = ir.Constant(I1, 1)
            for src, mask in ((lane, lane_mask), (warp, warp_mask)):
                if mask:
                    bits = b.and_(src, ir.Constant(I32, mask))
                    pred = b.and_(pred, b.icmp_unsigned("==", bits, ir.Constant(I32, 0)))
            self._cache[key] = pred
        return self._cache[key]

    # -- helpers shared by the lowering rules ------------------------------------------------------
    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def call_intrinsic(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.builder.call(self.intrinsic(name, ret, [a.type for a in args]), args)

    def asm(
        self,
        text: str,
        constraints: str,
        ret: ir.Type,
        args: list[ir.Value],
        side_effect: bool = False,
    ) -> ir.Value:
        return self.hooks.inline_asm(self, text, constraints, ret, args, side_effect)

    def libdevice(self, symbol: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.hooks.libdevice(self, symbol, ret, args)

    def shared_memory(self, nbytes: int) -> ir.Value:
        """Scratch in the dynamic shared memory, at least `nbytes` long for this use. Every use starts
        at the same offset (after the `local_alloc` tiles) and is fenced by barriers, so the size is
        the largest use."""
        self.smem_bytes = max(self.smem_bytes, self.smem_base + (nbytes + 15) // 16 * 16)
        self.scratch_users.append(self.current_op)
        base = self.shared_base()
        if not self.smem_base:
            return base
        key = ("scratch",)
        if key not in self._cache:
            self._cache[key] = self.entry_builder.gep(
                base, [ir.Constant(I32, self.smem_base)], source_etype=I8
            )
        return self._cache[key]

    def shared_base(self) -> ir.Value:
        """The dynamic shared-memory array (`extern .shared`), offset 0."""
        if self._smem is None:
            self._smem = self.hooks.shared_memory(self)
        return self._smem

    def private_shared_memory(self, nbytes: int) -> ir.Value:
        """A static shared array of its own for one use outside loops (a reduction's partials): no
        other use overlaps it, so writing it needs no barrier after the previous use of shared memory
        (Triton's reductions all start at offset 0 and pay that barrier)."""
        offset = self.static_smem_bytes  # unique per array: the static bytes before it
        self.static_smem_bytes += (max(nbytes, 1) + 15) // 16 * 16
        self.static_uses.append((self.current_op, (max(nbytes, 1) + 15) // 16 * 16))
        return self.hooks.private_shared_memory(self, offset, nbytes)

    def barrier(self) -> None:
        self.hooks.barrier(self)

    def barrier_before_shared(self, always: bool = False) -> None:
        """The barrier that keeps a new use of shared memory from overwriting data other threads may
        still read from the last use; not needed before the first use outside loops, unless
        `always` (the use lies over tiles that other threads used, e.g. a pipeline's rings)."""
        if self._shared_used or self.loop_depth or always:
            self.barrier()
        self._shared_used = True

    def smem_ptr(self, base: ir.Value, byte_offset: ir.Value) -> ir.Value:
        return self.builder.gep(base, [byte_offset], source_etype=I8)

    def shuffle_xor(self, value: ir.Value, lane_mask: int) -> ir.Value:
        """`shfl.sync.bfly` of any scalar type (split into 32-bit pieces where wider)."""
        b = self.builder
        t = value.type
        bits = _bits(t)
        if bits == 64:
            as_int = (
                b.ptrtoint(value, ir.IntType(64))
                if t == GLOBAL_PTR
                else b.bitcast(value, ir.IntType(64))
            )
            lo = b.trunc(as_int, I32)
            hi = b.trunc(b.lshr(as_int, ir.Constant(ir.IntType(64), 32)), I32)
            lo, hi = self._shfl(lo, lane_mask), self._shfl(hi, lane_mask)
            joined = b.or_(
                b.zext(lo, ir.IntType(64)),
                b.shl(b.zext(hi, ir.IntType(64)), ir.Constant(ir.IntType(64), 32)),
            )
            return b.inttoptr(joined, t) if t == GLOBAL_PTR else b.bitcast(joined, t)
        as_int = value if isinstance(t, ir.IntType) else b.bitcast(value, ir.IntType(bits))
        if bits < 32:
            as_int = b.zext(as_int, I32)
        out = self._shfl(as_int, lane_mask)
        if bits < 32:
            out = b.trunc(out, ir.IntType(bits))
        return out if isinstance(t, ir.IntType) else b.bitcast(out, t)

    def _shfl(self, value: ir.Value, lane_mask: int) -> ir.Value:
        return self.hooks.shuffle_xor_i32(self, value, lane_mask)


def llvm_string(text: str) -> str:
    """`text` escaped for an LLVM IR string (llvmlite prints it as given): a newline in the asm of a
    multi-line PTX block would otherwise split the IR line."""
    for raw, escaped in (("\\", "\\5C"), ('"', "\\22"), ("\n", "\\0A"), ("\t", "\\09")):
        text = text.replace(raw, escaped)
    return text


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return t.width
    if t == GLOBAL_PTR or isinstance(t, ir.DoubleType):
        return 64
    if isinstance(t, ir.FloatType):
        return 32
    return 16


def _runs(weights: tuple[int, ...]):
    """(start bit, length, weight of the first) for runs of nonzero weights that double bit by bit."""
    out = []
    j = 0
    while j < len(weights):
        if weights[j] == 0:
            j += 1
            continue
        start = j
        while j + 1 < len(weights) and weights[j + 1] == 2 * weights[j]:
            j += 1
        out.append((start, j - start + 1, weights[start]))
        j += 1
    return out
