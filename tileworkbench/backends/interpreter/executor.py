"""The interpreter's driver: compiles a `tile-opt` kernel once into closures over a slot list, then runs
it program by program over the grid (x fastest), with NumPy doing the work of each whole tile.

Every SSA value gets a slot in one list (`env`) shared by all programs: SSA dominance guarantees a slot is
written before it is read in each program, so nothing needs clearing between programs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import InterpreterError, TileworkbenchError
from ...ir.location import describe_loc
from ...ir.ops.base import Op
from ...ir.ops.tt import FuncOp
from ...ir.types import PointerType
from ...ir.values import Block, Value
from .dtypes import make_value
from .evaluate import EVALUATORS
from .memory import Memory, Site

BlockFn = Callable[[Sequence], list]


def run(
    func: FuncOp,
    args: list,
    grid: tuple[int, int, int],
    arg_names: list[str] | None = None,
    *,
    stdout: Callable[[str], None] | None = None,
) -> None:
    """Run kernel `func` over `grid` on NumPy arrays, in place.

    Args:
        func: the kernel's `tile-opt` IR; its body's block arguments are the runtime parameters.
        args: one value per parameter: a NumPy array (any strides) for a `!tt.ptr<T>` parameter, which
            stores write into, and a Python or NumPy scalar otherwise.
        grid: the number of programs along x, y and z (a shorter tuple is padded with 1s).
        arg_names: parameter names for error messages (default: the IR's value names).
        stdout: where `tl.device_print` lines go (default: `print`).

    Raises:
        OutOfBoundsError: an unmasked load, store or atomic fell outside its argument, or was misaligned.
        InterpreterError: a failed `device_assert`/`assume`, inline asm, or an op the interpreter lacks.

    Where Triton leaves a result undefined, the interpreter picks one: masked-off lanes of a load
    without `other` read 0, masked-off atomics return 0, fptosi/fptoui saturate (NaN gives 0), fp8
    rounding saturates like `cvt.rn.satfinite`, and `tl.dot` multiplies in float32 for every input
    precision (so "tf32" is more exact than on a GPU). Programs run one at a time, x fastest, so
    atomics and races resolve in program order, and within a program in lane order.
    """
    params = func.args
    if len(args) != len(params):
        raise InterpreterError(
            f"kernel '{func.sym_name}' takes {len(params)} arguments, got {len(args)}"
        )
    names = (
        list(arg_names) if arg_names else [p.name_hint or f"arg{i}" for i, p in enumerate(params)]
    )
    arrays = [
        _as_array(a, n, func) if isinstance(p.type, PointerType) else None
        for a, p, n in zip(args, params, names)
    ]
    memory = Memory(names, arrays)
    values = [
        memory.pointer(i) if arrays[i] is not None else make_value(a, p.type)
        for i, (a, p) in enumerate(zip(args, params))
    ]
    program = Program(func, memory, _grid3(grid), stdout or print)
    # C semantics: integer wrap-around and float overflow are silent
    with np.errstate(all="ignore"):
        program.run_grid(values)


class Program:
    """One kernel compiled to closures; the context that `eval_*` factories build their closures in."""

    def __init__(
        self,
        func: FuncOp,
        memory: Memory,
        grid: tuple[int, int, int],
        stdout: Callable[[str], None],
    ):
        self.func = func
        self.kernel = func.sym_name
        self.memory = memory
        self.grid = grid
        self.stdout = stdout
        self.env: list = []
        self._slots: dict[int, int] = {}
        self.body = EVALUATORS[FuncOp](func, self)

    def run_grid(self, values: list) -> None:
        nx, ny, nz = self.grid
        body, memory = self.body, self.memory
        for z in range(nz):
            for y in range(ny):
                for x in range(nx):
                    memory.pid = (x, y, z)
                    body(values)

    # -- the context factories use ----------------------------------------------------------------
    @property
    def pid(self) -> tuple[int, int, int]:
        return self.memory.pid

    def where(self, op: Op) -> str:
        """`file:line: source text` of `op`, with the call sites of inlined callees."""
        return describe_loc(op.loc)

    def site(self, op: Op, kind: str) -> Site:
        return Site(kind, self.kernel, self.where(op))

    def compile_block(self, block: Block) -> BlockFn:
        """A function that binds the block's arguments, runs its ops and returns what its terminator
        passes on (tt.return, scf.yield, scf.condition, tt.reduce.return, tt.scan.return)."""
        arg_slots = [self._define(a) for a in block.args]
        steps = []
        terminator: Op | None = None
        for op in block.ops:
            if op.is_terminator:
                terminator = op
                break
            steps.append(self._compile_op(op))
        out_slots = [self._slot(v) for v in terminator.operands] if terminator is not None else []
        env = self.env

        def run_block(args: Sequence) -> list:
            for slot, value in zip(arg_slots, args):
                env[slot] = value
            for step in steps:
                step()
            return [env[slot] for slot in out_slots]

        return run_block

    # -- compiling ops ---------------------------------------------------------------------------
    def _compile_op(self, op: Op) -> Callable[[], None]:
        factory = EVALUATORS.get(type(op))
        if factory is None:
            raise InterpreterError(
                f"the interpreter cannot run {op.name} (kernel '{self.kernel}' at "
                f"{self.where(op)}); it is a GPU-only op"
            )
        fn = factory(op, self)
        ins = [self._slot(v) for v in op.operands]
        outs = [self._define(r) for r in op.results]
        return _step(fn, ins, outs, self.env, self._wrap_error(op))

    def _wrap_error(self, op: Op) -> Callable[[Exception], Exception]:
        def wrap(error: Exception) -> Exception:
            return InterpreterError(
                f"{op.name} failed in kernel '{self.kernel}' at "
                f"{self.where(op)}, program id {self.pid}: "
                f"{type(error).__name__}: {error}"
            )

        return wrap

    def _define(self, value: Value) -> int:
        self._slots[id(value)] = len(self.env)
        self.env.append(None)
        return len(self.env) - 1

    def _slot(self, value: Value) -> int:
        return self._slots[id(value)]


def _step(fn: Callable, ins: list[int], outs: list[int], env: list, wrap) -> Callable[[], None]:
    """A zero-argument closure running `fn` on the operand slots and storing its result(s).

    `fn` returns the value for one result, a sequence for several, and anything for none. Special
    cases for the common arities keep the per-op overhead to one call."""
    if len(outs) == 1 and len(ins) <= 2:
        out = outs[0]
        if len(ins) == 2:
            a, b = ins

            def step():
                try:
                    env[out] = fn(env[a], env[b])
                except TileworkbenchError:
                    raise
                except Exception as error:
                    raise wrap(error) from error

            return step
        if len(ins) == 1:
            a = ins[0]

            def step():
                try:
                    env[out] = fn(env[a])
                except TileworkbenchError:
                    raise
                except Exception as error:
                    raise wrap(error) from error

            return step

    def step():
        try:
            result = fn(*[env[i] for i in ins])
        except TileworkbenchError:
            raise
        except Exception as error:
            raise wrap(error) from error
        if len(outs) == 1:
            env[outs[0]] = result
        elif outs:
            for slot, value in zip(outs, result):
                env[slot] = value

    return step


def _grid3(grid) -> tuple[int, int, int]:
    grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise InterpreterError(f"grid must be 1 to 3 non-negative ints, got {grid}")
    return grid + (1,) * (3 - len(grid))


def _as_array(value, name: str, func: FuncOp) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array_interface__"):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    raise InterpreterError(
        f"kernel '{func.sym_name}': argument '{name}' is a pointer parameter, so it "
        f"needs an array, got {type(value).__name__}"
    )
