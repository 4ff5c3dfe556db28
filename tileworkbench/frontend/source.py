"""The source of a kernel or `@jit` helper: text, AST, file and first line, parsed once per function."""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
import textwrap
from dataclasses import dataclass
from typing import Callable

from ..errors import CompilationError


@dataclass
class FunctionSource:
    fn: Callable
    text: str
    tree: ast.FunctionDef
    file: str
    first_line: int
    indent: int  # columns removed by dedenting, added back to column numbers
    display_file: str  # what locations and errors show: `In[3]` for a notebook cell, else `file`

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def globals(self) -> dict:
        return self.fn.__globals__

    def closure_vars(self) -> dict:
        code = self.fn.__code__
        cells = self.fn.__closure__ or ()
        out = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                pass
        return out


_CACHE: dict[int, tuple[object, FunctionSource]] = {}


def get_source(fn: Callable) -> FunctionSource:
    """Parse `fn` (a plain Python function) once; cached by function identity."""
    hit = _CACHE.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise CompilationError(
            f"cannot read the source of {getattr(fn, '__name__', fn)!r}: {exc}. Kernels must be defined in a "
            "file or a notebook cell (not typed at a plain `python` prompt or built with exec)"
        ) from None
    file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    text = textwrap.dedent("".join(lines))
    module = ast.parse(text)
    tree = next(
        node for node in module.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    if not linecache.getline(file, first_line):
        # Functions from exec'd strings: register the text so diagnostics can show lines.
        linecache.cache[file] = (
            len(text),
            None,
            [""] * (first_line - 1) + text.splitlines(True),
            file,
        )
    indent = len(lines[0]) - len(lines[0].lstrip())
    source = FunctionSource(fn, text, tree, file, first_line, indent, display_file(file))
    _CACHE[id(fn)] = (fn, source)
    return source


def display_file(file: str) -> str:
    """The name locations and errors show for `file`: IPython's `In[3]` for code from a notebook cell
    (whose file is a temporary name such as /tmp/ipykernel_7/3352607288.py or <ipython-input-3-...>),
    the file itself otherwise. The cell's lines are registered under that name for error carets."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    label = getattr(getattr(shell, "compile", None), "format_code_name", None)
    try:
        named = label(file) if label is not None else None
    except Exception:  # noqa: BLE001 - an IPython without the map: keep the file name
        named = None
    if not named:
        return file
    name = named[1]
    lines = linecache.getlines(file)
    if lines:
        linecache.cache[name] = (sum(map(len, lines)), None, lines, name)
    return name
