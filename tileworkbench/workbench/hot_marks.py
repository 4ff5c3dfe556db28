"""Marking the hottest source lines in a report's source view: the HTML rewrite, kept apart from the
profile so that the static view (html_view.py) needs no profile module (export -> html_view ->
profile_view -> profile -> export was an import cycle). Sections that measured a profile say which
lines are hot through their `hot_marks()` method."""

from __future__ import annotations

import html
import re

HOT_STYLE = "font-weight:bold;border-left:3px solid #d33"
_SPAN = re.compile(r"<span\b[^>]*>|</span>")


def mark_hot(page: str, marks: dict[int, str]) -> str:
    """The source view's HTML with each hot line's row (`<span class="twl sN">`) in bold behind a
    red bar, its note after it; a style attribute, so JupyterLab's sanitizer keeps it."""
    for number, note in marks.items():
        opening = f'<span class="twl s{number}">'
        at = page.find(opening)
        if at < 0:
            continue
        # the row's own </span>: the highlighted text inside it nests spans of its own
        depth, pos = 1, at + len(opening)
        for tag in _SPAN.finditer(page, pos):
            depth += -1 if tag.group(0) == "</span>" else 1
            if depth == 0:
                pos = tag.start()
                break
        tail = (
            f'<span class="twhotnote" style="color:#b22;font-weight:normal">  \u25c0 '
            f"{html.escape(note)}</span>"
        )
        page = (
            page[:at] + f'<span class="twl s{number} twhot" style="{HOT_STYLE}" '
            f'title="{html.escape(note)}">' + page[at + len(opening) : pos] + tail + page[pos:]
        )
    return page
