"""Expression lowering: names, constants, attributes, operators, comparisons, subscripts, tuples and
calls. Operations on Python values (constexprs) are evaluated by Python; on tensors they build IR."""

from __future__ import annotations

import ast
import inspect
import operator
from typing import Any

from ..ir import scf
from ..ir.values import Block, Region
from ..language import core
from ..language.core import tensor
from .semantics import is_number, unwrap

_PY_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_SEM_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.BitAnd: "and_",
    ast.BitOr: "or_",
    ast.BitXor: "xor",
    ast.LShift: "shl",
    ast.RShift: "shr",
}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_PY_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

# Tensor methods that are builtins called with the tensor first (x.sum(0) == tl.sum(x, 0)).
TENSOR_METHODS = {
    "to": "cast",
    "sum": "sum",
    "max": "max",
    "min": "min",
    "argmax": "argmax",
    "argmin": "argmin",
    "reshape": "reshape",
    "view": "view",
    "ravel": "ravel",
    "trans": "trans",
    "permute": "permute",
    "expand_dims": "expand_dims",
    "broadcast_to": "broadcast_to",
    "split": "split",
    "join": "join",
    "cumsum": "cumsum",
    "cumprod": "cumprod",
    "reduce": "reduce",
    "associative_scan": "associative_scan",
    "xor_sum": "xor_sum",
    "reduce_or": "reduce_or",
    "sort": "sort",
    "flip": "flip",
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "sqrt": "sqrt",
    "abs": "abs",
    "cos": "cos",
    "sin": "sin",
    "sigmoid": "sigmoid",
    "softmax": "softmax",
    "floor": "floor",
    "ceil": "ceil",
    "erf": "erf",
    "rsqrt": "rsqrt",
    "squeeze": "squeeze",
    "unsqueeze": "unsqueeze",
    "gather": "gather",
    "histogram": "histogram",
    "topk": "topk",
    "cast": "cast",
    "item": "item",
    "store": "store",
    "atomic_add": "atomic_add",
    "atomic_max": "atomic_max",
    "atomic_min": "atomic_min",
    "atomic_and": "atomic_and",
    "atomic_or": "atomic_or",
    "atomic_xor": "atomic_xor",
    "atomic_xchg": "atomic_xchg",
    "atomic_cas": "atomic_cas",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "cdiv": "cdiv",
    "sqrt_rn": "sqrt_rn",
    "advance": "advance",
}


# Attributes of a tensor that are not methods (tensor_attribute).
TENSOR_ATTRIBUTES = frozenset({"dtype", "shape", "type", "numel", "T"})


class BoundMethod:
    """`x.sum` before it is called: the builtin name and the tensor it applies to."""

    def __init__(self, value: tensor, builtin: str):
        self.value = value
        self.builtin = builtin


class ExpressionsMixin:
    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        values = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                values.extend(self.visit(elt.value))
            else:
                values.append(self.visit(elt))
        return tuple(values)

    visit_List = visit_Tuple

    def visit_Dict(self, node: ast.Dict) -> dict:
        """A dict of compile-time keys (tl.extern_elementwise's argument-types -> symbol table)."""
        out = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                out.update(unwrap(self.visit(value)))
                continue
            k = unwrap(self.visit(key))
            if isinstance(k, tensor):
                raise self.error("dict keys in a kernel must be compile-time values")
            out[k] = self.visit(value)
        return out

    def visit_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                inner = self.visit(value.value)
                if isinstance(inner, tensor):
                    raise self.error(
                        "f-strings can only format compile-time values",
                        hint="use tl.device_print(prefix, value) for runtime values",
                    )
                spec = self.visit(value.format_spec) if value.format_spec else ""
                parts.append(format(unwrap(inner), spec))
        return "".join(parts)

    # -- attributes -------------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = unwrap(self.visit(node.value))
        name = node.attr
        if isinstance(base, tensor):
            return self.tensor_attribute(base, name)
        if (
            name == "type"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.constexpr_names
        ):
            return core.constexpr_type(base)
        methods = getattr(
            type(base), "__tile_methods__", None
        )  # e.g. a tensor descriptor's load/store
        if methods and name in methods:
            return BoundMethod(base, methods[name])
        try:
            return getattr(base, name)
        except AttributeError:
            if is_number(base) and name in TENSOR_ATTRIBUTES:
                # `value = 1; value.dtype`: Triton makes an assigned number a tensor; here it stays a
                # number, and reads the type it would have as one (int32, int64, fp32, int1)
                return self.tensor_attribute(self.sem.to_tensor(base), name)
            if is_number(base) and not isinstance(base, bool) and name in TENSOR_METHODS:
                # `n.to(tl.int64)` where the launch specialized n == 1 into a constant: Triton fails
                # here (its issue #2939); the number becomes a scalar tensor instead.
                return BoundMethod(self.sem.to_tensor(base), TENSOR_METHODS[name])
            raise self.error(
                f"{type(base).__name__} has no attribute `{name}`",
                hint=missing_attribute_hint(base, name),
            ) from None

    def tensor_attribute(self, value: tensor, name: str) -> Any:
        if name == "dtype":
            return value.dtype
        if name == "shape":
            return tuple(value.shape)
        if name == "type":
            return value.type
        if name == "numel":
            return value.numel
        if name == "T":
            return self.call_builtin("trans", [value], {})
        if name in TENSOR_METHODS:
            return BoundMethod(value, TENSOR_METHODS[name])
        raise self.error(f"a tensor has no attribute `{name}`")

    # -- operators ----------------------------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.visit(node.left), self.visit(node.right)
        return self.binary(type(node.op), left, right)

    def binary(self, op_type, left, right) -> Any:
        left, right = unwrap(left), unwrap(right)
        if not isinstance(left, tensor) and not isinstance(right, tensor):
            if op_type not in _PY_BINOPS:
                raise self.error(f"operator {op_type.__name__} is not supported")
            return _PY_BINOPS[op_type](left, right)
        if op_type is ast.Pow:
            raise self.error(
                "`**` is not supported on tensors", hint="use libdevice.pow(x, y) or x * x"
            )
        if op_type is ast.MatMult:
            return self.call_builtin("dot", [left, right], {})
        if op_type not in _SEM_BINOPS:
            raise self.error(f"operator {op_type.__name__} is not supported on tensors")
        return getattr(self.sem, _SEM_BINOPS[op_type])(left, right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = unwrap(self.visit(node.operand))
        if not isinstance(operand, tensor):
            return {
                ast.USub: operator.neg,
                ast.UAdd: operator.pos,
                ast.Not: operator.not_,
                ast.Invert: operator.invert,
            }[type(node.op)](operand)
        if isinstance(node.op, ast.USub):
            return self.sem.neg(operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Invert):
            return self.sem.invert(operand)
        return self.sem.not_(operand)

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = unwrap(self.visit(node.left))
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = unwrap(self.visit(comparator))
            one = self.compare(type(op), left, right)
            result = one if result is None else self.logical_and(result, one)
            left = right
        return result

    def compare(self, op_type, left, right) -> Any:
        if op_type in (ast.Is, ast.IsNot, ast.In, ast.NotIn):
            if isinstance(left, tensor) or isinstance(right, tensor):
                if op_type in (ast.Is, ast.IsNot) and (left is None or right is None):
                    return op_type is ast.IsNot
                raise self.error("`is`/`in` compare compile-time values only")
            return _PY_CMP[op_type](left, right)
        if not isinstance(left, tensor) and not isinstance(right, tensor):
            return _PY_CMP[op_type](left, right)
        return self.sem.compare(_CMP[op_type], left, right)

    def logical_and(self, a, b) -> Any:
        if not isinstance(a, tensor) and not isinstance(b, tensor):
            return a and b
        return self.sem.logical("and", a, b)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result = unwrap(self.visit(node.values[0]))
        for value_node in node.values[1:]:
            if not isinstance(result, tensor):
                # Python short-circuits on compile-time values.
                if (not result) if is_and else result:
                    return result
                result = unwrap(self.visit(value_node))
                continue
            value = unwrap(self.visit(value_node))
            result = self.sem.logical("and" if is_and else "or", result, value)
        return result

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        condition = unwrap(self.visit(node.test))
        if not isinstance(condition, tensor):
            return self.visit(node.body if condition else node.orelse)
        condition = self.scalar_condition(condition, "if-expression")
        blocks, values = [], []
        for branch in (node.body, node.orelse):
            block = Block()
            with self.builder.at_end(block):
                values.append(unwrap(self.visit(branch)))
            blocks.append(block)
        if (
            values[0] is None and values[1] is None
        ):  # `tl.store(...) if c else tl.store(...)`: effects only
            for block in blocks:
                with self.builder.at_end(block):
                    self.builder.create(scf.YieldOp, values=[])
            self.builder.create(
                scf.IfOp,
                [],
                condition=condition.handle,
                then_region=Region([blocks[0]]),
                else_region=Region([blocks[1]]),
            )
            return None
        if values[0] is None or values[1] is None:
            raise self.error(
                "one side of the if-expression has no value (a tl.store?) and the other has one",
                hint="give both sides a value, or write an if statement",
            )
        values = [self._branch_tensor(block, value) for block, value in zip(blocks, values)]
        a, b = values
        if a.type != b.type:
            raise self.error(
                f"the two sides of the if-expression differ: {a.type!r} and {b.type!r}"
            )
        for block, value in zip(blocks, values):
            with self.builder.at_end(block):
                self.builder.create(scf.YieldOp, values=[value.handle])
        op = self.builder.create(
            scf.IfOp,
            [a.handle.type],
            condition=condition.handle,
            then_region=Region([blocks[0]]),
            else_region=Region([blocks[1]]),
        )
        return tensor(op.result, a.type)

    def _branch_tensor(self, block: Block, value: Any) -> tensor:
        with self.builder.at_end(block):
            return self.sem.to_tensor(value)

    # -- subscripts -----------------------------------------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = unwrap(self.visit(node.value))
        index = self.visit(node.slice)
        if not isinstance(base, tensor):
            if isinstance(index, tensor):
                raise self.error("cannot index a compile-time value with a runtime value")
            return base[unwrap(index)]
        return self.index_tensor(base, index if isinstance(index, tuple) else (index,))

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = [
            self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)
        ]
        return slice(*parts)

    def index_tensor(self, value: tensor, index: tuple) -> tensor:
        """`x[None, :]` / `x[:, None]`: only full slices and None (new axes) are allowed, as in Triton."""
        dim = 0
        for item in index:
            if item is None:
                value = self.sem.expand_dims(value, dim)
                dim += 1
            elif isinstance(item, slice) and item == slice(None, None, None):
                dim += 1
            else:
                raise self.error(
                    f"unsupported tensor index: {item!r}; tiles can only be indexed with `:` "
                    "and `None`",
                    hint="load the element you need with tl.load, or use tl.where / tl.sum",
                )
        return value  # trailing dimensions not mentioned are kept, as in NumPy

    # -- calls -----------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.extend(unwrap(self.visit(arg.value)))
            else:
                args.append(self.visit(arg))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(unwrap(self.visit(kw.value)))
            else:
                kwargs[kw.arg] = self.visit(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args: list, kwargs: dict, node: ast.AST | None = None) -> Any:
        fn = unwrap(fn)
        if isinstance(fn, BoundMethod):
            from ..language import standard

            method = getattr(
                standard, fn.builtin, None
            )  # x.sigmoid(), x.softmax(): language functions
            if getattr(method, "__tile_language_function__", False):
                return self.inline(method, [fn.value, *args], kwargs, node)
            return self.call_builtin(fn.builtin, [fn.value, *args], kwargs)
        name = getattr(fn, "__tile_builtin__", None)
        if name is not None:
            return self.call_builtin(name, args, kwargs)
        if getattr(fn, "__tile_jit__", False):
            return self.inline(fn.fn, args, kwargs, node)
        if getattr(fn, "__tile_language_function__", False):
            return self.inline(fn, args, kwargs, node)
        if fn is core.constexpr:
            return unwrap(args[0])
        if fn in (core.range, core.static_range, range):
            if fn is core.static_range:
                return core.static_range(*[unwrap(a) for a in args], **kwargs)
            return core.range(
                *[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()}
            )
        if isinstance(fn, core.dtype):
            raise self.error(f"a dtype is not callable; use x.to({fn!r})")
        from .calls import python_builtin

        handled, result = python_builtin(self, fn, args, kwargs)
        if handled:
            return result
        if _compile_time_callable(fn) and not any(isinstance(unwrap(a), tensor) for a in args):
            return fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
        name = getattr(fn, "__name__", repr(fn))
        raise self.error(
            f"cannot call the plain Python function `{name}` from a kernel",
            hint=f"decorate `{name}` with @tw.jit to make it a device function",
        )

    def call_builtin(self, name: str, args: list, kwargs: dict) -> Any:
        from .calls import BUILTIN_IMPLS

        impl = BUILTIN_IMPLS.get(name)
        if impl is None:
            raise self.error(f"tl.{name} is not implemented yet")
        try:
            bound = impl.signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            params = list(impl.signature.parameters.values())[1:]  # without the code generator
            shown = impl.signature.replace(parameters=params)
            raise self.error(
                f"wrong arguments for tl.{name}: {exc}", hint=f"the signature is tl.{name}{shown}"
            ) from None
        bound.apply_defaults()
        return impl(*bound.args, **bound.kwargs)

    def inline(
        self, fn, args: list, kwargs: dict, node: ast.AST | None, elementwise: bool = False
    ) -> Any:
        from .codegen import MAX_INLINE_DEPTH, CodeGenerator
        from .source import get_source

        if self.depth >= MAX_INLINE_DEPTH:
            raise self.error(
                f"@jit calls nest deeper than {MAX_INLINE_DEPTH}: is `{fn.__name__}` recursive?",
                hint="kernels cannot recurse; write a loop",
            )
        signature = inspect.signature(fn)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(
                f"wrong arguments for `{fn.__name__}`: {exc}",
                hint=f"the signature is {fn.__name__}{signature}",
            ) from None
        bound.apply_defaults()
        scope = {name: unwrap(value) for name, value in bound.arguments.items()}
        source = get_source(fn)
        call_site = self.loc(node) if node is not None else self.builder.loc
        child = CodeGenerator(
            source,
            self.builder,
            scope,
            self.kernel_name,
            call_site,
            self.depth + 1,
            self.num_warps,
            debug=self.debug,
        )
        child.elementwise = elementwise or self.elementwise
        child.visit_body(source.tree.body)
        return child.scope.get("__return__")


def _compile_time_callable(fn) -> bool:
    """Classes and methods of compile-time values (`x.dtype.is_floating()`, `NAME.startswith("a")`):
    evaluated by Python while the kernel compiles."""
    if inspect.isclass(fn):
        return True
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, core.dtype):
        return inspect.ismethod(fn)
    return isinstance(owner, (str, int, float, tuple, bytes))


def missing_attribute_hint(base: Any, name: str) -> str | None:
    """`tl.tanh` and friends are not in `triton.language`: point at libdevice, as Triton's users do."""
    from ..language.extra.libdevice import FUNCTIONS

    if getattr(base, "__name__", "").startswith("tileworkbench.language") and name in FUNCTIONS:
        return (
            f"`{name}` is a libdevice function, not part of tl (as in Triton): "
            "`from tileworkbench.language.extra import libdevice` (Triton: "
            f"`from triton.language.extra import libdevice`), then `libdevice.{name}(x)`"
        )
    return None
