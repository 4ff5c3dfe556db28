"""The FP32 FMA microbenchmark kernel: `CHAINS` independent `tl.fma` chains per element (explicit FMAs,
so the count does not depend on the compiler contracting a multiply and an add)."""

from __future__ import annotations

import tileworkbench as tw
import tileworkbench.language as tl

CHAINS = 8


@tw.jit
def fma_kernel(x_ptr, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a0 = x
    a1 = x + 1.0
    a2 = x + 2.0
    a3 = x + 3.0
    a4 = x + 4.0
    a5 = x + 5.0
    a6 = x + 6.0
    a7 = x + 7.0
    for _ in range(iters):
        a0 = tl.fma(a0, 0.9999, 0.0001)
        a1 = tl.fma(a1, 0.9999, 0.0001)
        a2 = tl.fma(a2, 0.9999, 0.0001)
        a3 = tl.fma(a3, 0.9999, 0.0001)
        a4 = tl.fma(a4, 0.9999, 0.0001)
        a5 = tl.fma(a5, 0.9999, 0.0001)
        a6 = tl.fma(a6, 0.9999, 0.0001)
        a7 = tl.fma(a7, 0.9999, 0.0001)
    tl.store(x_ptr + offs, a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7)
