"""Property test: every integer binary op, on random operands of every integer type, matches a Python
model of C/LLVM semantics (two's complement wrap, truncating division, signedness from the op)."""

from __future__ import annotations

import pytest

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_kernels import run_elementwise

from tileworkbench.ir.ops import arith
from tileworkbench.ir.types import ScalarType

pytestmark = pytest.mark.only_on("interpreter")  # about the interpreter itself

TYPES = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u32": np.uint32,
    "u64": np.uint64,
}


def _wrap(value: int, bits: int, signed: bool) -> int:
    value %= 1 << bits
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# op -> (reads operands as signed?, model on Python ints); None: the type's own signedness
MODELS = {
    arith.AddIOp: (None, lambda a, b, n: a + b),
    arith.SubIOp: (None, lambda a, b, n: a - b),
    arith.MulIOp: (None, lambda a, b, n: a * b),
    arith.AndIOp: (None, lambda a, b, n: a & b),
    arith.OrIOp: (None, lambda a, b, n: a | b),
    arith.XOrIOp: (None, lambda a, b, n: a ^ b),
    arith.DivSIOp: (True, lambda a, b, n: _c_div(a, b)),
    arith.RemSIOp: (True, lambda a, b, n: a - b * _c_div(a, b)),
    arith.DivUIOp: (False, lambda a, b, n: a // b),
    arith.RemUIOp: (False, lambda a, b, n: a % b),
    arith.MaxSIOp: (True, lambda a, b, n: max(a, b)),
    arith.MinUIOp: (False, lambda a, b, n: min(a, b)),
    arith.ShLIOp: (None, lambda a, b, n: a << (b % n)),
    arith.ShRSIOp: (True, lambda a, b, n: a >> (b % n)),
    arith.ShRUIOp: (False, lambda a, b, n: a >> (b % n)),
}


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(sorted(MODELS, key=lambda c: c.__name__)),
    type_name=st.sampled_from(sorted(TYPES)),
    data=st.data(),
)
def test_integer_op_matches_the_c_model(op, type_name, data):
    dtype = np.dtype(TYPES[type_name])
    bits = dtype.itemsize * 8
    info = np.iinfo(dtype)
    values = st.integers(int(info.min), int(info.max))
    a = np.array(data.draw(st.lists(values, min_size=8, max_size=8)), dtype)
    b = np.array(data.draw(st.lists(values, min_size=8, max_size=8)), dtype)
    reads_signed, model = MODELS[op]
    if reads_signed is None:
        reads_signed = dtype.kind == "i"
    if op in (arith.ShLIOp, arith.ShRSIOp, arith.ShRUIOp):
        b = (b.astype(np.int64) % bits).astype(dtype)  # shifting by >= the width is poison in LLVM
    if op in (arith.DivSIOp, arith.RemSIOp, arith.DivUIOp, arith.RemUIOp):
        b[b == 0] = 3  # division by zero is undefined
    element = ScalarType(type_name)
    got = run_elementwise(
        lambda kb, x, y: kb.binary(op, x, y), [a, b], [element, element], element, dtype
    )
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        x, y = _wrap(x, bits, reads_signed), _wrap(y, bits, reads_signed)
        expected.append(_wrap(model(x, y, bits), bits, dtype.kind == "i"))
    np.testing.assert_array_equal(got, np.array(expected, dtype=object).astype(dtype))
