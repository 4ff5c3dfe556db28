"""Hand-built compiled kernels and launch records with the lead's interface, for workbench tests.

The IR is built with the real Builder and printed by the real printer, so line maps are genuine; the
PTX is a short hand-written text with `.loc` lines for linking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tileworkbench.ir import Builder, Loc, print_ir, print_ir_lines
from tileworkbench.ir.ops import arith, scf, tt
from tileworkbench.ir.types import PointerType, TensorType, f32, i32
from tileworkbench.ir.values import Block

FILE = "/tmp/fake_kernels.py"
ADD_SOURCE = """@tw.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""
FIRST_LINE = 10  # the decorator's line in FILE


def _loc(line: int) -> Loc:
    return Loc(FILE, FIRST_LINE + line - 1)


def build_add(block_size: int = 1024):
    """`add_kernel` as tile-opt IR: out = x + y over BLOCK-sized programs."""
    ptr = PointerType(f32)
    entry = Block([ptr, ptr, ptr, i32], ["x_ptr", "y_ptr", "out_ptr", "n"])
    func = tt.FuncOp(sym_name="add_kernel", arg_attrs=({}, {}, {}, {}))
    func.body.add_block(entry)
    func.loc = _loc(2)
    b = Builder(entry)
    x_ptr, y_ptr, out_ptr, n = entry.args
    vec = TensorType((block_size,), i32)
    fvec, pvec = TensorType((block_size,), f32), TensorType((block_size,), ptr)
    with b.at_loc(_loc(3)):
        pid = b.value(tt.GetProgramIdOp, i32, "pid", axis=0)
    with b.at_loc(_loc(4)):
        bs = b.value(arith.ConstantOp, i32, None, value=block_size)
        start = b.value(arith.MulIOp, i32, None, lhs=pid, rhs=bs)
        rng = b.value(tt.MakeRangeOp, vec, None, start=0, end=block_size)
        starts = b.value(tt.SplatOp, vec, None, operand=start)
        offs = b.value(arith.AddIOp, vec, "offs", lhs=starts, rhs=rng)
    with b.at_loc(_loc(5)):
        ns = b.value(tt.SplatOp, vec, None, operand=n)
        mask = b.value(
            arith.CmpIOp,
            TensorType((block_size,), i32.__class__("i1")),
            "mask",
            predicate="slt",
            lhs=offs,
            rhs=ns,
        )
    loads = []
    for line, base, name in ((6, x_ptr, "x"), (7, y_ptr, "y")):
        with b.at_loc(_loc(line)):
            ptrs = b.value(tt.SplatOp, pvec, None, operand=base)
            addr = b.value(tt.AddPtrOp, pvec, None, ptr=ptrs, offset=offs)
            loads.append(b.value(tt.LoadOp, fvec, name, ptr=addr, mask=mask))
    with b.at_loc(_loc(8)):
        total = b.value(arith.AddFOp, fvec, None, lhs=loads[0], rhs=loads[1])
        ptrs = b.value(tt.SplatOp, pvec, None, operand=out_ptr)
        addr = b.value(tt.AddPtrOp, pvec, None, ptr=ptrs, offset=offs)
        b.create(tt.StoreOp, [], ptr=addr, value=total, mask=mask)
    b.create(tt.ReturnOp, [])
    return func


def build_loop_kernel(tile: int = 64):
    """acc = sum over `k in range(0, K, 16)` of a 64-wide exp(x)*x: exercises loop trip counts."""
    ptr = PointerType(f32)
    entry = Block([ptr, i32], ["x_ptr", "K"])
    func = tt.FuncOp(sym_name="loop_kernel", arg_attrs=({}, {}))
    func.body.add_block(entry)
    b = Builder(entry, _loc(3))
    x_ptr, k_arg = entry.args
    fvec, pvec = TensorType((tile,), f32), TensorType((tile,), ptr)
    zero = b.value(arith.ConstantOp, i32, None, value=0)
    step = b.value(arith.ConstantOp, i32, None, value=16)
    acc0 = b.value(arith.ConstantOp, fvec, None, value=0.0)
    body = Block([i32, fvec], ["k", "acc"])
    loop = b.create(scf.ForOp, [fvec], lower=zero, upper=k_arg, step=step, init_args=[acc0])
    loop.body.add_block(body)
    with b.at_end(body):
        ptrs = b.value(tt.SplatOp, pvec, None, operand=x_ptr)
        x = b.value(tt.LoadOp, fvec, "x", ptr=ptrs)
        from tileworkbench.ir.ops import math as mathops

        e = b.value(mathops.ExpOp, fvec, None, operand=x)
        prod = b.value(arith.MulFOp, fvec, None, lhs=e, rhs=x)
        acc = b.value(arith.AddFOp, fvec, None, lhs=body.args[1], rhs=prod)
        b.create(scf.YieldOp, [], values=[acc])
    ptrs = b.value(tt.SplatOp, pvec, None, operand=x_ptr)
    b.create(tt.StoreOp, [], ptr=ptrs, value=loop.results[0])
    b.create(tt.ReturnOp, [])
    return func


def _tile_line_map(func) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for number, (_, loc) in enumerate(print_ir_lines(func), start=1):
        if loc is not None and loc.line > 0:
            out.setdefault(loc.outermost.line, []).append(number)
    return out


PTX = """//
.version 8.0
.target sm_90
.address_size 64
.visible .entry add_kernel(.param .u64 x_ptr, .param .u64 y_ptr, .param .u64 out_ptr, .param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .f32 %f<4>;
\t.loc 1 12 0
\tmov.u32 %r1, %ctaid.x;
\t.loc 1 13 0
\tshl.b32 %r2, %r1, 10;
\t.loc 1 15 0
\tld.global.f32 %f1, [%rd1];
\t.loc 1 17 0
\tadd.f32 %f3, %f1, %f2;
\tst.global.f32 [%rd3], %f3;
\tret;
}
"""


def _ptx_line_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    current = None
    for number, line in enumerate(PTX.split("\n"), start=1):
        if line.strip().startswith(".loc"):
            current = int(line.split()[2])
        elif current is not None and line.strip() and not line.strip().startswith("}"):
            out.setdefault(current, []).append(number)
    return out


@dataclass
class FakeMetadata:
    name: str
    target: str
    num_warps: int = 4
    num_stages: int = 3
    shared: int = 0
    n_regs: int | None = 26
    n_spills: int | None = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class FakeCompiled:
    name: str
    asm: dict[str, str]
    passes: list[tuple[str, str]]
    metadata: FakeMetadata
    line_map: dict[str, dict[int, list[int]]]
    ir: Any
    source_file: str = FILE
    source_first_line: int = FIRST_LINE

    @property
    def n_regs(self):
        return self.metadata.n_regs

    @property
    def n_spills(self):
        return self.metadata.n_spills


def fake_add_compiled(target: str = "sm_90", block: int = 1024) -> FakeCompiled:
    func = build_add(block)
    tile = print_ir(func, locs=True)
    raw = tile.replace("arith.addf", "arith.addf ").replace("arith.addf ", "arith.addf")
    passes = [("tile", tile), ("canonicalize", tile), ("cse", raw + "")]
    asm = {"source": ADD_SOURCE, "tile": tile, "tile-opt": tile}
    line_map = {"tile": _tile_line_map(func), "tile-opt": _tile_line_map(func)}
    if target != "interpreter":
        asm["ptx"] = PTX
        line_map["ptx"] = _ptx_line_map()
    meta = FakeMetadata("add_kernel", target)
    if target == "interpreter":
        meta.n_regs = meta.n_spills = None
    return FakeCompiled("add_kernel", asm, passes, meta, line_map, func)


@dataclass
class FakeLaunch:
    """A LaunchRecord look-alike: running it computes out = x + y with NumPy."""

    compiled: FakeCompiled
    grid: tuple[int, int, int]
    args: dict[str, Any]
    target: str = "interpreter"
    kernel: Any = None
    autotuner_results: dict | None = None
    calls: list = field(default_factory=list)

    def relaunch(self) -> None:
        self.calls.append(1)
        np.add(self.args["x_ptr"], self.args["y_ptr"], out=self.args["out_ptr"])


def fake_add_launch(n: int = 5000, block: int = 1024, seed: int = 0) -> FakeLaunch:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    grid = (-(-n // block), 1, 1)
    launch = FakeLaunch(
        fake_add_compiled("interpreter", block),
        grid,
        {"x_ptr": x, "y_ptr": y, "out_ptr": out, "n": n, "BLOCK": block},
    )
    launch.relaunch()
    return launch


class FakeRecorder:
    """A `record_launches` look-alike: `launch(record)` called from a cell appends while recording."""

    def __init__(self):
        self.active: list | None = None

    def __call__(self):
        import contextlib

        @contextlib.contextmanager
        def scope():
            self.active = []
            try:
                yield self.active
            finally:
                self.active = None

        return scope()

    def launch(self, record) -> None:
        if self.active is not None:
            self.active.append(record)
