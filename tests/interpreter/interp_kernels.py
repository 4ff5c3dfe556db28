"""A small kernel-building helper for the interpreter tests: Tile IR built by hand with `ir.Builder`, each
op located at the line of the test that built it (so error messages can be checked against it)."""

from __future__ import annotations

import sys

import numpy as np

from tileworkbench.ir import Block, Builder, Loc, Region
from tileworkbench.ir.ops import arith, scf, tt
from tileworkbench.ir.ops import math as math_ops
from tileworkbench.ir.types import PointerType, ScalarType, TensorType, Type, element_type

f16, bf16, f32, f64 = (ScalarType(n) for n in ("f16", "bf16", "f32", "f64"))
i1, i8, i32, i64, u8, u32, u64 = (
    ScalarType(n) for n in ("i1", "i8", "i32", "i64", "u8", "u32", "u64")
)


def ptr(t: ScalarType) -> PointerType:
    return PointerType(t)


def tensor(shape, element) -> TensorType:
    return TensorType(tuple(shape), element)


def with_shape(t: Type, shape) -> Type:
    element = element_type(t)
    return TensorType(tuple(shape), element) if shape else element


class KernelBuilder:
    """Builds one `tt.func`; methods mirror `tl` builtins and return result values."""

    def __init__(self, name: str, params: list[tuple[str, Type]]):
        block = Block([t for _, t in params], [n for n, _ in params])
        self.func = tt.FuncOp(sym_name=name, arg_attrs=tuple({} for _ in params))
        self.func.body.add_block(block)
        self.builder = Builder(block)
        self.args = {n: a for (n, _), a in zip(params, block.args)}

    def __getitem__(self, name: str):
        return self.args[name]

    def _loc(self) -> Loc:
        """The line of the first caller outside this helper module."""
        frame = sys._getframe(1)
        while frame.f_code.co_filename == __file__:
            frame = frame.f_back
        return Loc(frame.f_code.co_filename, frame.f_lineno)

    def op(self, cls, result_types, **fields):
        with self.builder.at_loc(self._loc()):
            created = self.builder.create(cls, list(result_types), **fields)
        return created.results[0] if len(created.results) == 1 else created.results

    def finish(self) -> tt.FuncOp:
        with self.builder.at_loc(self._loc()):
            self.builder.create(tt.ReturnOp, [])
        return self.func

    # -- values ----------------------------------------------------------------------------------
    def pid(self, axis: int = 0):
        return self.op(tt.GetProgramIdOp, [i32], axis=axis)

    def num_programs(self, axis: int = 0):
        return self.op(tt.GetNumProgramsOp, [i32], axis=axis)

    def arange(self, n: int, start: int = 0):
        return self.op(tt.MakeRangeOp, [tensor((n - start,), i32)], start=start, end=n)

    def const(self, value, t: Type):
        return self.op(arith.ConstantOp, [t], value=value)

    def splat(self, x, shape):
        return self.op(tt.SplatOp, [with_shape(x.type, shape)], operand=x)

    def broadcast(self, x, shape):
        return self.op(tt.BroadcastOp, [with_shape(x.type, shape)], operand=x)

    def expand_dims(self, x, axis: int):
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        return self.op(tt.ExpandDimsOp, [with_shape(x.type, shape)], src=x, axis=axis)

    def binary(self, cls, a, b):
        return self.op(cls, [a.type], lhs=a, rhs=b)

    def unary(self, cls, x, result_type: Type | None = None):
        return self.op(cls, [result_type or x.type], operand=x)

    def cmpi(self, predicate: str, a, b):
        return self.op(
            arith.CmpIOp,
            [with_shape(i1, a.type.shape if a.type.shape else ())],
            predicate=predicate,
            lhs=a,
            rhs=b,
        )

    def cmpf(self, predicate: str, a, b):
        return self.op(
            arith.CmpFOp,
            [with_shape(i1, getattr(a.type, "shape", ()))],
            predicate=predicate,
            lhs=a,
            rhs=b,
        )

    def select(self, c, t, f):
        return self.op(arith.SelectOp, [t.type], condition=c, true_value=t, false_value=f)

    def cast(self, cls, x, element: ScalarType):
        return self.op(cls, [with_shape(element, getattr(x.type, "shape", ()))], operand=x)

    # -- memory ----------------------------------------------------------------------------------
    def addptr(self, p, offset):
        shape = getattr(offset.type, "shape", ())
        if shape and not getattr(p.type, "shape", ()):
            p = self.splat(p, shape)
        return self.op(tt.AddPtrOp, [p.type], ptr=p, offset=offset)

    def load(self, p, mask=None, other=None):
        pointee = element_type(p.type).pointee
        return self.op(
            tt.LoadOp,
            [with_shape(pointee, getattr(p.type, "shape", ()))],
            ptr=p,
            mask=mask,
            other=other,
        )

    def store(self, p, value, mask=None):
        return self.op(tt.StoreOp, [], ptr=p, value=value, mask=mask)

    def atomic(self, kind: str, p, value, mask=None):
        return self.op(tt.AtomicRMWOp, [value.type], kind=kind, ptr=p, val=value, mask=mask)

    # -- reductions and loops --------------------------------------------------------------------
    def reduce(self, srcs: list, axis: int, combine) -> list:
        """`combine(kb, lhs_values, rhs_values) -> results` builds the combine region."""
        shape = list(srcs[0].type.shape)
        del shape[axis]
        return self._combining(
            tt.ReduceOp,
            tt.ReduceReturnOp,
            srcs,
            axis,
            combine,
            [with_shape(s.type, shape) for s in srcs],
        )

    def scan(self, srcs: list, axis: int, combine, reverse: bool = False) -> list:
        return self._combining(
            tt.ScanOp, tt.ScanReturnOp, srcs, axis, combine, [s.type for s in srcs], reverse=reverse
        )

    def _combining(self, cls, ret, srcs, axis, combine, result_types, **extra) -> list:
        elements = [element_type(s.type) for s in srcs]
        block = Block(elements + elements)
        loc = self._loc()
        with self.builder.at_loc(loc):
            op = self.builder.create(
                cls, result_types, axis=axis, srcs=list(srcs), combine=Region([block]), **extra
            )
        with self.builder.at_end(block):
            out = combine(self, block.args[: len(srcs)], block.args[len(srcs) :])
            with self.builder.at_loc(loc):
                self.builder.create(ret, [], values=list(out))
        return list(op.results)

    def for_loop(self, lower, upper, step, inits: list, body) -> list:
        """`body(kb, iv, carried) -> next carried values`; returns the loop's results."""
        block = Block([lower.type] + [v.type for v in inits])
        with self.builder.at_loc(self._loc()):
            loop = self.builder.create(
                scf.ForOp,
                [v.type for v in inits],
                lower=lower,
                upper=upper,
                step=step,
                init_args=list(inits),
                body=Region([block]),
            )
        with self.builder.at_end(block):
            out = body(self, block.args[0], block.args[1:])
            self.builder.create(scf.YieldOp, [], values=list(out))
        return list(loop.results)


def softmax_kernel(n_cols: int) -> tt.FuncOp:
    """One program per row: load, max, subtract, exp, sum, divide, store (the fused-softmax shape)."""
    kb = KernelBuilder(
        "softmax_kernel",
        [("out_ptr", ptr(f32)), ("in_ptr", ptr(f32)), ("stride", i32), ("n_cols", i32)],
    )
    row = kb.pid(0)
    start = kb.binary(arith.MulIOp, row, kb["stride"])
    offs = kb.arange(n_cols)
    mask = kb.cmpi("slt", offs, kb.splat(kb["n_cols"], (n_cols,)))
    in_ptrs = kb.addptr(kb.addptr(kb["in_ptr"], start), offs)
    x = kb.load(in_ptrs, mask, kb.const(float("-inf"), tensor((n_cols,), f32)))
    row_max = kb.reduce([x], 0, lambda k, a, b: [k.binary(arith.MaxNumFOp, a[0], b[0])])[0]
    z = kb.binary(arith.SubFOp, x, kb.splat(row_max, (n_cols,)))
    e = kb.unary(math_ops.ExpOp, z)
    total = kb.reduce([e], 0, lambda k, a, b: [k.binary(arith.AddFOp, a[0], b[0])])[0]
    y = kb.binary(arith.DivFOp, e, kb.splat(total, (n_cols,)))
    kb.store(kb.addptr(kb.addptr(kb["out_ptr"], start), offs), y, mask)
    return kb.finish()


def poisoned(shape, dtype=np.float32) -> np.ndarray:
    """An output array full of NaN (or a sentinel for integers), so unwritten elements show."""
    if np.dtype(dtype).kind == "f":
        return np.full(shape, np.nan, dtype)
    return np.full(shape, 0x5A, dtype)


def elementwise_kernel(build, in_elements: list, out_element, n: int) -> tt.FuncOp:
    """out[i] = build(kb, in0[i], in1[i], ...) over one program of n lanes."""
    params = [(f"in{k}", ptr(e)) for k, e in enumerate(in_elements)] + [("out", ptr(out_element))]
    kb = KernelBuilder("elementwise", params)
    offs = kb.arange(n)
    loaded = [kb.load(kb.addptr(kb[f"in{k}"], offs)) for k in range(len(in_elements))]
    kb.store(kb.addptr(kb["out"], offs), build(kb, *loaded))
    return kb.finish()


_TARGET: list = []  # the target the running test uses (conftest.py's autouse fixture sets it)


def use_target(target) -> None:
    _TARGET[:] = [target] if target is not None else []


def run(func, args: list, grid, arg_names=None, **interpreter_options) -> None:
    """Run hand-built `tile-opt` IR on the current test's target (the interpreter by default);
    `interpreter_options` (stdout=...) go to the interpreter's `run`."""
    if not _TARGET or _TARGET[0] == "interpreter":
        from tileworkbench.backends.interpreter import run as interpret

        return interpret(func, args, grid, arg_names, **interpreter_options)
    return _TARGET[0].run(func, args, grid, arg_names)


def run_elementwise(build, inputs: list, in_elements: list, out_element, out_dtype):
    """Run `elementwise_kernel` on 1-D NumPy inputs and return the output."""
    n = len(inputs[0])
    out = poisoned(n, out_dtype)
    run(elementwise_kernel(build, in_elements, out_element, n), [*inputs, out], (1,))
    return out
