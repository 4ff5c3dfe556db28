"""Runs an NVPTX kernel's LLVM module (before O3) on the CPU with the GPU's threads, to test what only
many threads show where no GPU is: shuffles across lanes, barriers, shared-memory exchanges, warps'
atomics, and the tensor-core and copy instructions through their stand-ins (ldmatrix and mma.sync:
mma_standin.py; wgmma: wgmma_standin.py; cp.async and TMA: tma_standin.py). Kernels' results on the
host are the `cpu` target's job (backends/cpu/, one thread per program, no NVPTX instructions); this
stays for the GPU's multi-threaded semantics (test_nvptx_emulated.py and the tensor-core tests), and
shares the cpu target's host JIT setup (backends/cpu/codegen.py).

The module is re-targeted to the host and JIT-compiled by llvmlite; the NVVM intrinsics become host
callbacks: thread and block ids read thread-local values, `barrier0` is a `threading.Barrier`, and
`shfl.sync.bfly` exchanges through a shared array between two barriers. Every GPU thread of a program
is a host thread (ctypes releases the GIL while native code runs). Shared memory is one host array per
program. The inline PTX the back end emits (approximate math, `div.full`, predicated atomics) is
replaced by exact host equivalents; kernels with other inline PTX (user asm) are refused. The module is
lowered for sm_80, so fp8 conversions take the software path. Slow (a thread per GPU thread): for small
kernels in tests only.

With `debug=True` the kernel is lowered in debug mode (bounds checks, device asserts): `launch` passes
the hidden arguments (each array's byte range, an error buffer) and afterwards raises what the kernel
recorded, through the launcher's own `DebugChecks`, as a GPU launch does.
"""

from __future__ import annotations

import ctypes
import re
import threading

import numpy as np

from tileworkbench.backends.cpu import codegen
from tileworkbench.backends.llvm.lower import Lowering
from tileworkbench.backends.nvptx.hooks import NVPTX_HOOKS
from tileworkbench.backends.llvm.lowering.tensormap_device import scratch_slots
from tileworkbench.passes.axis_info import axis_info
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir
from tileworkbench.runtime.debug_checks import DebugChecks
from tileworkbench.target import NO_FALLBACK, TargetInfo

from mma_standin import MMA_FORMS as _MMA_FORMS
from mma_standin import mma_body as _mma_body
from mma_standin import ldmatrix_rows, mma_fragment, replace_async_intrinsics, stmatrix_writes
from wgmma_standin import FORMS as WGMMA_FORMS
from wgmma_standin import MAX_WORDS as MAX_WGMMA_WORDS
from wgmma_standin import asm_body as wgmma_asm_body
from wgmma_standin import InFlight, is_wgmma_asm, warp_group_mma
from tma_standin import (TENSORMAP_DECLARATIONS, TMAStandIn, is_tensormap_asm, replace_tma_intrinsics,
                         tensormap_asm_body)

_SREG = ctypes.CFUNCTYPE(ctypes.c_int32)
_VOID = ctypes.CFUNCTYPE(None)
_SHFL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                         ctypes.c_int32)
_MMA = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_WAIT = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)
_CP_ASYNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)
_WARP_SYNC = ctypes.CFUNCTYPE(None, ctypes.c_int32)
_BARRIER_COUNT = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)


class _Block:
    """The state one program's threads share."""

    def __init__(self, threads: int, ctaid, nctaid):
        self.barrier = threading.Barrier(threads)
        self.warp_barriers = [threading.Barrier(min(32, threads)) for _ in range((threads + 31) // 32)]
        # a warp group's exchanges (wgmma), and `bar.sync id, count` (a warp-specialized kernel's
        # consumers), made on first use
        self.group_barriers = [threading.Barrier(min(128, threads))
                               for _ in range((threads + 127) // 128)]
        self.named_barriers: dict[int, threading.Barrier] = {}
        self.lock = threading.Lock()
        self.slots = np.zeros(threads, dtype=np.int32)
        self.mma_slots = np.zeros((threads, 14), dtype=np.uint32)
        self.wgmma_slots = np.zeros((threads, MAX_WGMMA_WORDS), dtype=np.uint32)
        self.wgmma_out = np.zeros((threads, MAX_WGMMA_WORDS), dtype=np.uint32)
        self.addresses = np.zeros(threads, dtype=np.uint64)
        self.ctaid, self.nctaid = ctaid, nctaid


def emulated_target(num_warps: int, tensor_cores: bool = False, num_stages: int = 1,
                    wgmma: bool = False, shared_limit: int | None = None, tma: bool = False,
                    tma_fallback=NO_FALLBACK) -> TargetInfo:
    """The target the emulated kernel's GPU passes see: dots on mma.sync (sm_89: fp8 too, run by
    the warp-level stand-in below) or on Hopper's wgmma (sm_90a, run by wgmma_standin.py), with
    cp.async pipelining of `num_stages`; no shared-memory room known but wgmma's (an H200's block
    unless `shared_limit`), and no per-SM figure (a spare ring slot costs no resident block).
    `tma`: descriptors that fit take TMA, host maps and maps built in the kernel alike (as on
    sm_90a), except those `tma_fallback` keeps on pointers."""
    tma_facts = {"tma": tma, "tensormap_create": tma, "tma_fallback": tma_fallback}
    if wgmma:
        return TargetInfo("sm_90a", 90, "wgmma", fp8_mma=True, stmatrix=True,
                          shared_per_block=shared_limit if shared_limit is not None else 232448,
                          num_warps=num_warps, num_stages=num_stages, **tma_facts)
    if tensor_cores:
        return TargetInfo("sm_89", 89, "mma.sync", fp8_mma=True, num_warps=num_warps,
                          num_stages=num_stages, **tma_facts)
    return TargetInfo("sm_80", 80, "none", num_warps=num_warps, num_stages=num_stages, **tma_facts)


class Emulator:
    def __init__(self, fn, signature: dict, constexprs: dict, num_warps: int = 4,
                 tensor_cores: bool = False, num_stages: int = 1, debug: bool = False,
                 wgmma: bool = False, shared_limit: int | None = None, tma: bool = False,
                 reflect_ftz: bool = True, tma_fallback=None):
        # reflect_ftz: exp2 in its flush-to-zero form (Triton's enable_reflect_ftz)
        # tma: host descriptors that fit take tensor maps (host maps: tma_standin.host_tensor_map),
        # and descriptors made in the kernel that fit build theirs (as on sm_90a); tma_fallback: the
        # descriptors the compiler kept on pointers for shared memory (a compiled kernel's choice,
        # `TMAFallback`), which take no tensor map
        func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs, debug=debug)[0]
        self._setup(func, num_warps, tensor_cores, num_stages, debug, wgmma, shared_limit,
                    reflect_ftz, tma, tma_fallback or NO_FALLBACK)

    @classmethod
    def from_func(cls, func, num_warps: int = 4, tensor_cores: bool = False,
                  num_stages: int = 1, debug: bool = False) -> Emulator:
        """An emulator of `tile-opt` IR `func` (changed in place by the GPU passes)."""
        emulator = cls.__new__(cls)
        emulator._setup(func, num_warps, tensor_cores, num_stages, debug)
        return emulator

    def _setup(self, func, num_warps: int, tensor_cores: bool = False, num_stages: int = 1,
               debug: bool = False, wgmma: bool = False, shared_limit: int | None = None,
               reflect_ftz: bool = True, tma: bool = False, tma_fallback=NO_FALLBACK) -> None:
        from tileworkbench.backends.llvm.tile_gpu import check_shapes

        check_shapes(func)
        target = emulated_target(num_warps, tensor_cores, num_stages, wgmma, shared_limit, tma,
                                 tma_fallback)
        run_passes(func, TILE_GPU, target=target)
        lowering = Lowering(func, "sm_80", num_warps, axis_info(func), debug=debug,
                            hooks=NVPTX_HOOKS, reflect_ftz=reflect_ftz, target=target)
        text = _replace_asm(str(lowering.run()))
        self.text = text
        self.threads = 32 * (num_warps + lowering.producer_warps)
        self.kinds = [_kind(a.type) for a in func.args]
        # in-kernel tensor maps: the launch's global scratch, a hidden parameter (runtime/allocation.py)
        self.scratch_bytes = scratch_slots(func)[1]
        if self.scratch_bytes:
            self.kinds.append("ptr")
        self.checks = None
        if debug:
            names = [a.name_hint or f"arg{a.index}" for a in func.args]
            self.checks = DebugChecks(lowering.bounds.metadata(), func.sym_name, names)
            self.kinds += ["u64"] * (2 * len(self.checks.pointer_params)) + ["ptr"]
        self.smem_size = max(16, lowering.smem_bytes)
        self._local = threading.local()
        self._tma = TMAStandIn()
        self._callbacks = self._make_callbacks() | self._tma.callbacks()
        self._engine, self._kernel = self._jit(text, func.sym_name)

    def _make_callbacks(self) -> dict[str, object]:
        local = self._local

        def sreg(name, axis):
            def read():
                if name == "tid":
                    return local.tid if axis == 0 else 0
                return getattr(local.block, name)[axis]
            return _SREG(read)

        def barrier():
            local.block.barrier.wait()

        def barrier_count(ident, count):
            block = local.block
            with block.lock:
                named = block.named_barriers.setdefault(ident, threading.Barrier(count))
            named.wait()

        def warp_sync(mask):
            local.block.warp_barriers[local.tid // 32].wait()

        # exchanges among a warp's lanes (a warp group's for wgmma) meet at that warp's barrier: a
        # warp-specialized kernel's producer warps are elsewhere
        def shfl(mask, value, lane_mask, clamp):
            block = local.block
            block.slots[local.tid] = value
            block.warp_barriers[local.tid // 32].wait()
            out = int(block.slots[local.tid ^ lane_mask])
            block.warp_barriers[local.tid // 32].wait()
            return out

        def shfl_idx(mask, value, src_lane, clamp):
            block = local.block
            block.slots[local.tid] = value
            block.warp_barriers[local.tid // 32].wait()
            out = int(block.slots[local.tid // 32 * 32 + src_lane])
            block.warp_barriers[local.tid // 32].wait()
            return out

        def mma(code, inputs, outputs):
            block = local.block
            slots = block.mma_slots
            n_in, n_out = _MMA_FORMS[code][1:3]
            slots[local.tid, :n_in] = np.ctypeslib.as_array(ctypes.cast(inputs, ctypes.POINTER(
                ctypes.c_uint32)), (n_in,))
            block.warp_barriers[local.tid // 32].wait()
            warp = local.tid // 32
            out = mma_fragment(_MMA_FORMS[code][0], slots[warp * 32:warp * 32 + 32], local.tid % 32)
            np.ctypeslib.as_array(ctypes.cast(outputs, ctypes.POINTER(ctypes.c_uint32)),
                                  (n_out,))[:] = out
            block.warp_barriers[local.tid // 32].wait()

        def ldmatrix(code, address, outputs):
            block = local.block
            block.addresses[local.tid] = address
            block.warp_barriers[local.tid // 32].wait()
            warp = local.tid // 32
            count, trans = code & 7, bool(code & 8)

            def read(at):
                return ctypes.c_uint16.from_address(at).value
            out = ldmatrix_rows(block.addresses[warp * 32:warp * 32 + 32], local.tid % 32, count,
                                trans, read)
            np.ctypeslib.as_array(ctypes.cast(outputs, ctypes.POINTER(ctypes.c_uint32)),
                                  (count,))[:] = out
            block.warp_barriers[local.tid // 32].wait()

        def stmatrix(count, address, inputs):
            block = local.block
            block.addresses[local.tid] = address
            block.warp_barriers[local.tid // 32].wait()
            warp = local.tid // 32
            words = np.ctypeslib.as_array(ctypes.cast(inputs, ctypes.POINTER(ctypes.c_uint32)),
                                          (count,))
            for at, word in stmatrix_writes(block.addresses[warp * 32:warp * 32 + 32],
                                            local.tid % 32, words):
                ctypes.c_uint32.from_address(at).value = word
            block.warp_barriers[local.tid // 32].wait()

        def in_flight() -> InFlight:
            if getattr(local, "in_flight", None) is None or local.in_flight_block is not local.block:
                local.in_flight, local.in_flight_block = InFlight(local.tid), local.block
            return local.in_flight

        def wgmma(code, inputs, outputs):
            block = local.block
            form = WGMMA_FORMS[code]
            count = form[0] // 4 if form[2] == "f16" else form[0] // 2
            words = np.ctypeslib.as_array(ctypes.cast(inputs, ctypes.POINTER(ctypes.c_uint32)),
                                          (MAX_WGMMA_WORDS,))
            in_flight().chain(words[5:5 + count])
            block.wgmma_slots[local.tid] = words
            block.group_barriers[local.tid // 128].wait()
            group = local.tid // 128 * 128
            if local.tid == group:
                memory = np.ctypeslib.as_array(
                    ctypes.cast(self._smem_address, ctypes.POINTER(ctypes.c_uint8)), (self.smem_size,))
                block.wgmma_out[group:group + 128, :count] = warp_group_mma(
                    form, block.wgmma_slots[group:group + 128], memory, self._smem_address)
            block.group_barriers[local.tid // 128].wait()
            np.ctypeslib.as_array(ctypes.cast(outputs, ctypes.POINTER(ctypes.c_uint32)), (count,))[:] = \
                in_flight().hand_out(block.wgmma_out[local.tid, :count].copy(), form[2])
            block.group_barriers[local.tid // 128].wait()

        def wgmma_commit():
            in_flight().commit()

        def wgmma_wait(pendings, words, count):
            in_flight().wait(pendings, np.ctypeslib.as_array(
                ctypes.cast(words, ctypes.POINTER(ctypes.c_uint32)), (count,)))

        def cp_async(dst, src, size, src_size):
            ctypes.memset(dst, 0, size)
            if src_size:
                ctypes.memmove(dst, src, src_size)

        def assert_fail(*_):
            raise AssertionError("device_assert failed in the emulated kernel")

        callbacks = {"emu_barrier": _VOID(barrier), "emu_warp_sync": _WARP_SYNC(warp_sync),
                     "emu_barrier_count": _BARRIER_COUNT(barrier_count),
                     "emu_shfl": _SHFL(shfl), "emu_mma": _MMA(mma),
                     "emu_wgmma": _MMA(wgmma), "emu_wgmma_commit": _VOID(wgmma_commit),
                     "emu_wgmma_wait": _WAIT(wgmma_wait),
                     "emu_ldmatrix": _MMA(ldmatrix), "emu_cp_async": _CP_ASYNC(cp_async),
                     "vprintf": _PRINTF(lambda fmt, args: 0), "__assertfail": _ASSERT(assert_fail)}
        callbacks["emu_stmatrix"] = _MMA(stmatrix)
        callbacks["emu_shfl_idx"] = _SHFL(shfl_idx)
        for name in ("tid", "ctaid", "nctaid"):
            for axis, letter in enumerate("xyz"):
                callbacks[f"emu_sreg_{name}_{letter}"] = sreg(name, axis)
        return callbacks

    def _jit(self, text: str, name: str):
        # the host machine the cpu target JIT-compiles for (backends/cpu/codegen.py)
        llvm = codegen.binding()
        target = codegen.new_host_machine()
        triple = llvm.get_process_triple()
        text = re.sub(r'target triple = ".*"', f'target triple = "{triple}"', text)
        text = re.sub(r'target datalayout = ".*"', f'target datalayout = "{target.target_data}"', text)
        text = text.replace("define ptx_kernel void", "define void")
        text = re.sub(r'@"llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.(\w)"', r'@"emu_sreg_\1_\2"', text)
        text = text.replace('@"llvm.nvvm.barrier0"', '@"emu_barrier"')
        text = text.replace('@"llvm.nvvm.barrier.cta.sync.aligned.count"', '@"emu_barrier_count"')
        text = text.replace('@"llvm.nvvm.bar.warp.sync"', '@"emu_warp_sync"')
        text = text.replace('@"llvm.nvvm.shfl.sync.bfly.i32"', '@"emu_shfl"')
        text = text.replace('@"llvm.nvvm.shfl.sync.idx.i32"', '@"emu_shfl_idx"')
        # the shared memory is ours, aligned as a GPU's shared window (2^18 bytes): wgmma's descriptors
        # hold address bits 4-17 and its swizzle reads bits 7-9
        self._smem = np.zeros(self.smem_size + _WINDOW, dtype=np.uint8)
        self._smem_address = (self._smem.ctypes.data + _WINDOW - 1) // _WINDOW * _WINDOW
        llvm.add_symbol("global_smem", self._smem_address)
        for symbol, callback in self._callbacks.items():
            llvm.add_symbol(symbol, ctypes.cast(callback, ctypes.c_void_p).value)
        if re.search(r"@\"?llvm\.\w+\.(f16|bf16)\"?\(", text):
            raise ValueError("half-precision intrinsics need the GPU (no host library has them)")
        for symbol in re.findall(r'^declare [^@]*@"?([\w.]+)"?\(', text, flags=re.MULTILINE):
            if not symbol.startswith("llvm.") and llvm.address_of_symbol(symbol) is None:
                raise ValueError(f"{symbol} has no host implementation")
        module = llvm.parse_assembly(text)
        module.verify()
        engine = llvm.create_mcjit_compiler(module, target)
        engine.finalize_object()
        argtypes = [ctypes.c_void_p if k == "ptr" else _ctype(k) for k in self.kinds]
        kernel = ctypes.CFUNCTYPE(None, *argtypes)(engine.get_function_address(name))
        return engine, kernel

    def launch(self, grid, *args) -> None:
        """Run the kernel over `grid` on NumPy arrays (pointers) and Python/NumPy scalars."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        args = [a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args]
        values = [a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else
                  (int(a) if self.kinds[i] != "fp32" and self.kinds[i] != "fp64" else float(a))
                  for i, a in enumerate(args)]
        record = None
        if self.scratch_bytes:  # the allocator's part: 128-byte aligned, poisoned
            count = grid[0] * grid[1] * grid[2] * self.scratch_bytes
            self.scratch = np.full(count + 128, 0xA5, np.uint8)
            values.append((self.scratch.ctypes.data + 127) // 128 * 128)
        if self.checks is not None:
            record = np.zeros(self.checks.words, np.uint64)
            values += self.checks.ranges(args) + [record.ctypes.data]
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    self._program(_Block(self.threads, (x, y, z), grid), values)
        self._tma.check()  # a TMA copy the GPU would have trapped on
        if record is not None and record[0]:
            raise self.checks.error(record, args)

    def _program(self, block: _Block, values) -> None:
        errors = []

        def body(tid):
            self._local.tid, self._local.block = tid, block
            try:
                self._kernel(*values)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                for barrier in [block.barrier, *block.warp_barriers, *block.group_barriers,
                                *block.named_barriers.values()]:
                    barrier.abort()
        threads = [threading.Thread(target=body, args=(t,)) for t in range(self.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


_WINDOW = 1 << 18  # a shared-memory window's address bits
_PRINTF = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_ASSERT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                           ctypes.c_int64)
_CTYPES = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
           "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "i1": ctypes.c_int32, "f32": ctypes.c_float, "f64": ctypes.c_double,
           "fp32": ctypes.c_float, "fp64": ctypes.c_double}


def _kind(t) -> str:
    from tileworkbench.ir.types import PointerType

    if isinstance(t, PointerType):
        return "ptr"
    if t.name in ("f16", "bf16", "f8e4nv", "f8e5"):
        raise ValueError(f"the CPU emulator cannot pass a {t.name} scalar argument")
    return {"f32": "fp32", "f64": "fp64"}.get(t.name, t.name)


def _ctype(kind: str):
    return _CTYPES[kind]


# -- inline PTX -> host LLVM IR ------------------------------------------------------------------
_ASM_CALL = re.compile(r'call (\{[^}]*\}|\S+) asm\s+(?:sideeffect\s+)?"([^"]*)", "([^"]*)"\((.*)\)(, !dbg !\d+)?$')
_UNARY = {"ex2.approx.f32": "llvm.exp2.f32", "lg2.approx.f32": "llvm.log2.f32",
          "sqrt.approx.f32": "llvm.sqrt.f32", "sin.approx.f32": "llvm.sin.f32",
          "cos.approx.f32": "llvm.cos.f32"}
_RMW = {"add": "add", "max.s": "max", "min.s": "min", "max.u": "umax", "min.u": "umin", "and": "and",
        "or": "or", "xor": "xor", "exch": "xchg"}


def _replace_asm(text: str) -> str:
    """Every inline-asm call of the back end's own PTX becomes a call of a host function."""
    bodies: dict[tuple, str] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _ASM_CALL.search(line)
        if not m:
            continue
        ret, asm, _, args, dbg = m.groups()
        arg_types = [a.rsplit(" ", 1)[0].strip() for a in _split_args(args)]
        key = (ret, asm, tuple(arg_types))
        if key not in bodies:
            bodies[key] = f"emu_asm_{len(bodies)}"
        call = f'call {ret} @"{bodies[key]}"({args}){dbg or ""}'
        lines[i] = line[:m.start()] + call
    defs = [_asm_function(name, *key) for key, name in bodies.items()]
    text, async_defs = replace_async_intrinsics("\n".join(lines))
    text, tma_defs = replace_tma_intrinsics(text)
    lines = text.split("\n")
    defs += async_defs + tma_defs
    # libdevice's __nv_<name> is the C library's <name> (expf, erf, ...), which the host JIT finds
    lines = [re.sub(r'@"?__nv_(\w+)"?', r'@"\1"', line) for line in lines]
    for name, ty in (("rsqrt", "double"), ("rsqrtf", "float")):  # not in the C library
        if any(f'@"{name}"(' in line for line in lines):
            lines = [line for line in lines if not line.startswith(f'declare {ty} @"{name}"')]
            defs.append(f'define internal {ty} @"{name}"({ty} %x) {{\n'
                        f"  %s = call {ty} @llvm.sqrt.{'f64' if ty == 'double' else 'f32'}({ty} %x)\n"
                        f"  %r = fdiv {ty} 1.0, %s\n  ret {ty} %r\n}}")
            if ty == "double" and "llvm.sqrt.f64" not in text:
                defs.append("declare double @llvm.sqrt.f64(double)")
    defs.append(_SOFT_FLOAT)
    if not re.search(r"declare double @\"?llvm\.fabs\.f64", text):
        defs.append("declare double @llvm.fabs.f64(double)")
    declared = set(re.findall(r'declare \S+ @"?([\w.]+)"?\(', text))
    needed = {"llvm.exp2.f32", "llvm.log2.f32", "llvm.sqrt.f32", "llvm.sin.f32", "llvm.cos.f32"}
    decls = [f"declare float @{n}(float)" for n in sorted(needed - declared)]
    if any("@emu_mma" in d for d in defs):
        decls.append("declare void @emu_mma(i32, ptr, ptr)")
    if any("@emu_wgmma(" in d for d in defs):
        decls.append("declare void @emu_wgmma(i32, ptr, ptr)")
    if any("@emu_wgmma_commit" in d for d in defs):
        decls.append("declare void @emu_wgmma_commit()")
    if any("@emu_tensormap_" in d for d in defs):
        decls += TENSORMAP_DECLARATIONS
    if any("@emu_wgmma_wait" in d for d in defs):
        decls.append("declare void @emu_wgmma_wait(i32, ptr, i32)")
    return "\n".join(lines + decls + defs)


# The conversions the host back end calls as library functions (compiler-rt's, absent from this
# process, so a call would jump to address 0): bf16 from float by round-to-nearest-even on the bits, and
# from double through a float rounded to odd, which makes the second rounding exact (24 >= 2 * 8 + 2
# bits; 24 >= 2 * 11 + 2 for half, whose float -> half step is F16C's vcvtps2ph).
_SOFT_FLOAT = """
define bfloat @__truncsfbf2(float %x) {
  %b = bitcast float %x to i32
  %hi = lshr i32 %b, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %b, %bias
  %rounded = lshr i32 %sum, 16
  %quiet = or i32 %hi, 64
  %nan = fcmp uno float %x, %x
  %bits = select i1 %nan, i32 %quiet, i32 %rounded
  %short = trunc i32 %bits to i16
  %r = bitcast i16 %short to bfloat
  ret bfloat %r
}
define internal float @emu_round_to_odd(double %x) {
  %f = fptrunc double %x to float
  %back = fpext float %f to double
  %fa = call double @llvm.fabs.f64(double %back)
  %xa = call double @llvm.fabs.f64(double %x)
  %over = fcmp ogt double %fa, %xa
  %b = bitcast float %f to i32
  %down = sub i32 %b, 1
  %t = select i1 %over, i32 %down, i32 %b
  %tf = bitcast i32 %t to float
  %tback = fpext float %tf to double
  %inexact = fcmp une double %tback, %x
  %odd = or i32 %t, 1
  %bits = select i1 %inexact, i32 %odd, i32 %t
  %r = bitcast i32 %bits to float
  ret float %r
}
define bfloat @__truncdfbf2(double %x) {
  %f = call float @emu_round_to_odd(double %x)
  %r = call bfloat @__truncsfbf2(float %f)
  ret bfloat %r
}
define half @__truncdfhf2(double %x) {
  %f = call float @emu_round_to_odd(double %x)
  %r = fptrunc float %f to half
  ret half %r
}
"""


def _split_args(args: str) -> list[str]:
    out, depth, current = [], 0, ""
    for ch in args:
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    return out + [current] if current.strip() else out


def _global_access_body(ret: str, asm: str, arg_types: tuple) -> str:
    """The body of a predicated `ld.global` / `st.global` (global_access.py): operands are the masked-off
    words of a load (`mov $i, $k` or `0x0`), then the predicate ("b", an i1) if any, then the address,
    then a store's words."""
    load = "ld.global" in asm
    narrow = ".u8" in asm or ".b8" in asm
    word = "i16" if narrow or "b16" in asm else "i32"
    count = int(re.search(r"\.v(\d)\.", asm).group(1)) if re.search(r"\.v(\d)\.", asm) else 1
    guarded = "@$" in asm
    ptr = [i for i, t in enumerate(arg_types) if t.startswith("ptr")][0]
    lines = []
    if guarded:
        lines.append(f"  br i1 %a{ptr - 1}, label %do, label %skip\ndo:")
    mem = "i8" if narrow else word
    values = []
    for i in range(count):
        lines.append(f"  %p{i} = getelementptr {mem}, ptr addrspace(1) %a{ptr}, i32 {i}")
        if load:
            lines.append(f"  %l{i} = load {mem}, ptr addrspace(1) %p{i}, align 1")
            if narrow:
                lines.append(f"  %w{i} = zext i8 %l{i} to i16")
            values.append(f"%{'w' if narrow else 'l'}{i}")
        else:
            value = f"%a{ptr + 1 + i}"
            if narrow:
                lines.append(f"  %t{i} = trunc i16 {value} to i8")
                value = f"%t{i}"
            lines.append(f"  store {mem} {value}, ptr addrspace(1) %p{i}, align 1")
    if not load:
        lines.append("  ret void")
        if guarded:
            lines.append("skip:\n  ret void")
        return "\n".join(lines) + "\n}"

    def result(words, tag):
        if count == 1:
            return [], words[0]
        out, acc = [], "undef"
        for i, w in enumerate(words):
            out.append(f"  %{tag}s{i} = insertvalue {ret} {acc}, {word} {w}, {i}")
            acc = f"%{tag}s{i}"
        return out, acc

    body, value = result(values, "d")
    lines += body + [f"  ret {ret} {value}"]
    if guarded:
        fills = re.findall(r"mov\.u\d+ \$(\d+), (\$\d+|0x0);", asm)
        words = ["0" if src == "0x0" else f"%a{int(src[1:]) - count}" for _, src in fills]
        body, value = result(words, "o")
        lines += ["skip:"] + body + [f"  ret {ret} {value}"]
    return "\n".join(lines) + "\n}"


def _asm_function(name: str, ret: str, asm: str, arg_types: tuple) -> str:
    params = ", ".join(f"{t} %a{i}" for i, t in enumerate(arg_types))
    head = f'define internal {ret} @"{name}"({params}) {{\n'
    op = asm.split(" ")[0]
    if is_tensormap_asm(asm):
        return head + tensormap_asm_body(asm, ret, arg_types)
    if op in _UNARY:
        return head + f"  %r = call float @{_UNARY[op]}(float %a0)\n  ret float %r\n}}"
    if op == "ex2.approx.ftz.f32":  # results below 2^-126 (subnormal) flush to +0
        return head + ("  %e = call float @llvm.exp2.f32(float %a0)\n"
                       "  %t = fcmp olt float %e, 0x3810000000000000\n"
                       "  %r = select i1 %t, float 0.0, float %e\n  ret float %r\n}")
    if op == "rsqrt.approx.f32":
        return head + ("  %s = call float @llvm.sqrt.f32(float %a0)\n"
                       "  %r = fdiv float 1.0, %s\n  ret float %r\n}")
    if op == "add.s64":  # a wgmma descriptor's `add.s64 $0, $1, constant;` (wgmma.py `_at`)
        constant = re.fullmatch(r"add\.s64 \$0, \$1, (\d+);", asm).group(1)
        return head + f"  %r = add i64 %a0, {constant}\n  ret i64 %r\n}}"
    if op == "div.full.f32":
        return head + "  %r = fdiv float %a0, %a1\n  ret float %r\n}"
    if "ld.global" in asm or "st.global" in asm:
        return head + _global_access_body(ret, asm, arg_types)
    if op == "cvt.rna.tf32.f32":  # round to nearest, ties away, keeping 10 mantissa bits
        return head + ("  %b = bitcast float %a0 to i32\n  %r = add i32 %b, 4096\n"
                       "  %t = and i32 %r, -8192\n  ret i32 %t\n}")
    if op.startswith("mma.sync"):
        return head + _mma_body(op, ret, arg_types)
    if is_wgmma_asm(op):
        return head + wgmma_asm_body(asm, ret, arg_types)
    m = re.search(r"atom\.global\.\w+\.\w+\.(\w+)\.(\w+)(?:\.(\w+))? ", asm)
    if m is None:
        raise ValueError(f"the CPU emulator cannot run inline PTX {asm!r}")
    kind, suffix, _ = m.groups()
    zero = "0.0" if ret in ("float", "double", "half") else ("null" if ret == "ptr" else "0")
    pred = f"%a{len(arg_types) - 1}"
    body = head + f"  %c = icmp ne i32 {pred}, 0\n  br i1 %c, label %do, label %skip\ndo:\n"
    if kind == "cas":
        body += (f"  %x = cmpxchg ptr addrspace(1) %a0, {ret} %a1, {ret} %a2 seq_cst seq_cst\n"
                 f"  %old = extractvalue {{ {ret}, i1 }} %x, 0\n")
    else:
        kind_key = kind if kind in ("add", "and", "or", "xor", "exch") else f"{kind}.{suffix[0]}"
        rmw = _RMW[kind_key]
        if ret in ("float", "double", "half") and rmw == "add":
            rmw = "fadd"
        body += f"  %old = atomicrmw {rmw} ptr addrspace(1) %a0, {ret} %a1 seq_cst\n"
    return body + f"  ret {ret} %old\nskip:\n  ret {ret} {zero}\n}}"
