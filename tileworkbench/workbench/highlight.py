"""Stage text -> highlighted HTML lines, rendered once per stage and reused by every view.

Each printed line is wrapped in `<span class="twl sN sM">` where N, M are the kernel source lines it came
from (inverted from the compiled kernel's line map), so source-line linking is one CSS rule, not a
re-render. Absurdly long text is capped so a notebook stays responsive.
"""

from __future__ import annotations

import difflib
import html

from functools import cache

from pygments.formatters import HtmlFormatter
from pygments.formatters.html import _get_ttype_class
from pygments.token import Whitespace

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
    """Highlighted HTML, one string per line of `text`.

    Only tokens the colour style styles get a span, and a run of tokens of one class gets one span:
    Pygments' own formatter wraps every space and comma, which made a stage's HTML ten times its
    text (a matmul report's LLVM tab: 576 kB for 52 kB of IR) and stored notebooks megabytes large.
    """
    lines: list[list[str]] = [[]]
    run_class, run_text = None, []

    def close_run() -> None:
        if run_text:
            body = html.escape("".join(run_text), quote=False)
            lines[-1].append(f'<span class="{run_class}">{body}</span>' if run_class else body)
            run_text.clear()

    for token_type, value in lexer_for(stage).get_tokens(text):
        css = _css_class(token_type)
        for i, piece in enumerate(value.split("\n")):
            if i:  # a line ends: spans never cross it
                close_run()
                lines.append([])
            if not piece:
                continue
            if css != run_class:
                close_run()
                run_class = css
            run_text.append(piece)
    close_run()
    out = ["".join(parts) for parts in lines]
    if len(out) > 1 and out[-1] == "" and not text.endswith("\n\n"):
        out.pop()  # the lexer's closing newline
    return out


@cache
def _css_class(token_type) -> str | None:
    """The `tw-` class of a token type, or None where the style gives it no look (plain text)."""
    style = HtmlFormatter(style="default").style
    while not style.styles_token(token_type) and token_type.parent is not None:
        # a lexer's own subtype (Name.Variable.Anonymous) looks as its parent does
        token_type = token_type.parent
    look = style.style_for_token(token_type)
    styled = look["color"] or look["bold"] or look["italic"] or look["bgcolor"] or look["underline"]
    if token_type in Whitespace or not styled:
        return None
    return "tw-" + _get_ttype_class(token_type)


def render_stage(
    text: str,
    stage: str,
    line_map: dict[int, list[int]] | None = None,
    max_lines: int = MAX_LINES,
    colour: bool = True,
) -> str:
    """`<pre>` of `text` with line numbers, highlighting (unless `colour` is False) and `sN` classes
    from `line_map`."""
    all_lines = text.split("\n")
    truncated = len(all_lines) > max_lines
    shown = "\n".join(all_lines[:max_lines]) if truncated else text
    sources = invert_line_map(line_map)
    width = len(str(min(len(all_lines), max_lines)))
    out = []
    if colour:
        lines = highlight_lines(shown, stage)
    else:
        lines = [html.escape(line, quote=False) for line in shown.split("\n")]
        if len(lines) > 1 and lines[-1] == "" and not shown.endswith("\n\n"):
            lines.pop()
    for i, line_html in enumerate(lines, start=1):
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
