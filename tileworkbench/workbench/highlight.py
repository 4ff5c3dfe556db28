"""Stage text -> highlighted HTML lines, rendered once per stage and reused by every view.

Each printed line is wrapped in `<span class="twl sN sM">` where N, M are the kernel source lines it came
from (inverted from the compiled kernel's line map), so source-line linking is one CSS rule, not a
re-render. Absurdly long text is capped so a notebook stays responsive.
"""

from __future__ import annotations

import difflib
import html

from pygments import highlight as _pygments_highlight
from pygments.formatters import HtmlFormatter

from .lexers import lexer_for

MAX_LINES = 6000  # beyond this a tab shows the head and says how to get the rest
CSS_CLASS = "twhl"


def invert_line_map(stage_map: dict[int, list[int]] | None) -> dict[int, list[int]]:
    """source line -> stage lines  becomes  stage line -> source lines."""
    out: dict[int, list[int]] = {}
    for src_line, lines in (stage_map or {}).items():
        for line in lines:
            out.setdefault(int(line), []).append(int(src_line))
    return out


def highlight_lines(text: str, stage: str) -> list[str]:
    """Highlighted HTML, one string per line of `text` (Pygments closes its spans at line ends)."""
    formatter = HtmlFormatter(nowrap=True, classprefix="tw-")
    body = _pygments_highlight(text, lexer_for(stage), formatter)
    lines = body.split("\n")
    if lines and lines[-1] == "" and not text.endswith("\n\n"):
        lines.pop()
    return lines


def render_stage(
    text: str, stage: str, line_map: dict[int, list[int]] | None = None, max_lines: int = MAX_LINES
) -> str:
    """`<pre>` of `text` with line numbers, highlighting and `sN` classes from `line_map`."""
    all_lines = text.split("\n")
    truncated = len(all_lines) > max_lines
    shown = "\n".join(all_lines[:max_lines]) if truncated else text
    sources = invert_line_map(line_map)
    width = len(str(min(len(all_lines), max_lines)))
    out = []
    for i, line_html in enumerate(highlight_lines(shown, stage), start=1):
        classes = " ".join(f"s{s}" for s in sorted(set(sources.get(i, ()))))
        number = f'<span class="twno">{i:>{width}}</span>'
        out.append(f'<span class="twl {classes}">{number} {line_html}</span>')
    note = ""
    if truncated:
        note = (
            f'<div class="twnote">showing the first {max_lines} of {len(all_lines)} lines; '
            f"the whole text is in <code>report.asm[{stage!r}]</code></div>"
        )
    return f'<pre class="{CSS_CLASS}">' + "\n".join(out) + "</pre>" + note


def render_diff(before: str, after: str, before_name: str, after_name: str) -> str:
    """A unified diff of two IR texts as coloured HTML (empty diff says so)."""
    diff = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), before_name, after_name, lineterm="", n=3
        )
    )
    if not diff:
        return f'<div class="twnote">{html.escape(after_name)} changed nothing.</div>'
    out = []
    for line in diff[:MAX_LINES]:
        kind = {"+": "twadd", "-": "twdel", "@": "twhunk"}.get(line[:1], "")
        if line.startswith(("+++", "---")):
            kind = "twhunk"
        out.append(f'<span class="{kind}">{html.escape(line)}</span>')
    return f'<pre class="{CSS_CLASS} twdiff">' + "\n".join(out) + "</pre>"


def pygments_css() -> str:
    """The colour rules for highlighted stages, scoped under `.twhl`."""
    rules = HtmlFormatter(style="default", classprefix="tw-").get_style_defs(f".{CSS_CLASS}")
    # Pygments also emits unscoped `pre`/`td.linenos` rules; keep only ours, so a page's style is safe.
    return "\n".join(r for r in rules.splitlines() if r.startswith(f".{CSS_CLASS}"))
