"""Diagnostics in the format compilers print: place, message, the source line with carets, the chain of
inlined calls, and a hint."""

from __future__ import annotations

import linecache

from ..errors import CompilationError
from ..ir.location import Loc


def source_line(loc: Loc) -> str:
    return linecache.getline(loc.file, loc.line).rstrip("\n")


def format_diagnostic(
    loc: Loc, message: str, hint: str | None = None, kernel: str | None = None
) -> str:
    """`file:line:col: error: message`, the line, carets under the span, call chain and hint."""
    lines = [f"{loc}: error: {message}"]
    text = source_line(loc)
    if text:
        lines.append("    " + text)
        end = loc.end_col if loc.end_col and loc.end_col > loc.col else loc.col + 1
        lines.append("    " + " " * loc.col + "^" * (end - loc.col))
    call_site = loc.call_site
    first = True
    while call_site is not None:
        where = f"in {kernel}, " if first and kernel else ""
        lines.append(f"  {where}inlined from {call_site}")
        first = False
        call_site = call_site.call_site
    if kernel and loc.call_site is None:
        lines.append(f"  in {kernel}")
    if hint:
        lines.append(f"hint: {hint}")
    return "\n".join(lines)


def located(error: CompilationError, loc: Loc, kernel: str | None) -> CompilationError:
    """A copy of `error` (which has no place yet) with the place and carets filled in."""
    message = error.args[0] if error.args else str(error)
    new = type(error).__new__(type(error))
    CompilationError.__init__(
        new, format_diagnostic(loc, message, error.hint, kernel), loc=loc, hint=error.hint
    )
    new.plain_message = message
    return new
