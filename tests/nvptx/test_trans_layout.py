"""`tt.trans` takes its source's blocked layout with the dimensions permuted (passes/layouts.py), so
each thread keeps its elements and nothing moves through shared memory: tl.dot_scaled's transposes of
its bf16 operands (and `b.T` of any dot operand) are free. Checked in the `tile-gpu` IR and, for the
values, on the CPU emulator of the GPU lowering."""

from __future__ import annotations

import re

import numpy as np
from cpu_emulator import Emulator

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def transpose_twice(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.trans(x * 2.0)  # N x M
    z = tl.trans(y + 1.0)  # M x N again
    tl.store(out_ptr + offs, z)
    tl.store(out_ptr + M * N + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], y)


def test_trans_permutes_the_blocked_layout():
    compiled = tw.compile(transpose_twice, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                          constexprs={"M": 32, "N": 64}, target="sm_90a")
    ir = compiled.asm["tile-gpu"]
    layouts = dict(re.findall(r"^(#blocked\d*) = #ttg\.blocked<\{(.*)\}>", ir, re.MULTILINE))
    first = re.search(r"tt\.trans %\S+ \{order = \[1, 0\]\} : tensor<64x32xf32, (#blocked\d*)>", ir)
    source = re.search(r"arith\.mulf %\S+, %\S+ : tensor<32x64xf32, (#blocked\d*)>", ir)
    spread = lambda text: re.findall(r"(\w+)=\[(\d+), (\d+)\]", text)  # noqa: E731
    src, dst = spread(layouts[source.group(1)]), spread(layouts[first.group(1)])
    for (name, a, b), (name2, c, d) in zip(src, dst):
        assert name == name2 and (a, b) == (d, c), (src, dst)  # each dimension's spread swapped


def test_transposes_are_right_on_the_emulator():
    x = np.random.default_rng(3).standard_normal((32, 64)).astype(np.float32)
    out = np.full(2 * 32 * 64, np.nan, np.float32)
    Emulator(transpose_twice, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"M": 32, "N": 64},
             num_warps=4).launch((1,), x, out)
    np.testing.assert_array_equal(out[:2048].reshape(32, 64), x * 2 + 1)
    np.testing.assert_array_equal(out[2048:].reshape(64, 32), (x * 2).T)
