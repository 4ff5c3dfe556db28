"""Static HTML of a report, readable with no stylesheet, no script and no trust: each stage is a
`<details>` section (the overview open, one section at a time where `name` groups them), with inline
styles that JupyterLab's sanitizer keeps. So a stored notebook opened before Run All (untrusted: its
`<style>` and `<script>` are dropped), GitHub's renderer and an offline `nbconvert --to html` export
all show one readable panel at a time. The `<style>` is enhancement only: colours, and source-line
linking without JavaScript (each kernel line is the label of a hidden radio, and one CSS rule per line
highlights the `sN` lines of every stage); the script then scrolls each panel to those lines.
Stage HTML is rendered once and cached on the report.
"""

from __future__ import annotations

import base64
import html
import itertools
import re

from .highlight import pygments_css, render_stage
from .linking import static_script
from .ssa_diff import diff_rows, ir_line_map, render_rows
from .text_view import performance_lines, resources_line

_ids = itertools.count()
HIGHLIGHT = "#ffe58a"

BASE_CSS = """
.twr {font-family: system-ui, sans-serif; font-size: 13px; border: 1px solid #ccc;
  border-radius: 6px; padding: 6px 8px; margin: 4px 0; background: #fff; color: #222}
.twr input.twradio {display: none}
.twr .twhead {font-weight: 600; margin-bottom: 4px}
.twr details.twtab > summary:hover, .twr details.twpass > summary:hover {background: #eef}
.twr details.twtab[open] > summary {background: #f3f3f3}
.twr pre.twhl {max-height: 520px; overflow: auto; margin: 0; padding: 4px; background: #fafafa;
  font-size: 12px; line-height: 1.35}
.twr .twl {display: inline-block; width: 100%}
.twr .twno {color: #999; user-select: none}
.twr label.twline {cursor: pointer; display: inline-block; width: 100%}
.twr label.twline:hover {background: #eef}
.twr .twnote {color: #666; font-size: 12px; margin: 3px 0}
.twr table.twtable {border-collapse: collapse; font-size: 12px}
.twr table.twtable td, .twr table.twtable th {border: 1px solid #ddd; padding: 2px 6px;
  text-align: left}
.twr .twpass {color: #060} .twr .twfail {color: #b00; font-weight: 600}
.twr .twadd {color: #060; background: #e8f7e8; display: inline-block; width: 100%}
.twr .twdel {color: #900; background: #fbe9e9; display: inline-block; width: 100%}
.twr .twhunk {color: #05a; display: inline-block; width: 100%}
.twr .twerror {color: #b00; white-space: pre-wrap; font-family: monospace}
.twr pre.twhl .twl[class*=" s"] {cursor: pointer}
.twr .twwarn {color: #a60; font-weight: 600}
"""


# Inline styles: what JupyterLab's sanitizer keeps of untrusted output (it drops <style>)
ROOT_STYLE = (
    "font-family: system-ui, sans-serif; font-size: 13px; border: 1px solid #ccc; "
    "border-radius: 6px; padding: 6px 8px; margin: 4px 0; background: #fff; color: #222"
)
SUMMARY_STYLE = "cursor: pointer; padding: 2px 6px; font-weight: 600"
PASS_SUMMARY_STYLE = "cursor: pointer; padding: 1px 6px; font-family: monospace"
PANEL_STYLE = "padding: 4px 0 8px 14px"
PRE_STYLE = (
    "max-height: 520px; overflow: auto; margin: 0; padding: 4px; background: #fafafa; "
    "font-size: 12px; line-height: 1.35"
)
HIDDEN = 'hidden style="display: none"'  # the attribute for sanitizers that drop styles


def _uid() -> str:
    return f"twr{next(_ids)}"


def stage_html(report, stage: str, compact: bool = False) -> str:
    """The highlighted HTML of one stage (plain text where `compact`), rendered once per report."""
    cache = report.__dict__.setdefault("_html_cache", {})
    key = (stage, compact) if compact else stage
    if key not in cache:
        cache[key] = render_stage(
            report.asm[stage], stage, report.line_map.get(stage), colour=not compact
        )
    return cache[key]


def pass_html(report, index: int) -> tuple[str, str]:
    """(highlighted IR, diff against the previous pass modulo value names) of pass `index`, rendered
    once. Both carry `sN` classes from the IR's `loc(...)`, so source-line linking reaches them."""
    cache = report.__dict__.setdefault("_pass_cache", {})
    if index not in cache:
        _, text = report.passes[index]
        cache[index] = render_stage(text, "tile", ir_line_map(text))
    return cache[index], pass_diff_html(report, index)


def pass_rows(report, index: int) -> list:
    """Pass `index`'s diff rows against the previous pass (modulo value names), computed once:
    the flags and the rendered diff both read them."""
    cache = report.__dict__.setdefault("_diff_rows", {})
    if index not in cache:
        cache[index] = diff_rows(report.passes[index - 1][1], report.passes[index][1])
    return cache[index]


def pass_diff_html(report, index: int) -> str:
    """Pass `index`'s diff against the previous pass (modulo value names), rendered once."""
    cache = report.__dict__.setdefault("_diff_cache", {})
    if index not in cache:
        cache[index] = (
            render_rows(pass_rows(report, index), report.passes[index][0])
            if index
            else '<div class="twnote">before it: (nothing); the IR as the frontend built it</div>'
        )
    return cache[index]


def pass_flags(report) -> list[bool]:
    """Which passes changed the IR (value names ignored; the first, the input IR, counts as a
    change), computed once per report."""
    if "_pass_flags" not in report.__dict__:
        report.__dict__["_pass_flags"] = [True] + [
            any(row.kind != "=" for row in pass_rows(report, i))
            for i in range(1, len(report.passes))
        ]
    return report.__dict__["_pass_flags"]


def first_changed(report) -> int:
    flags = pass_flags(report)
    return next((i for i in range(1, len(flags)) if flags[i]), 0)


def roofline_png(report) -> str | None:
    """The report's roofline as a base64 PNG, drawn once."""
    if report.point is None or not report.show_roofline:
        return None
    if "_png" not in report.__dict__:
        report.__dict__["_png"] = base64.b64encode(report.roofline().to_bytes("png")).decode()
    return report.__dict__["_png"]


def overview_html(report, with_png: bool = True) -> str:
    """Resources, work and time, the check, the roofline and the autotuner table."""
    parts = []
    res = resources_line(report)
    if res:
        parts.append(f"<div><b>Resources</b>: {html.escape(res)}</div>")
    parts.extend(resource_detail_html(report))
    ptxas = (report.metadata.get("resources") or {}).get("ptxas_output")
    if ptxas:
        parts.append(
            f"<details><summary>ptxas says</summary><pre>{html.escape(ptxas)}</pre></details>"
        )
    for line in performance_lines(report):
        css = ' class="twwarn"' if line.startswith("warning:") else ""
        parts.append(f"<div{css}>{html.escape(line)}</div>")
    if report.check is not None:
        cls = "twpass" if report.check.passed else "twfail"
        parts.append(
            f'<div><b>Check</b>: <span class="{cls}">'
            f"{html.escape(report.check.summary())}</span></div>"
        )
        if report.check.hint:
            parts.append(f'<div class="twnote">hint: {html.escape(report.check.hint)}</div>')
    notes = report.notes + (report.counts.notes if report.counts else [])
    parts.extend(f'<div class="twnote">{html.escape(n)}</div>' for n in notes)
    if report.autotune:
        parts.append(autotune_html(report.autotune))
    png = roofline_png(report) if with_png else None
    if png:
        parts.append(
            f'<img alt="roofline" src="data:image/png;base64,{png}" style="max-width:680px">'
        )
    if report.triton is not None:
        parts.append(triton_html(report.triton))
    return "\n".join(parts) or '<div class="twnote">nothing measured</div>'


def resource_detail_html(report) -> list[str]:
    """The shared-memory plan as a table (region, offset, bytes, detail; the total against the block
    limit) and the tensor-core instruction counts per stage."""
    from ..runtime.resource_summary import counts_text, plan_row, total_text

    res = report.resources
    if res is None:
        return []
    parts = []
    if res.shared_plan:
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in plan_row(e)) + "</tr>"
            for e in res.shared_plan
        )
        parts.append(
            "<div><b>Shared memory</b>: "
            f"{html.escape(total_text(res.shared_plan, res.shared_limit))}</div>"
            '<table class="twtable"><tr><th>region</th><th>at</th><th>size</th><th>holds</th></tr>'
            f"{rows}</table>"
        )
    for stage, counts in res.instructions.items():
        if counts:
            parts.append(
                f"<div><b>{html.escape(stage)} instructions</b> (static counts): "
                f"{html.escape(counts_text(counts))}</div>"
            )
    return parts


def autotune_html(rows) -> str:
    body = "".join(
        f"<tr><td>{html.escape(r.config)}</td><td>{'' if r.ms is None else f'{r.ms:.4g}'}</td>"
        f"<td>{html.escape(r.resources())}</td>"
        f"<td>{r.status}</td><td>{html.escape(r.reason)}</td>"
        f"<td>{html.escape(r.cost())}</td><td>{html.escape(r.where)}</td></tr>"
        for r in rows
    )
    return (
        '<div><b>Autotuner</b></div><table class="twtable"><tr><th>config</th><th>ms</th>'
        "<th>resources</th><th>status</th><th>why</th><th>cost</th><th>where</th></tr>"
        f"{body}</table>"
    )


def triton_html(triton) -> str:
    if triton.error:
        return f'<div><b>Triton</b>: <span class="twerror">{html.escape(triton.error)}</span></div>'
    time = html.escape(triton.timing.summary()) if triton.timing else "not timed"
    return f"<div><b>Triton</b>: {time}; stages: {', '.join(triton.asm)}</div>"


def _source_panel(report, uid: str) -> str:
    """The kernel source with each line a label for its line-linking radio."""
    rows = []
    linked = set(report.linked_lines())
    for line, text in sorted(report.source_lines.items()):
        mapped = line in linked
        label = (
            f'<label class="twline" for="{uid}-src-{line}" title="highlight what line {line} '
            f'became">'
            if mapped
            else '<span class="twl">'
        )
        end = "</label>" if mapped else "</span>"
        rows.append(
            f'{label}<span class="twno">{line:>4}</span> <span class="twl s{line}">'
            f"{html.escape(text) or ' '}</span>{end}"
        )
    hint = (
        '<div class="twnote">click a line: what it became is highlighted in every stage tab</div>'
    )
    from .hot_marks import mark_hot

    # a measured profile's section names its hot lines (profile_view.ProfileSection.hot_marks)
    marks = next(
        (s.hot_marks() for s in getattr(report, "sections", []) if hasattr(s, "hot_marks")), {}
    )
    if marks:
        hint += (
            '<div class="twnote">bold behind a red bar: the hottest lines of the measured '
            "profile</div>"
        )
    return hint + '<pre class="twhl">' + mark_hot("\n".join(rows), marks) + "</pre>"


def _passes_panel(report, uid: str, compact: bool = False) -> str:
    """One folded section per pass, the first that changed the IR open; one open at a time."""
    sections = []
    flags, opened = pass_flags(report), first_changed(report)
    for i, (name, _) in enumerate(report.passes):
        is_open = " open" if i == opened else ""
        same = "" if flags[i] else " twsame"
        style = PASS_SUMMARY_STYLE + ("" if flags[i] else "; color: #999")
        title = "" if flags[i] else ' title="changed nothing"'
        diff = pass_diff_html(report, i)
        if compact:  # diffs only (the IR is not even highlighted)
            ir = (
                f'<div class="twnote">(run the cell for the whole IR after each pass, or read '
                f"report.passes[{i}][1])</div>"
            )
        elif not flags[i]:  # the static page holds each IR once: an unchanged pass points back
            before = next(j for j in range(i - 1, -1, -1) if j == 0 or flags[j])
            ir = (
                f'<div class="twnote">the IR after {html.escape(name)} is the IR after pass '
                f"{before}. {html.escape(report.passes[before][0])}, values renamed at most"
                "</div>"
            )
        else:
            ir = pass_html(report, i)[0]
        sections.append(
            f'<details class="twpass twpp-{i}{same}" name="{uid}-pass"{is_open}>'
            f'<summary style="{style}"{title}>{i}. {html.escape(name)}'
            f"{' (changed nothing)' if not flags[i] else ''}</summary>"
            f'<div style="{PANEL_STYLE}"><h4>after {html.escape(name)}</h4>'
            f"<b>diff against the previous pass</b>{diff}<b>IR</b>{ir}</div></details>"
        )
    return (
        '<div class="twnote">grey: the pass changed nothing; diffs ignore renamed values</div>'
        + '<div class="twpassbody">'
        + "".join(sections)
        + "</div>"
    )


def render_report(report, compact: bool = False) -> str:
    """The whole report as one self-contained HTML fragment. `compact` (what stored notebooks keep,
    a fifth of the size) leaves out the colours and the IR after each pass; the diffs stay."""
    uid = _uid()
    tabs = [("overview", "overview", overview_html(report))]
    for stage in report.shown_stages:
        if stage == "source":
            body = _source_panel(report, uid)
        else:
            body = stage_html(report, stage, compact)
        tabs.append((stage, stage, body))
    if report.passes:
        tabs.append(("passes", "passes", _passes_panel(report, uid, compact)))
    if report.triton is not None:
        for stage, text in report.triton.asm.items():
            tabs.append(
                (
                    f"triton-{stage}",
                    f"triton {stage}",
                    render_stage(text, "llvm" if stage == "llir" else stage),
                )
            )
    return _assemble(report, uid, tabs)


def _assemble(report, uid: str, tabs: list[tuple[str, str, str]]) -> str:
    radios, sections, rules = [], [], []
    for line in report.linked_lines():
        radios.append(
            f'<input type="radio" class="twradio" name="{uid}-src" id="{uid}-src-{line}" {HIDDEN}>'
        )
        rules.append(f"#{uid}-src-{line}:checked ~ .twpanels .s{line} {{background: {HIGHLIGHT}}}")
    for i, (key, title, body) in enumerate(tabs):
        is_open = " open" if i == 0 else ""
        sections.append(
            f'<details class="twtab twp-{key}" name="{uid}-tab"{is_open}>'
            f'<summary style="{SUMMARY_STYLE}">{html.escape(title)}</summary>'
            f'<div class="twpanel" style="{PANEL_STYLE}">{body}</div></details>'
        )
    head = html.escape(report.__repr__().split("\n")[0])
    style = BASE_CSS + pygments_css() + "\n" + "\n".join(rules)
    return (
        f'<div class="twr" id="{uid}" style="{ROOT_STYLE}"><style>{_scope(style, uid)}</style>'
        f'<div class="twhead" style="font-weight: 600; margin-bottom: 4px">{head}</div>'
        + "".join(radios)
        + '<div class="twpanels">'
        + "".join(sections).replace('<pre class="twhl">', f'<pre class="twhl" style="{PRE_STYLE}">')
        + "</div>"
        + sections_html(report)
        + "</div>"
        + static_script(uid)
    )


def sections_html(report) -> str:
    """The report's extra sections (sections.py), each folded under its title, open."""
    return "".join(
        f'<details open class="twsection"><summary><b>{html.escape(section.title)}</b></summary>'
        f"{section.html()}</details>"
        for section in report.sections
    )


def _scope(css: str, uid: str) -> str:
    """Scope `.twr` rules to this report's id, so two reports on a page do not fight."""
    return re.sub(r"(^|[\s,}])\.twr\b", lambda m: f"{m.group(1)}#{uid}", css)


def page(reports: list, title: str = "tileworkbench report", extra: str = "") -> str:
    """A standalone HTML page with several reports."""
    body = "\n".join(r._repr_html_() for r in reports)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body style='max-width:1100px;margin:auto'><h2>{html.escape(title)}</h2>"
        f"{extra}{body}</body></html>"
    )
