"""Statement lowering: assignments, `if` (folded when the condition is constexpr, else `scf.if`), `for`
over range / tl.range / tl.static_range (`scf.for` or unrolled), `while` (`scf.while`), `return` and
`assert`. Variables carried through runtime control flow become region results."""

from __future__ import annotations

import ast
from typing import Any

from ..ir import scf
from ..ir.values import Block, Region
from ..language import core
from ..language.core import tensor
from .semantics import is_number, unwrap

RETURN = "__return__"


def always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and always_returns(last.body) and always_returns(last.orelse)


def normalize_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Move the statements after an `if` whose branch always returns into its other branch, so every
    `return` ends a block and runtime branches can carry the return value as a result."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.If):
            rest = stmts[i + 1 :]
            body, orelse = normalize_returns(stmt.body), normalize_returns(stmt.orelse)
            if rest and always_returns(body) and not always_returns(orelse):
                orelse = normalize_returns(orelse + rest)
                out.append(_copy_if(stmt, body, orelse))
                return out
            if rest and always_returns(orelse) and not always_returns(body):
                body = normalize_returns(body + rest)
                out.append(_copy_if(stmt, body, orelse))
                return out
            out.append(_copy_if(stmt, body, orelse))
            continue
        out.append(stmt)
        if isinstance(stmt, ast.Return):
            break
    return out


def _copy_if(node: ast.If, body: list[ast.stmt], orelse: list[ast.stmt]) -> ast.If:
    new = ast.If(test=node.test, body=body, orelse=orelse)
    return ast.copy_location(new, node)


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names stored anywhere in `stmts` (nested blocks included), in first-assignment order."""
    names: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names[node.id] = None
            elif isinstance(node, ast.Return):
                names[RETURN] = None
    return list(names)


def flatten(value: Any) -> list[tensor]:
    if isinstance(value, tensor):
        return [value]
    if isinstance(value, tuple):
        return [t for v in value for t in flatten(v)]
    return []


def unflatten(template: Any, values: list[tensor], pos: int = 0) -> tuple[Any, int]:
    """Rebuild `template`'s structure with `values` in place of its tensors."""
    if isinstance(template, tensor):
        return values[pos], pos + 1
    if isinstance(template, tuple):
        items = []
        for v in template:
            item, pos = unflatten(v, values, pos)
            items.append(item)
        return _same_tuple_type(template, items), pos
    return template, pos


def _same_tuple_type(template: tuple, items: list) -> tuple:
    """A tuple like `template` (a NamedTuple such as a block pointer stays one) holding `items`."""
    return template._make(items) if hasattr(template, "_make") else tuple(items)


def retyped(t: tensor, handle) -> tensor:
    return tensor(handle, t.type)


class StatementsMixin:
    # -- blocks ------------------------------------------------------------------------------------------
    def visit_body(self, stmts: list[ast.stmt]) -> None:
        stmts = normalize_returns(stmts)
        while stmts and not self.returned:
            stmt, stmts = stmts[0], stmts[1:]
            if not isinstance(stmt, ast.If):
                self.visit(stmt)
                continue
            with self.at(stmt):
                condition = self.visit(stmt.test)
            if isinstance(condition, tensor):
                with self.at(stmt):
                    self.runtime_if(stmt, condition)
                continue
            # A compile-time `if` is spliced into the statement list, so a runtime `if ... return` in
            # the branch taken takes the statements after it into its other branch (normalize_returns).
            stmts = normalize_returns(list(stmt.body if condition else stmt.orelse) + stmts)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # Only nested definitions get here (bodies of kernels and callees are visited directly); running
        # the nested body in place would be wrong.
        raise self.error(
            f"a function defined inside a kernel (`{node.name}`) is not supported",
            hint=f"define `{node.name}` at module level with @tw.jit and call it",
        )

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Return(self, node: ast.Return) -> None:
        self.scope[RETURN] = self.visit(node.value) if node.value is not None else None
        self.returned = True

    # -- assignment ----------------------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.visit(node.value)
        annotation = self.visit(node.annotation)
        if annotation is core.constexpr and isinstance(value, tensor):
            raise self.error(
                f"`{ast.unparse(node.target)}` is annotated tl.constexpr but its value is only "
                "known at run time"
            )
        if isinstance(annotation, core.dtype) and isinstance(value, (tensor, int, float, bool)):
            value = self.sem.cast(value, annotation)
        self.assign(node.target, value)
        if annotation is core.constexpr and isinstance(node.target, ast.Name):
            self.constexpr_names.add(node.target.id)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        load = (
            ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target)
            if isinstance(node.target, ast.Name)
            else node.target
        )
        binop = ast.copy_location(ast.BinOp(left=load, op=node.op, right=node.value), node)
        self.assign(node.target, self.visit(binop))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.set_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple):
                raise self.error(
                    f"cannot unpack a {type(value).__name__} into {len(target.elts)} names"
                )
            if len(value) != len(target.elts):
                raise self.error(f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(
                f"cannot assign to `{ast.unparse(target)}` in a kernel",
                hint="tiles are values: build a new one (e.g. with tl.where) or tl.store to memory",
            )

    # -- if -----------------------------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        condition = self.visit(node.test)
        if not isinstance(condition, tensor):
            self.visit_body(node.body if condition else node.orelse)
            return
        self.runtime_if(node, condition)

    def scalar_condition(self, condition: tensor, what: str) -> tensor:
        if (
            condition.shape and condition.numel == 1
        ):  # a one-element tile is a scalar here, as in Triton
            from .reductions import unsplat

            condition = unsplat(self, condition)
        if condition.shape:
            raise self.error(
                f"the condition of a runtime `{what}` must be a scalar, not a tile of shape "
                f"{condition.shape}",
                hint="reduce it first (tl.max(mask) > 0), or use tl.where",
            )
        return self.sem.cast(condition, core.int1)

    def run_branch(self, stmts: list[ast.stmt], before: dict) -> tuple[Block, dict, bool]:
        block = Block()
        saved_scope, saved_returned = self.scope, self.returned
        self.scope = dict(before)
        with self.builder.at_end(block):
            self.visit_body(stmts)
        out = (block, self.scope, self.returned)
        self.scope, self.returned = saved_scope, saved_returned
        return out

    def runtime_if(self, node: ast.If, condition: tensor) -> None:
        if self.elementwise and condition.shape and condition.numel != 1:
            self.select_if(node, condition)
            return
        condition = self.scalar_condition(condition, "if")
        before = dict(self.scope)
        then_block, then_scope, then_ret = self.run_branch(node.body, before)
        else_block, else_scope, else_ret = self.run_branch(node.orelse, before)
        merged = self.merge_branches(node, before, then_scope, else_scope, then_block, else_block)
        types = [t.handle.type for name in merged for t in flatten(then_scope[name])]
        for block, scope in ((then_block, then_scope), (else_block, else_scope)):
            with self.builder.at_end(block):
                self.builder.create(
                    scf.YieldOp, values=[t.handle for n in merged for t in flatten(scope[n])]
                )
        op = self.builder.create(
            scf.IfOp,
            types,
            condition=condition.handle,
            then_region=Region([then_block]),
            else_region=Region([else_block]),
        )
        results = list(op.results)
        for name in merged:
            template = then_scope[name]
            flat = [retyped(t, r) for t, r in zip(flatten(template), results)]
            value, _ = unflatten(template, flat)
            results = results[len(flat) :]
            if name == RETURN:
                self.scope[RETURN] = value
            else:
                self.set_name(name, value)
        if then_ret and else_ret:
            self.returned = True
        for name in set(then_scope) ^ set(else_scope):
            if name not in before and name != RETURN:
                self.branch_only[name] = node.lineno + self.source.first_line - 1

    def select_if(self, node: ast.If, condition: tensor) -> None:
        """An `if` on a tile inside tl.map_elementwise: both branches run on whole tiles (they are the
        scalar function's pure code), and each name (or the return value) they set is merged with
        tl.where, which is the element-by-element meaning of the scalar `if`."""
        before = dict(self.scope)
        branches = []
        for stmts in (node.body, node.orelse):
            saved_scope, saved_returned = self.scope, self.returned
            self.scope = dict(before)
            self.visit_body(stmts)
            branches.append((self.scope, self.returned))
            self.scope, self.returned = saved_scope, saved_returned
        (then_scope, then_ret), (else_scope, else_ret) = branches
        if then_ret != else_ret:
            raise self.error(
                "in tl.map_elementwise, an `if` on a tile must return in both branches or "
                "in neither",
                hint="add an `else: return ...`",
            )
        for name in set(then_scope) & set(else_scope):
            a, b = then_scope[name], else_scope[name]
            if name in before and a is before[name] and b is before[name]:
                continue
            self.scope[name] = self._select(condition, a, b)
        self.returned = then_ret

    def _select(self, condition: tensor, a: Any, b: Any) -> Any:
        if isinstance(a, tuple):
            return tuple(self._select(condition, x, y) for x, y in zip(a, b))
        return self.sem.where(condition, a, b)

    def merge_branches(
        self, node, before, then_scope, else_scope, then_block, else_block
    ) -> list[str]:
        """Names whose value after the `if` depends on the branch taken; unify their types (numbers
        become tensors) and return them in a stable order."""
        merged = []
        for name in dict.fromkeys([*then_scope, *else_scope]):
            if name not in then_scope or name not in else_scope:
                continue
            a, b = then_scope[name], else_scope[name]
            if a is b or (
                not isinstance(a, (tensor, tuple))
                and not isinstance(b, (tensor, tuple))
                and type(a) is type(b)
                and a == b
            ):
                self.scope[name] = a
                continue
            a, b = self.unify(name, a, b, then_block, else_block)
            then_scope[name], else_scope[name] = a, b
            merged.append(name)
        return merged

    def unify(self, name, a, b, then_block, else_block):
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            pairs = [self.unify(name, x, y, then_block, else_block) for x, y in zip(a, b)]
            return (
                _same_tuple_type(a, [p[0] for p in pairs]),
                _same_tuple_type(b, [p[1] for p in pairs]),
            )
        if not isinstance(a, tensor) and type(a) is type(b) and a == b:
            return a, b  # an equal compile-time part of a tuple (a block pointer's block shape)
        if (
            a is None
            or b is None
            or not isinstance(a, (tensor, int, float, bool))
            or not isinstance(b, (tensor, int, float, bool))
        ):
            raise self.error(
                f"`{name}` has different compile-time values in the two branches of a runtime `if`",
                hint="make the condition a tl.constexpr, or give both branches tensors",
            )
        with self.builder.at_end(then_block):
            ta = self.sem.to_tensor(a)
        with self.builder.at_end(else_block):
            tb = self.sem.to_tensor(b)
        if is_number(a) and not is_number(b):
            with self.builder.at_end(then_block):
                ta = self.sem.broadcast_to(self.sem.cast(ta, tb.dtype), tb.shape)
        elif is_number(b) and not is_number(a):
            with self.builder.at_end(else_block):
                tb = self.sem.broadcast_to(self.sem.cast(tb, ta.dtype), ta.shape)
        if ta.type != tb.type:
            raise self.error(
                f"`{name}` is {ta.type!r} in the `if` branch but {tb.type!r} in the `else` branch",
                hint="cast both to one dtype and shape",
            )
        return ta, tb

    # -- loops ---------------------------------------------------------------------------------------------
    def carried_names(self, stmts: list[ast.stmt]) -> list[str]:
        return [n for n in assigned_names(stmts) if n in self.scope and n != RETURN]

    def carried_inits(self, names: list[str]) -> dict[str, Any]:
        return {name: self.numbers_to_tensors(self.scope[name]) for name in names}

    def numbers_to_tensors(self, value: Any, template: Any = None) -> Any:
        """Numbers a loop carries, bare or inside plain tuples, become scalar tensors (of `template`'s
        dtype when given), so the loop can change them. NamedTuples (block pointers) keep their
        compile-time fields."""
        if is_number(value) and (template is None or isinstance(template, tensor)):
            value = self.sem.to_tensor(value)
            return value if template is None else self.sem.cast(value, template.dtype)
        if type(value) is tuple:
            templates = (
                template
                if type(template) is tuple and len(template) == len(value)
                else (None,) * len(value)
                if template is None
                else None
            )
            if templates is not None:
                return tuple(self.numbers_to_tensors(v, t) for v, t in zip(value, templates))
        return value

    def check_loop_types(self, names, inits, scope, kind: str) -> list[tensor]:
        out = []
        for name in names:
            new = scope[name]
            if not isinstance(new, (tensor, tuple)) and is_number(new):
                new = self.sem.to_tensor(new)
                new = (
                    self.sem.cast(new, flatten(inits[name])[0].dtype)
                    if flatten(inits[name])
                    else new
                )
            elif type(new) is tuple:
                new = self.numbers_to_tensors(new, inits[name])
            old_flat, new_flat = flatten(inits[name]), flatten(new)
            if not isinstance(inits[name], (tensor, tuple)):
                if new is not inits[name] and new != inits[name]:
                    raise self.error(
                        f"`{name}` is a compile-time value that the {kind} loop changes",
                        hint=f"initialize `{name}` with a tensor (e.g. tl.zeros)",
                    )
                continue
            if len(old_flat) != len(new_flat) or any(
                o.type != n.type for o, n in zip(old_flat, new_flat)
            ):
                old_t = [repr(o.type) for o in old_flat]
                new_t = [repr(n.type) for n in new_flat]
                raise self.error(
                    f"loop-carried variable `{name}` is {', '.join(old_t)} before the {kind} loop but "
                    f"{', '.join(new_t)} after one iteration",
                    hint=f"give `{name}` its final dtype and shape before the loop, e.g. "
                    f"tl.zeros(shape, dtype) or .to(dtype)",
                )
            out.extend(new_flat)
        return out

    def visit_For(self, node: ast.For) -> None:
        if not isinstance(node.iter, ast.Call):
            raise self.error("kernels can only loop over range(), tl.range() or tl.static_range()")
        iterator = self.visit(node.iter)
        if node.orelse:
            raise self.error("`for ... else` is not supported in a kernel")
        if isinstance(iterator, core.static_range):
            return self.unrolled_for(node, iterator)
        if not isinstance(iterator, core.range):
            raise self.error("kernels can only loop over range(), tl.range() or tl.static_range()")
        self.runtime_for(node, iterator)

    def unrolled_for(self, node: ast.For, iterator: core.static_range) -> None:
        bounds = [iterator.start, iterator.end, iterator.step]
        if any(isinstance(v, tensor) for v in bounds):
            raise self.error(
                "tl.static_range bounds must be constexpr", hint="use range() for a runtime loop"
            )
        for i in range(int(bounds[0]), int(bounds[1]), int(bounds[2])):
            self.assign(node.target, i)
            self.visit_body(node.body)
            if self.returned:
                raise self.error("`return` inside a loop is not supported in a kernel")

    def loop_bounds(self, iterator: core.range) -> tuple[tensor, tensor, tensor, Any]:
        start, end, step = iterator.start, iterator.end, iterator.step
        if isinstance(step, tensor) or step is None:
            negative = None
        else:
            if step == 0:
                raise self.error("range() step must not be zero")
            negative = step < 0
        values = [self.sem.to_tensor(v) for v in (start, end, step)]
        for v in values:
            if not v.dtype.is_int() or v.shape:
                raise self.error(f"loop bounds must be integer scalars, got {v.type!r}")
        common = core.int64 if any(v.dtype.int_bitwidth == 64 for v in values) else core.int32
        lb, ub, st = (self.sem.cast(v, common) for v in values)
        return lb, ub, st, negative

    def runtime_for(self, node: ast.For, iterator: core.range) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error("a runtime loop variable must be a single name")
        lb, ub, step, negative = self.loop_bounds(iterator)
        if negative:
            # for i in range(a, b, -s): run k = 0 .. cdiv(a - b, s) and compute i = a - k*s in the body.
            pos = self.sem.neg(step)
            trip = self.sem.floordiv(self.sem.add(self.sem.sub(lb, ub), self.sem.sub(pos, 1)), pos)
            trip = self.sem.minmax("max", trip, self.sem.constant(0, lb.dtype))
            start, stop, stride = (
                self.sem.constant(0, lb.dtype),
                trip,
                self.sem.constant(1, lb.dtype),
            )
        else:
            start, stop, stride = lb, ub, step
        names = self.carried_names(
            node.body + [ast.Assign(targets=[node.target], value=ast.Constant(0))]
        )
        names = [n for n in names if n != node.target.id]
        inits = self.carried_inits(names)
        init_flat = [t for n in names for t in flatten(inits[n])]
        body = Block([start.handle.type] + [t.handle.type for t in init_flat])
        saved_scope = self.scope
        self.scope = dict(self.scope)
        self.bind_block_args(names, inits, body.args[1:])
        iv = tensor(body.args[0], lb.dtype)
        with self.builder.at_end(body):
            if negative:
                iv = self.sem.sub(lb, self.sem.mul(iv, self.sem.neg(step)))
            self.set_name(node.target.id, iv)
            self.visit_body(node.body)
            if self.returned:
                raise self.error("`return` inside a loop is not supported in a kernel")
            yielded = self.check_loop_types(names, inits, self.scope, "for")
            self.builder.create(scf.YieldOp, values=[t.handle for t in yielded])
        self.scope = saved_scope
        op = self.builder.create(
            scf.ForOp,
            [t.handle.type for t in init_flat],
            lower=start.handle,
            upper=stop.handle,
            step=stride.handle,
            init_args=[t.handle for t in init_flat],
            body=Region([body]),
            loop_unroll_factor=self.unroll_factor(iterator),
            disable_licm=bool(unwrap(getattr(iterator, "disable_licm", False))),
            warp_specialize=bool(unwrap(getattr(iterator, "warp_specialize", False))),
        )
        self.bind_results(names, inits, list(op.results))

    def unroll_factor(self, iterator: core.range) -> int:
        factor = unwrap(getattr(iterator, "loop_unroll_factor", None))
        if factor is None:
            return 0
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise self.error(
                f"loop_unroll_factor must be a positive integer constexpr, got {factor!r}"
            )
        return factor

    def bind_results(self, names, inits, results) -> None:
        flat_all = [t for n in names for t in flatten(inits[n])]
        wrapped = [retyped(t, r) for t, r in zip(flat_all, results)]
        pos = 0
        for name in names:
            value, pos = unflatten(inits[name], wrapped, pos)
            self.set_name(name, value)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error("`while ... else` is not supported in a kernel")
        names = self.carried_names(node.body)
        inits = self.carried_inits(names)
        init_flat = [t for n in names for t in flatten(inits[n])]
        types = [t.handle.type for t in init_flat]
        before, after = Block(types), Block(types)
        saved_scope = self.scope
        self.scope = dict(saved_scope)
        self.bind_block_args(names, inits, before.args)
        self.while_disable_licm = False  # set by `tl.condition(c, disable_licm=True)` in the test
        with self.builder.at_end(before):
            condition = self.visit(node.test)
            if not isinstance(condition, tensor):
                condition = self.sem.to_tensor(bool(condition))
            condition = self.scalar_condition(condition, "while")
            self.builder.create(scf.ConditionOp, condition=condition.handle, args=list(before.args))
        disable_licm = self.while_disable_licm
        self.scope = dict(saved_scope)
        self.bind_block_args(names, inits, after.args)
        with self.builder.at_end(after):
            self.visit_body(node.body)
            if self.returned:
                raise self.error("`return` inside a loop is not supported in a kernel")
            yielded = self.check_loop_types(names, inits, self.scope, "while")
            self.builder.create(scf.YieldOp, values=[t.handle for t in yielded])
        self.scope = saved_scope
        op = self.builder.create(
            scf.WhileOp,
            types,
            init_args=[t.handle for t in init_flat],
            before=Region([before]),
            after=Region([after]),
            disable_licm=disable_licm,
        )
        self.bind_results(names, inits, list(op.results))

    def bind_block_args(self, names, inits, args) -> None:
        flat_all = [t for n in names for t in flatten(inits[n])]
        wrapped = [retyped(t, a) for t, a in zip(flat_all, args)]
        pos = 0
        for name in names:
            value, pos = unflatten(inits[name], wrapped, pos)
            self.scope[name] = value

    # -- assertions ------------------------------------------------------------------------------------------
    def visit_Assert(self, node: ast.Assert) -> None:
        condition = self.visit(node.test)
        message = self.visit(node.msg) if node.msg is not None else ast.unparse(node.test)
        if not isinstance(condition, tensor):
            if not condition:
                raise self.error(f"assertion failed at compile time: {message}")
            return
        self.call_builtin("device_assert", [condition, str(message)], {})

    def visit_Global(self, node) -> None:
        raise self.error("`global` is not supported in a kernel")

    visit_Nonlocal = visit_Global
