"""Source-line maps of NVIDIA's stages: PTX (`.loc` directives) and SASS (nvdisasm's line comments);
the `tile-gpu` and `llvm` maps are the shared lowering's (backends/llvm/debuginfo.py)."""

from __future__ import annotations

import re

from ..llvm.debuginfo import add_line

_PTX_LOC = re.compile(r"^\s*\.loc\s+[0-9]+\s+([0-9]+)")


def ptx_line_map(text: str) -> dict[int, list[int]]:
    """Every PTX instruction line after a `.loc F L C` directive belongs to line L."""
    table: dict[int, list[int]] = {}
    current = 0
    for i, line in enumerate(text.splitlines(), start=1):
        m = _PTX_LOC.match(line)
        if m:
            current = int(m.group(1))
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith(("//", ".", "$", "{", "}")) and current:
            add_line(table, current, i)
    return table


_SASS_LINE = re.compile(r'//## File ".*", line ([0-9]+)')


def sass_line_map(text: str) -> dict[int, list[int]]:
    """nvdisasm `--print-line-info` comments (`//## File "add.py", line 5`) before instructions."""
    table: dict[int, list[int]] = {}
    current = 0
    for i, line in enumerate(text.splitlines(), start=1):
        m = _SASS_LINE.search(line)
        if m:
            current = int(m.group(1))
        elif current and line.strip().startswith("/*") and ";" in line:
            add_line(table, current, i)
    return table
