"""Diffs of IR text modulo SSA renaming, for the passes view.

A pass that removes one op renumbers every `%N` after it; a plain text diff then shows the whole function.
Here lines are aligned by their shape with value names blanked out, and an aligned pair counts as equal
when the names agree under one consistent renaming (built from the aligned lines themselves), so only
real changes show.
"""

from __future__ import annotations

import difflib
import functools
import html
import re
from dataclasses import dataclass

VALUE = re.compile(r"%[A-Za-z_0-9.$-]+")
LOC = re.compile(r'loc\("(?:[^"\\]|\\.)*":(\d+)\)')
CONTEXT = 2


@dataclass(frozen=True)
class Row:
    """One line of a diff: '=' unchanged, '-' only before, '+' only after."""

    kind: str
    text: str


# Debug locations name the file and line, which change when a notebook cell is rerun (IPython's temp
# file names) or a line is inserted above; they are compared without their numbers and names.
# Each with a substring that a line must hold for the pattern to apply (a cheap test first).
DEBUG_LOCATION = [
    ('loc("', re.compile(r'\s*loc\("(?:[^"\\]|\\.)*":\d+\)'), ""),
    (".loc", re.compile(r"^(\s*\.loc)\s+\d+\s+\d+\s+\d+.*$"), r"\1"),
    (".file", re.compile(r'^(\s*\.file)\s+\d+\s+".*"'), r"\1"),
]


def _normal(line: str) -> str:
    for marker, pattern, replacement in DEBUG_LOCATION:
        if marker in line:
            line = pattern.sub(replacement, line)
    return line


@functools.lru_cache(maxsize=64)
def _normal_lines(text: str) -> tuple[list[str], list[str], list[str]]:
    """`text`'s lines, without debug locations, and their shapes (value names blanked); kept for
    the next diff, whose `before` is this one's `after` (a report's passes in order)."""
    lines = text.splitlines()
    normal = [_normal(line) for line in lines]
    return lines, normal, [VALUE.sub("%", line) for line in normal]


def _names(line: str) -> list[str]:
    return VALUE.findall(line)


def diff_rows(before: str, after: str) -> list[Row]:
    """Every line of `before` and `after` as diff rows, value names ignored where they correspond."""
    old, old_normal, old_shapes = _normal_lines(before)
    new, new_normal, new_shapes = _normal_lines(after)
    matcher = difflib.SequenceMatcher(None, old_shapes, new_shapes, False)
    opcodes = matcher.get_opcodes()
    rename: dict[str, str] = {}
    taken: set[str] = set()  # a renaming is one-to-one: two values merged by a pass is a change
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                for a, b in zip(_names(old[i]), _names(new[j])):
                    if a not in rename and b not in taken:
                        rename[a] = b
                        taken.add(b)
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                renamed = VALUE.sub(lambda m: _renamed(m.group(0), rename, taken), old_normal[i])
                if renamed == new_normal[j]:
                    rows.append(Row("=", new[j]))
                else:
                    rows += [Row("-", old[i]), Row("+", new[j])]
            continue
        if (
            tag == "replace" and i2 - i1 == j2 - j1
        ):  # line for line: each old line above its new one
            for i, j in zip(range(i1, i2), range(j1, j2)):
                rows += [Row("-", old[i]), Row("+", new[j])]
            continue
        rows += [Row("-", line) for line in old[i1:i2]]
        rows += [Row("+", line) for line in new[j1:j2]]
    return rows


def _renamed(name: str, rename: dict[str, str], taken: set[str]) -> str:
    """`name` under the renaming; a name the renaming left alone that another value took is no match."""
    if name in rename:
        return rename[name]
    return "%\0" + name if name in taken else name


def changed(before: str, after: str) -> bool:
    """Whether `after` differs from `before` other than by renaming values."""
    return any(row.kind != "=" for row in diff_rows(before, after))


def hunks(rows: list[Row], context: int = CONTEXT) -> list[list[Row]]:
    """The changed rows with `context` unchanged rows around them, in separate hunks."""
    keep = [False] * len(rows)
    for i, row in enumerate(rows):
        if row.kind != "=":
            for k in range(max(0, i - context), min(len(rows), i + context + 1)):
                keep[k] = True
    out: list[list[Row]] = []
    for i, row in enumerate(rows):
        if not keep[i]:
            continue
        if not out or not keep[i - 1]:
            out.append([])
        out[-1].append(row)
    return out


def source_line_of(line: str) -> int | None:
    """The kernel line in an IR line's `loc("file":N)`, for source-line linking in the passes view."""
    match = LOC.search(line)
    return int(match.group(1)) if match else None


def render_rows(rows: list[Row], after_name: str) -> str:
    """The hunks as coloured HTML; each line carries its `sN` class, so line linking reaches it."""
    parts = hunks(rows)
    if not parts:
        return (
            f'<div class="twnote">{html.escape(after_name)} changed nothing '
            "(value names ignored).</div>"
        )
    css = {"+": "twadd", "-": "twdel", "=": ""}
    mark = {"+": "+", "-": "-", "=": " "}
    out = []
    for hunk in parts:
        out.append('<span class="twhunk">@@</span>')
        for row in hunk:
            src = source_line_of(row.text)
            classes = f"twl {css[row.kind]}" + (f" s{src}" if src else "")
            out.append(f'<span class="{classes}">{mark[row.kind]}{html.escape(row.text)}</span>')
    added = sum(r.kind == "+" for r in rows)
    removed = sum(r.kind == "-" for r in rows)
    note = (
        f'<div class="twnote">{added} lines added, {removed} removed '
        "(renamed values are not changes)</div>"
    )
    return note + '<pre class="twhl twdiff">' + "\n".join(out) + "</pre>"


def pass_changes(passes: list[tuple[str, str]]) -> list[bool]:
    """For each pass: did it change the IR (the first entry, the input IR, counts as a change)."""
    return [True] + [changed(passes[i - 1][1], passes[i][1]) for i in range(1, len(passes))]


def first_changed_pass(passes: list[tuple[str, str]]) -> int:
    """The pass the passes view opens on: the first that changed something (else the input IR)."""
    flags = pass_changes(passes)
    return next((i for i in range(1, len(flags)) if flags[i]), 0)


def ir_line_map(text: str) -> dict[int, list[int]]:
    """source line -> IR lines, read from the `loc(...)` annotations of a printed IR."""
    out: dict[int, list[int]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        src = source_line_of(line)
        if src is not None:
            out.setdefault(src, []).append(number)
    return out
