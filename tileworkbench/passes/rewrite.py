"""A small greedy rewrite driver: named rewrite functions registered per op class, applied to a
fixed point.

`canonicalize` is built on it. A rewrite is `def add_zero(op, rw: Rewriter) -> bool` registered with
`@patterns.rewrite(AddIOp)`; it changes the IR only through the `Rewriter`, which keeps a use map
(the IR itself has no use lists) and puts every op a change may affect back on the worklist."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..ir import Builder, Op, Type, Value
from ..ir.ops.arith import ConstantOp
from ..ir.ops.tt import FuncOp
from ..ir.values import OpResult

RewriteFn = Callable[[Any, "Rewriter"], bool]
F = TypeVar("F", bound=RewriteFn)

# A runaway set of rewrites (two undoing each other) must not hang the compiler: stop after this
# many successful rewrites per op of the function, which no terminating set comes near.
_MAX_REWRITES_PER_OP = 50


class Patterns:
    """Rewrite functions keyed by op class; an op gets those of its class and of its bases."""

    def __init__(self, name: str):
        self.name = name
        self._by_class: dict[type[Op], list[RewriteFn]] = {}
        self._cache: dict[type[Op], list[RewriteFn]] = {}

    def rewrite(self, *op_classes: type[Op]) -> Callable[[F], F]:
        """Register the decorated function for every op of `op_classes` (and their subclasses)."""

        def register(fn: F) -> F:
            for cls in op_classes:
                self._by_class.setdefault(cls, []).append(fn)
            self._cache.clear()
            return fn

        return register

    def for_op(self, op: Op) -> list[RewriteFn]:
        cls = type(op)
        found = self._cache.get(cls)
        if found is None:
            found = [fn for base in cls.__mro__ for fn in self._by_class.get(base, ())]
            self._cache[cls] = found
        return found


class Rewriter:
    """Changes the IR of `func` for rewrite functions, keeping a use map and a worklist current."""

    def __init__(self, func: FuncOp):
        self.func = func
        self._uses: dict[int, dict[Op, None]] = {}
        self.worklist: deque[Op] = deque()
        self._queued: set[int] = set()
        for op in func.walk():
            if op is not func:
                self._add_uses(op)

    # -- queries --------------------------------------------------------------------------------
    def users(self, value: Value) -> list[Op]:
        """The ops that use `value` as an operand, anywhere in the function."""
        return list(self._uses.get(id(value), ()))

    def has_uses(self, value: Value) -> bool:
        return bool(self._uses.get(id(value)))

    def is_live(self, op: Op) -> bool:
        """Whether `op` is still inside the function (not erased, nor nested in an erased op)."""
        while op is not self.func:
            if op.parent is None:
                return False
            op = op.parent.parent_op
            if op is None:
                return False
        return True

    # -- changes --------------------------------------------------------------------------------
    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Point every use of `old` at `new`. A new value with no name and no uses yet (a folded
        constant) takes `old`'s source name; a shared one keeps its own, which other uses show."""
        if old is new:
            return
        if isinstance(new, OpResult) and new.name_hint is None and not self.has_uses(new):
            new.name_hint = old.name_hint
        users = self._uses.pop(id(old), {})
        for user in users:
            user.replace_operand(old, new)
            self._uses.setdefault(id(new), {})[user] = None
            self.push(user)

    def replace_op(self, op: Op, values: Value | Iterable[Value]) -> None:
        """Replace the results of `op` by `values`, then erase `op`."""
        values = [values] if isinstance(values, Value) else list(values)
        if len(values) != len(op.results):
            raise ValueError(f"{op.name} has {len(op.results)} results, got {len(values)} values")
        for old, new in zip(op.results, values):
            self.replace_all_uses(old, new)
        self.erase(op)

    def erase(self, op: Op) -> None:
        """Remove `op` (and every op nested in it); its results must be unused."""
        if any(self.has_uses(r) for r in op.results):
            raise ValueError(f"cannot erase {op.name}: its results are still used")
        for inner in op.walk():
            for value in inner.operands:
                users = self._uses.get(id(value))
                if users is not None:
                    users.pop(inner, None)
                # The value's definition may be dead now.
                if isinstance(value, OpResult):
                    self.push(value.op)
        op.erase()

    def create(
        self,
        cls: type[Op],
        result_types: list[Type],
        before: Op,
        name: str | None = None,
        **fields: Any,
    ) -> Op:
        """Build `cls(**fields)` just before `before`, at its source location."""
        builder = Builder(loc=before.loc)
        with builder.before_op(before):
            new = builder.create(cls, result_types, name=name, **fields)
        self._add_uses(new)
        self.push(new)
        return new

    def constant(self, value: Any, type: Type, before: Op) -> Value:
        """An `arith.constant` of `value` (a splat when `type` is a tensor) just before `before`."""
        return self.create(ConstantOp, [type], before, value=value).result

    def move_before(self, op: Op, anchor: Op) -> None:
        """Move `op` (with its regions) out of its block to just before `anchor`."""
        op.parent.remove(op)
        block = anchor.parent
        block.insert(block.ops.index(anchor), op)
        self.push(op)

    def changed_in_place(self, op: Op, old_operands: list[Value]) -> None:
        """Tell the rewriter that `op`'s operands were edited in place (from `old_operands`)."""
        for value in old_operands:
            users = self._uses.get(id(value))
            if users is not None:
                users.pop(op, None)
        self._add_uses(op, nested=False)
        self.push(op)

    # -- worklist -------------------------------------------------------------------------------
    def push(self, op: Op) -> None:
        if id(op) not in self._queued:
            self._queued.add(id(op))
            self.worklist.append(op)

    def pop(self) -> Op:
        op = self.worklist.popleft()
        self._queued.discard(id(op))
        return op

    def _add_uses(self, op: Op, nested: bool = True) -> None:
        for inner in op.walk() if nested else (op,):
            for value in inner.operands:
                self._uses.setdefault(id(value), {})[inner] = None


def is_trivially_dead(op: Op, rw: Rewriter) -> bool:
    """A pure op none of whose results is used (an op without results is kept: it has a purpose)."""
    return op.pure and bool(op.results) and not any(rw.has_uses(r) for r in op.results)


def apply_patterns(func: FuncOp, patterns: Patterns) -> bool:
    """Apply `patterns` greedily to every op of `func` until none applies; erase ops left dead.

    Returns:
        Whether anything changed.
    """
    rw = Rewriter(func)
    for op in func.walk():
        if op is not func:
            rw.push(op)
    budget = _MAX_REWRITES_PER_OP * (len(rw.worklist) + 1)
    changed = False
    while rw.worklist and budget > 0:
        op = rw.pop()
        if not rw.is_live(op):
            continue
        if is_trivially_dead(op, rw):
            rw.erase(op)
            changed = True
            continue
        for fn in patterns.for_op(op):
            if fn(op, rw):
                changed = True
                budget -= 1
                if rw.is_live(op):
                    rw.push(op)
                break
    return changed
