"""Warp specialization (passes/warp_specialize.py): `ttng.warp_specialize` splits the program in two.

The block has `producer_warps` more warps than `num_warps`; those (tid.x >= 32 * num_warps) run the
producer region and return, the others run the rest of the function. From the split on, a barrier
is `bar.sync 1, 32 * num_warps` (the consumers only: the producers have exited or are issuing
copies), and the TMA copies of the producer are issued by its first thread. Where the consumers are
several warp groups, the producers give back registers (`setmaxnreg.dec`) that the consumers take
(`setmaxnreg.inc`): the kernel is compiled for the launch's even share (`.maxnreg`), and
`hooks.register_split` says how many each side gets (sm_90a's register file).
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import ttng
from ..llvm_types import I32
from . import lowers


@lowers(ttng.WarpSpecializeOp)
def lower_warp_specialize(lw, op) -> None:
    consumers = 32 * lw.num_warps
    lw.producer_warps = op.producer_warps
    split = lw.hooks.register_split(lw, op.producer_warps) if lw.maxnreg is None else None
    if split is not None:
        lw.maxnreg = split.launch  # the registers each thread starts with
    b = lw.builder
    producer = lw.function.append_basic_block("producer")
    rest = lw.function.append_basic_block("consumers")
    b.cbranch(b.icmp_unsigned(">=", lw.sreg("tid.x"), ir.Constant(I32, consumers)), producer, rest)
    b.position_at_end(producer)
    if split is not None:
        _setmaxnreg(lw, "dec", split.producer)
    lw.first_thread = consumers  # the producer's copies are issued by its first thread
    lw.lower_block(op.producer.block)
    lw.builder.ret_void()
    lw.builder.position_at_end(rest)
    if split is not None:
        _setmaxnreg(lw, "inc", split.consumer)
    lw.first_thread = 0
    lw.barrier_threads = consumers  # barriers from here on: the consumers only


def _setmaxnreg(lw, direction: str, registers: int) -> None:
    lw.asm(f"setmaxnreg.{direction}.sync.aligned.u32 {registers};", "", ir.VoidType(), [], True)


@lowers(ttng.WarpSpecializeNoteOp)
def lower_warp_specialize_note(lw, op) -> None:
    """A note for the reader of the IR: the loop after it runs unspecialized."""
