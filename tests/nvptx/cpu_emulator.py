"""Runs an NVPTX kernel's LLVM module (before O3) on the CPU, to test the lowering where no GPU is.

The module is re-targeted to the host and JIT-compiled by llvmlite; the NVVM intrinsics become host
callbacks: thread and block ids read thread-local values, `barrier0` is a `threading.Barrier`, and
`shfl.sync.bfly` exchanges through a shared array between two barriers. Every GPU thread of a program
is a host thread (ctypes releases the GIL while native code runs). Shared memory is one host array per
program. Inline PTX (approximate math, atomics, fp8 cvt, printf) cannot run here: such kernels are
refused. Slow (a thread per GPU thread): for small kernels in tests only.
"""

from __future__ import annotations

import ctypes
import re
import threading

import llvmlite.binding as llvm
import numpy as np

from tileworkbench.backends.nvptx.lower import Lowering
from tileworkbench.passes.axis_info import axis_info
from tileworkbench.passes.pipeline import TILE_GPU, run_passes
from tileworkbench.runtime.compiler import _parse_signature, tile_opt_ir

_SREG = ctypes.CFUNCTYPE(ctypes.c_int32)
_VOID = ctypes.CFUNCTYPE(None)
_SHFL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                         ctypes.c_int32)


class _Block:
    """The state one program's threads share."""

    def __init__(self, threads: int, ctaid, nctaid):
        self.barrier = threading.Barrier(threads)
        self.slots = np.zeros(threads, dtype=np.int32)
        self.ctaid, self.nctaid = ctaid, nctaid


class Emulator:
    def __init__(self, fn, signature: dict, constexprs: dict, num_warps: int = 4):
        func = tile_opt_ir(fn.fn, _parse_signature(fn, signature), constexprs)[0]
        func.num_warps = num_warps
        run_passes(func, TILE_GPU)
        lowering = Lowering(func, "sm_90", num_warps, axis_info(func))
        text = str(lowering.run())
        if "asm " in text or "vprintf" in text:
            raise ValueError("the kernel uses inline PTX, which the CPU emulator cannot run")
        self.threads = 32 * num_warps
        self.kinds = list(signature.values())
        self.smem_size = max(16, lowering.smem_bytes)
        self._local = threading.local()
        self._callbacks = self._make_callbacks()
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

        def shfl(mask, value, lane_mask, clamp):
            block = local.block
            block.slots[local.tid] = value
            block.barrier.wait()
            out = int(block.slots[local.tid ^ lane_mask])
            block.barrier.wait()
            return out

        callbacks = {"emu_barrier": _VOID(barrier), "emu_shfl": _SHFL(shfl)}
        for name in ("tid", "ctaid", "nctaid"):
            for axis, letter in enumerate("xyz"):
                callbacks[f"emu_sreg_{name}_{letter}"] = sreg(name, axis)
        return callbacks

    def _jit(self, text: str, name: str):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple().create_target_machine()
        text = re.sub(r'target triple = ".*"', f'target triple = "{llvm.get_default_triple()}"', text)
        text = re.sub(r'target datalayout = ".*"', f'target datalayout = "{target.target_data}"', text)
        text = text.replace("define ptx_kernel void", "define void")
        text = re.sub(r'@"llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.(\w)"', r'@"emu_sreg_\1_\2"', text)
        text = text.replace('@"llvm.nvvm.barrier0"', '@"emu_barrier"')
        text = text.replace('@"llvm.nvvm.shfl.sync.bfly.i32"', '@"emu_shfl"')
        text = text.replace(
            '@"global_smem" = external addrspace(3) global [0 x i8], align 16',
            f'@"global_smem" = addrspace(3) global [{self.smem_size} x i8] zeroinitializer, align 16')
        for symbol, callback in self._callbacks.items():
            llvm.add_symbol(symbol, ctypes.cast(callback, ctypes.c_void_p).value)
        module = llvm.parse_assembly(text)
        module.verify()
        engine = llvm.create_mcjit_compiler(module, target)
        engine.finalize_object()
        argtypes = [ctypes.c_void_p if k.startswith("*") else _ctype(k) for k in self.kinds]
        kernel = ctypes.CFUNCTYPE(None, *argtypes)(engine.get_function_address(name))
        return engine, kernel

    def launch(self, grid, *args) -> None:
        """Run the kernel over `grid` on NumPy arrays (pointers) and Python/NumPy scalars."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        values = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    self._program(_Block(self.threads, (x, y, z), grid), values)

    def _program(self, block: _Block, values) -> None:
        errors = []

        def body(tid):
            self._local.tid, self._local.block = tid, block
            try:
                self._kernel(*values)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                block.barrier.abort()
        threads = [threading.Thread(target=body, args=(t,)) for t in range(self.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


def _ctype(kind: str):
    return {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "fp32": ctypes.c_float,
            "fp64": ctypes.c_double, "u32": ctypes.c_uint32, "i1": ctypes.c_int32}[kind.split(":")[0]]
