"""The shuffle exchange that moves an fp8 tensor-core accumulator (pairs of adjacent columns per
lane) into the next dot's 8-bit A fragments (runs of four): `byte_quad_plan` on the real layouts,
and the plan's shuffles simulated lane by lane. The lowered code runs on the CPU emulator in
test_fp8_chain_wgmma.py."""

from __future__ import annotations

import pytest

from tileworkbench.backends.llvm.lowering.exchange import byte_quad_plan
from tileworkbench.ir.ops.ttg import DotOperandEncoding, MmaEncoding

SHAPE = (128, 64)  # p of attention: BLOCK_M x BLOCK_N, 4 warps on M


def _layouts(version: int, k_width: int):
    if version == 3:
        first = MmaEncoding(3, (4, 1), (16, 64, 32))  # q @ k^T: N = BLOCK_N
        second = MmaEncoding(3, (4, 1), (16, 128, 32))  # p @ v: N = HEAD_DIM
    else:
        first = second = MmaEncoding(2, (4, 1))
    return first.linear(SHAPE), DotOperandEncoding(0, second, k_width).linear(SHAPE)


def _element(layout, reg: int, lane: int, warp: int) -> tuple[int, ...]:
    coords = layout.reg_coords(reg)
    for bases, index in ((layout.lanes, lane), (layout.warps, warp)):
        for bit, basis in enumerate(bases):
            if index >> bit & 1:
                coords = tuple(c + b for c, b in zip(coords, basis))
    return coords


@pytest.mark.parametrize("version", [2, 3])
def test_each_lane_gets_its_bytes_from_two_lanes_of_its_quad(version):
    src, dst = _layouts(version, 4)
    plan = byte_quad_plan(src, dst)
    assert plan is not None and len(plan) == dst.num_regs // 4
    for warp in range(4):
        # the words each source lane sends: word w = bytes of registers p0, p0 + 1, p1, p1 + 1
        sent = {lane: [[_element(src, r, lane, warp) for r in (p0, p0 + 1, p1, p1 + 1)]
                       for p0, p1 in plan] for lane in range(32)}
        for lane in range(32):
            first = (lane & 0x1C) | (lane & 1) << 1
            half = (lane >> 1) & 1
            for word in range(len(plan)):
                x, y = sent[first][word], sent[first | 1][word]
                got = x[2 * half:2 * half + 2] + y[2 * half:2 * half + 2]
                want = [_element(dst, 4 * word + byte, lane, warp) for byte in range(4)]
                assert got == want, (warp, lane, word)


def test_layouts_of_another_shape_get_no_plan():
    src, dst = _layouts(3, 2)  # a 16-bit A: its fragments are the accumulator's own registers
    assert byte_quad_plan(src, dst) is None
    assert byte_quad_plan(dst, src) is None
