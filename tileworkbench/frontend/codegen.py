"""Python AST -> Tile IR. The visitor only dispatches: statements live in statements.py, expressions in
expressions.py, builtin calls in calls.py; typing rules in semantics.py.

One `CodeGenerator` lowers one function body. `@jit` callees and language functions are inlined by a child
generator that shares the builder and chains its call site into every location.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
from contextlib import contextmanager
from typing import Any, Iterator

from ..config import config
from ..errors import CompilationError
from ..ir.builder import Builder
from ..ir.location import Loc
from ..language import core
from .errors import located
from .expressions import ExpressionsMixin
from .semantics import Semantics
from .source import FunctionSource
from .statements import StatementsMixin

MAX_INLINE_DEPTH = 64

# Python builtins a kernel may use (on constexprs, or lowered specially in expressions.py).
ALLOWED_PY_BUILTINS = {
    "range",
    "min",
    "max",
    "len",
    "int",
    "float",
    "bool",
    "isinstance",
    "print",
    "abs",
    "getattr",
    "hasattr",
    "tuple",
    "list",
    "zip",
    "enumerate",
    "type",
    "repr",
    "str",
    "None",
    "True",
    "False",
    "ValueError",
    "TypeError",
    "AssertionError",
    "RuntimeError",
    "round",
    "sum",
    "all",
    "any",
    "reversed",
}


class CodeGenerator(StatementsMixin, ExpressionsMixin, ast.NodeVisitor):
    def __init__(
        self,
        source: FunctionSource,
        builder: Builder,
        scope: dict[str, Any],
        kernel_name: str,
        call_site: Loc | None = None,
        depth: int = 0,
        num_warps: int = 4,
        debug: bool = False,
    ):
        self.source = source
        self.num_warps = num_warps  # the launch's, for tl.extra.cuda.num_warps()
        self.debug = (
            debug  # debug mode: `tl.device_assert` and `assert` compile to checks (as Triton)
        )
        # inside tl.map_elementwise: a runtime `if` on a tile runs both branches and selects per element
        self.elementwise = False
        self.builder = builder
        self.sem = Semantics(builder)
        self.scope = scope
        self.kernel_name = kernel_name
        self.call_site = call_site
        self.depth = depth
        self.closure = source.closure_vars()
        self.returned = False
        # Names assigned in only one branch of a runtime `if`: for a clear error if used afterwards.
        self.branch_only: dict[str, int] = {}
        # Names bound as constexprs (constexpr parameters, `x: tl.constexpr = ...`): their `.type` is
        # Triton's constexpr_type, where a number assigned plainly reads the tensor type it lifts to
        self.constexpr_names: set[str] = set()

    # -- locations and errors ----------------------------------------------------------------------------
    def loc(self, node: ast.AST) -> Loc:
        line = self.source.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.source.indent
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_col is not None and end_line == getattr(node, "lineno", None):
            end_col += self.source.indent
        else:
            end_col = None
        return Loc(self.source.display_file, line, col, end_col, self.call_site)

    @contextmanager
    def at(self, node: ast.AST) -> Iterator[None]:
        """Build at `node`'s location; errors raised inside get that location (once, innermost wins)."""
        loc = self.loc(node)
        with self.builder.at_loc(loc):
            try:
                yield
            except CompilationError as exc:
                if exc.loc is not None:
                    raise
                # `__cause__` is the unplaced error, as in Triton (whose tests match its text there)
                raise located(exc, loc, self.kernel_name) from exc.with_traceback(None)
            except RecursionError:
                raise
            except Exception as exc:
                if config.debug_frontend:
                    raise
                error = CompilationError(f"{type(exc).__name__}: {exc}")
                raise located(error, loc, self.kernel_name) from exc.with_traceback(None)

    def error(self, message: str, hint: str | None = None) -> CompilationError:
        return CompilationError(message, hint=hint)

    # -- dispatch ------------------------------------------------------------------------------------------
    def visit(self, node: ast.AST) -> Any:
        with self.at(node):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is None:
                raise self.error(
                    f"Python syntax `{type(node).__name__}` is not supported in a kernel",
                    hint=_UNSUPPORTED_HINTS.get(type(node).__name__),
                )
            return method(node)

    def generic_visit(self, node: ast.AST) -> Any:
        raise self.error(f"Python syntax `{type(node).__name__}` is not supported in a kernel")

    # -- names -----------------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Any:
        if name in self.scope:
            return self.scope[name]
        if name in self.branch_only:
            raise self.error(
                f"`{name}` is assigned in only one branch of the `if` at line "
                f"{self.branch_only[name]}, so it is undefined here",
                hint=f"assign `{name}` before the `if` or in both branches",
            )
        if name in self.closure:
            return self._global_value(name, self.closure[name])
        if name in self.source.globals:
            return self._global_value(name, self.source.globals[name])
        if name in ALLOWED_PY_BUILTINS and hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        raise self.error(f"name `{name}` is not defined")

    def _global_value(self, name: str, value: Any) -> Any:
        if is_global_allowed(value):
            return value.value if isinstance(value, core.constexpr) else value
        if inspect.isfunction(value):
            raise self.error(
                f"cannot call the plain Python function `{name}` from a kernel",
                hint=f"decorate `{name}` with @tw.jit to make it a device function",
            )
        raise self.error(
            f"cannot access global variable `{name}` (a {type(value).__name__}) from a kernel: only "
            "constexpr globals, dtypes, modules and @jit functions can be read",
            hint=f"define it as `{name} = tl.constexpr({value!r})`"
            if isinstance(value, (int, float, bool))
            else "pass it as a kernel argument",
        )

    def set_name(self, name: str, value: Any) -> None:
        if (
            isinstance(value, core.tensor)
            and value.handle.name_hint is None
            and not name.startswith("_")
        ):
            value.handle.name_hint = name
        self.scope[name] = value
        self.branch_only.pop(name, None)
        self.constexpr_names.discard(name)


def is_global_allowed(value: Any) -> bool:
    """Globals a kernel may read: their values are compile-time constants tracked by the cache key."""
    import types

    if isinstance(value, (core.constexpr, core.dtype, types.ModuleType, type)):
        return True
    if getattr(value, "__tile_builtin__", None) or getattr(value, "__tile_jit__", False):
        return True
    if getattr(value, "__tile_language_function__", False):
        return True
    return value is None


_UNSUPPORTED_HINTS = {
    "Break": "kernels cannot `break`; put the exit test in a `while` condition",
    "Continue": "kernels cannot `continue`; guard the rest of the body with an `if`",
    "Lambda": "define a @tw.jit function instead",
    "ListComp": "use tl.static_range and tuples, or tile operations",
    "Try": "kernels cannot catch exceptions",
    "With": "kernels have no context managers",
    "Raise": "use tl.static_assert (compile time) or tl.device_assert (run time)",
}
