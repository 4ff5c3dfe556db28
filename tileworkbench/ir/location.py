"""Source locations: every op carries a `Loc` so errors, the printer and the line map can name the kernel line."""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A place in a kernel's source. `call_site` chains the location of the call that inlined a `@jit` callee."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    call_site: Loc | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def printed(self) -> str:
        """The MLIR-like suffix `loc("add.py":5)`."""
        inner = f'loc("{_basename(self.file)}":{self.line})'
        if self.call_site is not None:
            return f"loc(callsite({inner[4:-1]} at {self.call_site.printed()[4:-1]}))"
        return inner

    @property
    def outermost(self) -> Loc:
        """The location in the kernel itself, following inlined call sites outward."""
        loc = self
        while loc.call_site is not None:
            loc = loc.call_site
        return loc


UNKNOWN = Loc("<unknown>", 0)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def describe_loc(loc: Loc) -> str:
    """`file:line: source text`, followed by `(inlined at file:line)` for each call site."""
    if loc.line <= 0:
        return "<unknown location>"
    text = f"{loc.file}:{loc.line}"
    source = linecache.getline(loc.file, loc.line).strip()
    if source:
        text += f": {source}"
    site = loc.call_site
    while site is not None:
        text += f" (inlined at {site.file}:{site.line})"
        site = site.call_site
    return text
