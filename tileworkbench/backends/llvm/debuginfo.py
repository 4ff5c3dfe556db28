"""Debug line info for the LLVM module (each op's `loc` becomes a `DILocation`, so the PTX gets `.loc`
lines), and the source-line maps of the text stages (source line -> 1-based lines of that stage)."""

from __future__ import annotations

import os
import re

from llvmlite import ir

from ...ir.location import Loc
from .llvm_types import I32


class DebugInfo:
    """Owns the compile unit and subprogram of one kernel; `location(loc)` gives its DILocation."""

    def __init__(self, module: ir.Module, function: ir.Function, loc: Loc):
        path = loc.outermost.file if loc.line > 0 else "<unknown>"
        self.module = module
        file = module.add_debug_info(
            "DIFile",
            {"filename": os.path.basename(path), "directory": os.path.dirname(path) or "."},
        )
        # DebugDirectivesOnly: `.file`/`.loc` in the PTX without DWARF sections or a `debug` target,
        # so ptxas optimizes exactly as without line info.
        unit = module.add_debug_info(
            "DICompileUnit",
            {
                "language": ir.DIToken("DW_LANG_C"),
                "file": file,
                "producer": "tileworkbench",
                "isOptimized": True,
                "emissionKind": ir.DIToken("DebugDirectivesOnly"),
            },
            is_distinct=True,
        )
        kind = module.add_debug_info("DISubroutineType", {"types": module.add_metadata([])})
        line = max(loc.outermost.line, 0)
        self.subprogram = module.add_debug_info(
            "DISubprogram",
            {
                "name": function.name,
                "scope": file,
                "file": file,
                "line": line,
                "type": kind,
                "scopeLine": line,
                "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
                "unit": unit,
            },
            is_distinct=True,
        )
        function.set_metadata("dbg", self.subprogram)
        module.add_named_metadata("llvm.dbg.cu", unit)
        flags = (
            module.get_named_metadata("llvm.module.flags")
            if "llvm.module.flags" in module.namedmetadata
            else module.add_named_metadata("llvm.module.flags")
        )
        flags.add(
            module.add_metadata([ir.Constant(I32, 2), "Debug Info Version", ir.Constant(I32, 3)])
        )
        flags.add(module.add_metadata([ir.Constant(I32, 2), "Dwarf Version", ir.Constant(I32, 4)]))
        self.cache: dict[tuple[int, int], object] = {}
        self.default = self.location(loc)

    def location(self, loc: Loc):
        key = (max(loc.line, 0), max(loc.col, 0) + 1 if loc.line > 0 else 0)
        if key not in self.cache:
            self.cache[key] = self.module.add_debug_info(
                "DILocation", {"line": key[0], "column": key[1], "scope": self.subprogram}
            )
        return self.cache[key]


def add_line(table: dict[int, list[int]], source_line: int, line: int) -> None:
    """Record that `line` of a stage belongs to `source_line` (a run of lines once)."""
    if source_line > 0:
        lines = table.setdefault(source_line, [])
        if not lines or lines[-1] != line:
            lines.append(line)


def tile_line_map(lines) -> dict[int, list[int]]:
    """From `print_ir_lines` output: the kernel line of each printed op."""
    table: dict[int, list[int]] = {}
    for i, (_, loc) in enumerate(lines, start=1):
        if loc is not None:
            add_line(table, loc.line, i)
    return table


_DILOC = re.compile(r"^(![0-9]+) = !DILocation\(line: ([0-9]+)")
_DBG = re.compile(r"!dbg (![0-9]+)")


def llvm_line_map(text: str) -> dict[int, list[int]]:
    """Instructions carrying `!dbg !N` mapped through `!N = !DILocation(line: L, ...)`."""
    lines = text.splitlines()
    locs = {}
    for line in lines:
        m = _DILOC.match(line)
        if m:
            locs[m.group(1)] = int(m.group(2))
    table: dict[int, list[int]] = {}
    for i, line in enumerate(lines, start=1):
        m = _DBG.search(line)
        if m and m.group(1) in locs and not line.startswith("define"):
            add_line(table, locs[m.group(1)], i)
    return table
