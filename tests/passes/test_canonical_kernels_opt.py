"""The canonical kernels (tests/kernels/canonical_kernels.py): their `tile` IR and their `tile-opt`
IR give bit-identical results in the interpreter, and the pipeline shrinks and hoists what it
should."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tileworkbench.backends.interpreter import run
from tileworkbench.frontend import generate
from tileworkbench.ir import print_ir
from tileworkbench.ir.ops import scf, tt
from tileworkbench.passes import TILE_OPT, run_passes
from tileworkbench.runtime.compiler import _parse_signature

_PATH = Path(__file__).resolve().parent.parent / "kernels" / "canonical_kernels.py"


def _load_cases() -> dict:
    if not _PATH.exists():
        return {}
    spec = importlib.util.spec_from_file_location("passes_canonical_kernels", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


CASES = _load_cases()
RNG = np.random.default_rng(7)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _poison(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def inputs(name: str) -> tuple[list, tuple[int, ...]]:
    """Arguments (outputs poisoned) and the grid of a small launch of canonical kernel `name`."""
    if name == "vector_add":
        n = 1500
        return [_f32(n), _f32(n), _poison(n), n], (2,)
    if name == "softmax":
        rows, cols = 3, 100
        return [_poison(rows, cols), _f32(rows, cols), cols, cols, rows, cols], (2,)
    if name == "matmul":
        m, n, k = 64, 128, 80
        a = _f32(m, k).astype(np.float16)
        b = _f32(k, n).astype(np.float16)
        c = _poison(m, n, dtype=np.float16)
        return [a, b, c, m, n, k, k, 1, n, 1, n, 1], (2,)
    if name == "layer_norm":
        rows, cols = 2, 700
        return [
            _f32(rows, cols),
            _poison(rows, cols),
            _f32(cols),
            _f32(cols),
            _poison(rows),
            _poison(rows),
            cols,
            cols,
            1e-5,
        ], (rows,)
    if name == "dropout":
        n = 1500
        return [_f32(n), _poison(n), n, 0.3, 123], (2,)
    raise KeyError(name)


@pytest.mark.skipif(not CASES, reason="tests/kernels/canonical_kernels.py is not there")
@pytest.mark.parametrize("name", sorted(CASES))
def test_tile_opt_keeps_the_bits_of_every_output(name):
    kernel, signature, constexprs = CASES[name]
    func = generate(kernel.fn, _parse_signature(kernel.fn, signature), constexprs)
    args, grid = inputs(name)
    names = list(signature)

    def execute() -> list[np.ndarray]:
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        run(func, copies, grid, names)
        return [a for a in copies if isinstance(a, np.ndarray)]

    before = execute()
    size_before = sum(1 for _ in func.walk())
    run_passes(func, TILE_OPT)
    after = execute()
    for got, want in zip(after, before):
        assert got.tobytes() == want.tobytes()
    assert sum(1 for _ in func.walk()) <= size_before
    # The pipeline reaches a fixed point: running any pass again changes nothing, and says so.
    text = print_ir(func)
    for fn in TILE_OPT:
        assert not fn(func), f"{fn.__name__} changed the tile-opt IR of {name}"
    assert print_ir(func) == text
    # Ranges are loop-invariant: none is left inside a loop.
    for op in func.walk():
        if isinstance(op, tt.MakeRangeOp):
            assert not any(isinstance(a, scf.ForOp) for a in ancestors(op)), print_ir(func)


def ancestors(op):
    parent = op.parent_op
    while parent is not None:
        yield parent
        parent = parent.parent_op
