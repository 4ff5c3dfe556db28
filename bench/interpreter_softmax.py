"""Times the NumPy interpreter on a fused softmax: 256 rows x 1024 fp32, one program per row.

    python bench/interpreter_softmax.py [rows] [cols]

A `@tw.jit` kernel launched with `kernel[grid](...)` under `config.interpret` (the first launch compiles
and is not timed). The interpreter's target is well under a second for the default shape on 2 cores.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config


@tw.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def main(rows: int = 256, cols: int = 1024) -> None:
    config.interpret = True
    block = tw.next_power_of_2(cols)
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    args = (out, x, x.shape[1], out.shape[1], cols)
    softmax_kernel[(rows,)](*args, BLOCK=block)  # compiles
    times = []
    for _ in range(5):
        start = time.perf_counter()
        softmax_kernel[(rows,)](*args, BLOCK=block)
        times.append(time.perf_counter() - start)
    wide = x.astype(np.float64)
    ref = np.exp(wide - wide.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    error = float(np.max(np.abs(out - ref) / np.abs(ref)))
    print(
        f"interpreter softmax {rows}x{cols} fp32: median {np.median(times) * 1e3:.1f} ms, "
        f"best {min(times) * 1e3:.1f} ms ({rows} programs), max rel error {error:.1e}"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
