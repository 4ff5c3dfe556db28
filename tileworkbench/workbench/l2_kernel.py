"""The L2 bandwidth microbenchmark kernel: every program reads windows of a buffer small enough to stay
in L2, REPS times at rotating offsets (so no load is loop-invariant), and stores one sum per lane."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl

STRIDE = tl.constexpr(4096)  # elements the window moves per repetition


@tw.jit
def l2_read_kernel(x_ptr, out_ptr, n, REPS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(REPS):
        offs = (pid * BLOCK + i * STRIDE + lanes) % n
        acc += tl.load(x_ptr + offs)
    tl.store(out_ptr + pid * BLOCK + lanes, acc)
