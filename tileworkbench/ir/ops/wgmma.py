"""Hopper's warp-group MMA in the `ttng` dialect (Triton's names): `ttng.warp_group_dot` issues `wgmma`
on operand tiles in shared memory (`!ttg.memdesc` in an `#nvmma_shared` layout; A may come from
registers) and `ttng.warp_group_dot_wait` waits for it. Made by the `wgmma` pass from `tt.dot`s
whose result has a version-3 `#mma` layout; only the NVPTX back end lowers them (sm_90a).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Value
from .base import Op, attribute, operand


@dataclass(eq=False)
class WarpGroupDotOp(Op, name="ttng.warp_group_dot"):
    """`a @ b + c` by `wgmma.mma_async`: `a` (M x K) and `b` (K x N) are shared-memory tiles read by
    64-bit matrix descriptors, or `a` is a register tensor in the `#dot_op` layout of the result's
    (the register-A form); `c` and the result are in the `#mma` (version 3) layout. Asynchronous:
    the result registers hold the product only after a `ttng.warp_group_dot_wait`, and a register
    `a` must not change until then."""

    a: Value = operand()
    b: Value = operand()
    c: Value = operand()
    input_precision: str = attribute("ieee")


@dataclass(eq=False)
class WarpGroupDotWaitOp(Op, name="ttng.warp_group_dot_wait"):
    """`wgmma.wait_group pendings`: at most `pendings` groups of this warp group's wgmmas are still in
    flight. Takes and returns the accumulator, so nothing reads it before the wait."""

    acc: Value = operand()
    pendings: int = attribute(0)
