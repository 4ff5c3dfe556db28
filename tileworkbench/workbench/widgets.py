"""The interactive view of a report (ipywidgets, imported only here).

Tabs: overview, one per stage, passes (pick a pass: its IR and a diff against the previous one), and
Triton's stages under `--compare triton`. A source-line picker highlights what a kernel line became
in every stage by rewriting one small <style> widget; stage HTML is rendered once, on first view.
"""

from __future__ import annotations

import base64
import html
import itertools

from .highlight import pygments_css
from .html_view import (
    BASE_CSS,
    HIGHLIGHT,
    first_changed,
    overview_html,
    pass_flags,
    pass_html,
    roofline_png,
    stage_html,
)
from .linking import make_linker

_ids = itertools.count()


def _html(widgets, value: str, uid: str):
    return widgets.HTML(f'<div class="twr {uid}">{value}</div>')


class ReportWidget:
    """Builds and wires the widget tree of one report; `.root` is the displayable widget."""

    def __init__(self, report):
        import ipywidgets as widgets

        self.widgets = widgets
        self.report = report
        self.uid = f"twrw{next(_ids)}"
        self.style = widgets.HTML(self._style(None))
        # the linker scrolls panels to the chosen line and reports clicks on code lines
        self.linker = make_linker(self.uid)
        self.line_picker = self._line_picker()
        self.tab_keys: list[str] = []
        self.tabs = self._tabs()
        header = widgets.HTML(f"<b>{html.escape(repr(report).splitlines()[0])}</b>")
        rows = [self.style, header]
        if self.line_picker is not None:
            rows.append(self.line_picker)
        if self.linker is not None:
            self.linker.observe(lambda change: self.select_line(change["new"]), names="line")
            rows.append(self.linker)
        self.root = widgets.VBox(rows + [self.tabs] + self._extras())
        self.root.add_class(self.uid)
        self.root.report_widget = self  # reachable from tests and from the notebook

    # -- source-line linking ------------------------------------------------------------------------
    def _style(self, line: int | None) -> str:
        css = (
            (BASE_CSS + pygments_css())
            .replace(".twr ", f".{self.uid} ")
            .replace(".twr {", f".{self.uid} {{")
        )
        if line is not None:
            css += f"\n.{self.uid} .s{line} {{background: {HIGHLIGHT}}}"
        return f"<style>{css}</style>"

    def _line_picker(self):
        report = self.report
        options = [("(no line)", None)]
        for line in report.linked_lines():
            options.append((f"{line}: {report.source_lines[line].strip()[:60]}", line))
        if len(options) == 1:
            return None
        picker = self.widgets.Dropdown(
            options=options,
            value=None,
            description="source line",
            style={"description_width": "auto"},
            layout=self.widgets.Layout(width="520px"),
        )
        picker.observe(lambda change: self.select_line(change["new"]), names="value")
        return picker

    def select_line(self, line: int | None) -> dict[str, list[int]]:
        """Highlight the lines `line` became in every stage (and the passes), scroll every panel to
        its first match; returns the lines by stage. A click on any code line lands here too."""
        if line is not None and line not in self.report.source_lines:
            line = None
        self.style.value = self._style(line)
        if self.line_picker is not None and self.line_picker.value != line:
            choices = {value for _, value in self.line_picker.options}
            if line in choices:
                self.line_picker.value = line
        if self.linker is not None and self.linker.line != line:
            self.linker.line = line
        return self.report.stage_lines_for(line) if line is not None else {}

    # -- tabs ---------------------------------------------------------------------------------------
    def _tabs(self):
        widgets = self.widgets
        children, titles = [self._overview()], ["overview"]
        self.tab_keys = ["overview"]
        for stage in self.report.shown_stages:
            children.append(widgets.HTML(""))  # filled on first view
            titles.append(stage)
            self.tab_keys.append(stage)
        if self.report.passes:
            children.append(self._passes())
            titles.append("passes")
            self.tab_keys.append("passes")
        if self.report.triton is not None:
            for stage in self.report.triton.asm:
                children.append(widgets.HTML(""))
                titles.append(f"triton {stage}")
                self.tab_keys.append(f"triton:{stage}")
        tabs = widgets.Tab(children=children)
        tabs.titles = tuple(titles)
        tabs.observe(lambda change: self.show_tab(change["new"]), names="selected_index")
        return tabs

    def show_tab(self, index: int | None) -> None:
        """Render a stage tab's HTML the first time it is shown."""
        if index is None:
            return
        if self.linker is not None:
            self.linker.tick += 1  # the shown panel scrolls to the chosen line
        key, child = self.tab_keys[index], self.tabs.children[index]
        if key in ("overview", "passes") or child.value:
            return
        if key.startswith("triton:"):
            from .highlight import render_stage

            stage = key.split(":", 1)[1]
            text = self.report.triton.asm[stage]
            child.value = _html(
                self.widgets, render_stage(text, "llvm" if stage == "llir" else stage), self.uid
            ).value
        elif key == "source":  # the hottest lines of a measured profile marked
            from .profile_view import hot_lines, mark_hot

            page = mark_hot(stage_html(self.report, key), hot_lines(self.report))
            child.value = _html(self.widgets, page, self.uid).value
        else:
            child.value = _html(self.widgets, stage_html(self.report, key), self.uid).value

    def stage_index(self, stage: str) -> int:
        return self.tab_keys.index(stage)

    def _overview(self):
        widgets = self.widgets
        body = overview_html(self.report, with_png=False)
        items = [_html(widgets, body, self.uid)]
        png = roofline_png(self.report)
        if png:
            items.append(
                widgets.Image(
                    value=base64.b64decode(png),
                    format="png",
                    layout=widgets.Layout(max_width="680px"),
                )
            )
        return widgets.VBox(items)

    def _passes(self):
        widgets = self.widgets
        flags = pass_flags(self.report)
        names = [
            f"{i}. {name}" + ("" if flags[i] else "  (changed nothing)")
            for i, (name, _) in enumerate(self.report.passes)
        ]
        opened = first_changed(self.report)
        self.pass_picker = widgets.Dropdown(
            options=list(zip(names, range(len(names)))),
            value=opened,
            description="after pass",
        )
        self.pass_diff = widgets.HTML()
        self.pass_ir = widgets.HTML()
        self.pass_picker.observe(lambda change: self.select_pass(change["new"]), names="value")
        self.select_pass(opened)
        return widgets.VBox(
            [
                self.pass_picker,
                widgets.HTML("<b>diff against the previous pass</b> (renamed values ignored)"),
                self.pass_diff,
                widgets.HTML("<b>IR after this pass</b>"),
                self.pass_ir,
            ]
        )

    def select_pass(self, index: int) -> None:
        ir, diff = pass_html(self.report, index)
        self.pass_ir.value = _html(self.widgets, ir, self.uid).value
        self.pass_diff.value = _html(self.widgets, diff, self.uid).value
        if self.linker is not None:
            self.linker.tick += 1

    def _extras(self) -> list:
        """The sections beyond the stages (what changed, sweep, access map, ...), one widget each."""
        out = []
        for section in self.report.sections:
            make = getattr(section, "widget", None)
            out.append(make(self.widgets, self.uid) if make else section_html_widget(section, self))
        return out


def section_html_widget(section, view: ReportWidget):
    """A section shown as its static HTML, folded under its title."""
    body = f"<details open><summary><b>{html.escape(section.title)}</b></summary>{section.html()}"
    return _html(view.widgets, body + "</details>", view.uid)


def build_widget(report):
    """The ipywidgets view of `report` (a VBox; `.report_widget` holds the controller)."""
    return ReportWidget(report).root
