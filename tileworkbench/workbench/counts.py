"""FLOPs and bytes of one launch, for the roofline: one walk over the kernel's `tile-opt` IR.

What is counted (per program, then multiplied by the number of programs in the grid):
- elementwise float arithmetic (`arith.addf/subf/mulf/divf/remf/negf/max*/min*`, `tt.precise_divf`,
  `tt.clampf`): 1 FLOP per element of the result; `math.fma`: 2 per element;
- float `math.*` functions (exp, log, sqrt, sin, ...) and `tt.precise_sqrt`: 1 per element (a
  transcendental is one "op" here, as in most roofline tools, although it costs several instructions);
- `tt.dot`: 2*M*N*K (times the batch), whatever the input type;
- `tt.reduce` / `tt.scan` with float combine ops: the combine's FLOPs once per combined element;
- integer arithmetic, comparisons, casts, address math and memory ops: 0 FLOPs;
- `scf.for`: the body times its trip count, evaluated from constants and the launch's scalar arguments
  (a loop whose bounds cannot be evaluated counts once, and the count says so); `scf.if`: the larger
  branch; `scf.while`: once.
Bytes are the algorithmic minimum: each array the kernel loads from is read once and each array it stores
to is written once, sized from the launch's actual arrays (an array both read and written counts twice).
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass, field

from ..ir.ops import arith, scf, tt
from ..ir.ops import math as mathops
from ..ir.types import TensorType
from ..ir.values import BlockArgument, OpResult, Value

FLOAT_BINARY = (
    arith.AddFOp,
    arith.SubFOp,
    arith.MulFOp,
    arith.DivFOp,
    arith.RemFOp,
    arith.NegFOp,
    arith.MaximumFOp,
    arith.MinimumFOp,
    arith.MaxNumFOp,
    arith.MinNumFOp,
    tt.PreciseDivFOp,
    tt.ClampFOp,
)
FLOAT_MATH = (
    mathops.ExpOp,
    mathops.Exp2Op,
    mathops.LogOp,
    mathops.Log2Op,
    mathops.SqrtOp,
    mathops.RsqrtOp,
    mathops.SinOp,
    mathops.CosOp,
    mathops.AbsFOp,
    mathops.FloorOp,
    mathops.CeilOp,
    mathops.ErfOp,
    tt.PreciseSqrtOp,
)
# Ops through which a pointer keeps pointing into the same argument.
POINTER_PASSTHROUGH = (
    tt.AddPtrOp,
    tt.SplatOp,
    tt.BroadcastOp,
    tt.ExpandDimsOp,
    tt.ReshapeOp,
    tt.TransOp,
    tt.PtrBitcastOp,
    arith.SelectOp,
)


@dataclass
class Counts:
    """FLOPs and bytes of one launch, with where each number came from and what was assumed."""

    flops: float | None
    bytes: float | None
    flops_source: str = "counted from the IR"
    bytes_source: str = "launch arrays (each read/written once)"
    loads: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dot_dtype: str | None = (
        None  # the input type of the kernel's tt.dot, if any (picks the ceiling)
    )

    @property
    def intensity(self) -> float | None:
        if not self.flops or not self.bytes:
            return None
        return self.flops / self.bytes


def numel(value: Value) -> int:
    t = value.type
    return t.numel if isinstance(t, TensorType) else 1


def _is_float(value: Value) -> bool:
    element = value.type.element if isinstance(value.type, TensorType) else value.type
    return bool(getattr(element, "is_float", False))


class _FlopCounter:
    """One IR walk; `scalars` holds known values of scalar SSA values (constants, launch args)."""

    def __init__(self, scalars: dict[int, float]):
        self.scalars = scalars
        self.notes: list[str] = []
        self.dot_dtype: str | None = None

    def block(self, block) -> float:
        return sum(self.op(op) for op in block.ops)

    def op(self, op) -> float:
        if isinstance(op, arith.ConstantOp) and not isinstance(op.result.type, TensorType):
            self.scalars[id(op.result)] = op.value
        self._fold_scalar(op)
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, scf.IfOp):
            branches = [self.block(r.block) for r in (op.then_region, op.else_region) if r.blocks]
            return max(branches, default=0.0)
        if isinstance(op, scf.WhileOp):
            self.notes.append("an scf.while loop is counted once")
            return self.block(op.before.block) + self.block(op.after.block)
        if isinstance(op, tt.DotOp):
            return self._dot(op)
        if isinstance(op, (tt.ReduceOp, tt.ScanOp)):
            return self._combine(op)
        if isinstance(op, mathops.FmaOp) and _is_float(op.result):
            return 2.0 * numel(op.result)
        if isinstance(op, FLOAT_BINARY + FLOAT_MATH) and op.results and _is_float(op.result):
            return float(numel(op.result))
        return 0.0

    def _for(self, op: scf.ForOp) -> float:
        bounds = [self.scalars.get(id(v)) for v in (op.lower, op.upper, op.step)]
        body = self.block(op.body.block)
        if any(b is None for b in bounds) or bounds[2] == 0:
            self.notes.append(f"loop at line {op.loc.line}: trip count unknown, counted once")
            return body
        lower, upper, step = bounds
        trips = max(0, pymath.ceil((upper - lower) / step))
        return body * trips

    def _dot(self, op: tt.DotOp) -> float:
        a, b = op.a.type.shape, op.b.type.shape
        batch = a[0] if len(a) == 3 else 1
        m, k, n = a[-2], a[-1], b[-1]
        self.dot_dtype = str(op.a.type.element)
        if self.dot_dtype == "f32" and op.input_precision.startswith("tf32"):
            self.dot_dtype = "tf32"
        return 2.0 * batch * m * n * k

    def _combine(self, op) -> float:
        per_combine = self.block(op.combine.block)
        src = numel(op.srcs[0])
        applications = src - numel(op.results[0]) if isinstance(op, tt.ReduceOp) else src
        return per_combine * applications

    def _fold_scalar(self, op) -> None:
        """Evaluate integer scalar arithmetic on known values (loop bounds like cdiv(K, BLOCK_K))."""
        folds = {
            arith.AddIOp: lambda a, b: a + b,
            arith.SubIOp: lambda a, b: a - b,
            arith.MulIOp: lambda a, b: a * b,
            arith.MaxSIOp: max,
            arith.MinSIOp: min,
            arith.DivSIOp: lambda a, b: int(a / b) if b else None,
            arith.RemSIOp: lambda a, b: a - b * int(a / b) if b else None,
        }
        fold = folds.get(type(op))
        if fold is not None and not isinstance(op.result.type, TensorType):
            lhs, rhs = self.scalars.get(id(op.lhs)), self.scalars.get(id(op.rhs))
            if lhs is not None and rhs is not None:
                value = fold(lhs, rhs)
                if value is not None:
                    self.scalars[id(op.result)] = value
        elif isinstance(op, (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)):
            if id(op.operand) in self.scalars:
                self.scalars[id(op.result)] = self.scalars[id(op.operand)]


def count_flops(func, args: dict[str, object] | None = None) -> tuple[float, list[str], str | None]:
    """FLOPs of one program of `func` (a `tt.func`), the notes on what was assumed, and the dot dtype.

    `args` are the launch's arguments by parameter name; scalar ones make loop bounds known.
    """
    scalars: dict[int, float] = {}
    names = param_names(func)
    for arg, name in zip(func.args, names):
        value = (args or {}).get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            scalars[id(arg)] = value
        elif hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            scalars[id(arg)] = value.item()
    counter = _FlopCounter(scalars)
    flops = counter.block(func.body.block)
    return flops, counter.notes, counter.dot_dtype


def param_names(func) -> list[str]:
    """The kernel's runtime parameter names, from the block arguments' name hints."""
    return [arg.name_hint or f"arg{i}" for i, arg in enumerate(func.args)]


def pointer_root(value: Value) -> BlockArgument | None:
    """The kernel parameter a pointer (or tensor of pointers) was computed from, if one is.

    Follows pointer arithmetic and shape ops, and loop-carried pointers back to their initial value."""
    for _ in range(1000):  # IR is acyclic along this walk; the bound guards a malformed graph
        if isinstance(value, BlockArgument):
            if _is_func_arg(value):
                return value
            value = _carried_init(value)
        elif isinstance(value, OpResult):
            op = value.op
            if isinstance(op, POINTER_PASSTHROUGH):
                value = op.operands[1] if isinstance(op, arith.SelectOp) else op.operands[0]
            elif isinstance(op, (scf.ForOp, scf.WhileOp)):
                value = op.init_args[value.index]
            else:
                return None
        else:
            return None
        if value is None:
            return None
    return None


def _carried_init(arg: BlockArgument) -> Value | None:
    """The initial value of a loop-carried block argument (None for an induction variable)."""
    op = arg.block.parent_op
    if isinstance(op, scf.ForOp) and arg.index > 0:
        return op.init_args[arg.index - 1]
    if isinstance(op, scf.WhileOp) and arg.block is op.before.block:
        return op.init_args[arg.index]
    return None


def _is_func_arg(arg: BlockArgument) -> bool:
    return isinstance(arg.block.parent_op, tt.FuncOp)


def memory_params(func) -> tuple[list[str], list[str]]:
    """Names of the parameters the kernel loads from and stores to (atomics count as both)."""
    names = param_names(func)
    loads: list[str] = []
    stores: list[str] = []
    for op in func.walk():
        targets = []
        if isinstance(op, tt.LoadOp):
            targets = [loads]
        elif isinstance(op, tt.StoreOp):
            targets = [stores]
        elif isinstance(op, (tt.AtomicRMWOp, tt.AtomicCASOp)):
            targets = [loads, stores]
        if not targets:
            continue
        root = pointer_root(op.ptr)
        if root is None:
            continue
        for target in targets:
            if names[root.index] not in target:
                target.append(names[root.index])
    return loads, stores


def nbytes(value: object) -> int | None:
    """Bytes of an array argument (NumPy, CuPy, torch, anything with nbytes or numel*itemsize)."""
    size = getattr(value, "nbytes", None)
    if isinstance(size, int):
        return size
    if hasattr(value, "numel") and hasattr(value, "element_size"):
        return int(value.numel()) * int(value.element_size())
    return None


def count_launch(
    func,
    args: dict[str, object] | None,
    grid: tuple[int, ...] | None,
    flops: float | None = None,
    bytes: float | None = None,
) -> Counts:
    """FLOPs and bytes of one launch of `func` with `args` over `grid`; `flops`/`bytes` override."""
    loads, stores = memory_params(func)
    programs = 1
    for g in grid or (1,):
        programs *= int(g)
    counts = Counts(flops=None, bytes=None, loads=loads, stores=stores)
    per_program, notes, counts.dot_dtype = count_flops(func, args)
    counts.notes.extend(notes)
    if flops is not None:
        counts.flops, counts.flops_source = float(flops), "given by the user"
    elif grid is not None:
        counts.flops = per_program * programs
    else:
        counts.flops, counts.flops_source = per_program, "counted from the IR, one program"
    if bytes is not None:
        counts.bytes, counts.bytes_source = float(bytes), "given by the user"
    elif args is not None:
        counts.bytes = _array_bytes(args, loads, stores, counts.notes)
    else:
        counts.bytes_source = "unknown (no launch: pass --bytes)"
    return counts


def _array_bytes(
    args: dict[str, object], loads: list[str], stores: list[str], notes: list[str]
) -> float | None:
    total = 0
    for name in loads + stores:
        size = nbytes(args.get(name))
        if size is None:
            notes.append(f"size of {name} unknown")
            continue
        total += size
    return float(total) if (loads or stores) else None
