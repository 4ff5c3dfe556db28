"""The `--profile` section of a report: the kernel's measured rates and top stalls in words, a table
of counters per source line beside the code (hottest lines marked), the roofline point from measured
bytes and FLOPs, and for the hottest lines their PTX and the SASS it became, linked both ways (anchor
links, so the static HTML needs no script). Where nothing was measured, one line says why and what
the report shows instead.
"""

from __future__ import annotations

import html
import itertools
from typing import Any

from .profile import INSTRUCTIONS, SAMPLES, SHOWN, Profile, check_totals
from .hot_marks import HOT_STYLE, mark_hot  # noqa: F401  (re-exported: the views and tests)
from .sass_link import PtxInstr, SassInstr, link

_uids = itertools.count()
PAD = "padding:1px 6px;white-space:nowrap"  # cells apart: "0 mio_throttle", not "0mio_throttle"
INSTEAD = (
    "shown instead: the compiled stages (SASS where nvdisasm is installed), the counts from "
    "the IR and the roofline from array sizes"
)


def _si(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    # down to nano: a kernel's time reads "62.5 \u00b5s", not "6.25e-05 s"
    for scale, prefix in (
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "\u00b5"),
        (1e-9, "n"),
    ):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


class UnavailableSection:
    """`--profile` where ncu could not measure: the reason and what is shown instead."""

    title = "profile (Nsight Compute)"

    def __init__(self, reason: str):
        self.reason = reason

    def line(self) -> str:
        return f"no profile: {self.reason}; {INSTEAD}"

    def text(self) -> list[str]:
        return [self.line()]

    def html(self) -> str:
        return f'<p class="twprof-none">{html.escape(self.line())}</p>'


class ProfileSection:
    """The measured profile of one launch, attributed to its source lines."""

    title = "profile (Nsight Compute, measured)"

    def __init__(
        self,
        profile: Profile,
        source_lines: dict[int, str] | None = None,
        sass: list[SassInstr] | None = None,
        ptx: list[PtxInstr] | None = None,
        peaks: Any = None,
        compute: str = "fp32",
    ):
        self.profile = profile
        self.peaks = peaks  # the device's ceilings (measured where %tilekernel_peaks ran)
        self.compute = compute
        self.source_lines = source_lines or {}
        self.sass = sass or []
        self.ptx = ptx or []
        self.links = link(self.ptx, self.sass) if self.ptx and self.sass else None
        self.columns = [(c, h) for c, h in SHOWN if c in profile.columns]

    def hot_marks(self) -> dict[int, str]:
        """Line -> its "hot #k" note, for the source view (hot_marks.mark_hot)."""
        return _hot_marks(self)

    # -- shared ---------------------------------------------------------------------------------------
    def headline(self) -> list[str]:
        p, s = self.profile, self.profile.summary()
        lines = [
            (
                f"{p.kernel}: {_si(s['seconds'], 's')}, DRAM {_si(s['dram_bytes_per_s'], 'B/s')}, "
                f"L2 {_si(s['l2_bytes_per_s'], 'B/s')}, achieved occupancy "
                f"{_pct(s['achieved_occupancy_pct'])}, tensor pipe {_pct(s['tensor_pipe_pct'])} "
                f"({p.source})"
            )
        ]
        for i, note in enumerate(p.stalls, start=1):
            lines.append(f"stall {i}: {note.words()}")
        point = p.roofline_point(compute=self.compute)
        if point is not None:
            rate = point.achieved
            bound = None
            if self.peaks is not None:
                from .roofline import bound_of

                bound = bound_of(point, self.peaks)
            lines.append(
                f"roofline (measured): {_si(point.flops, 'FLOP')} over {_si(point.bytes, 'B')} of "
                f"DRAM traffic = {point.intensity:.3g} FLOP/B"
                + (f", {_si(rate, 'FLOP/s')}" if rate else "")
                + (f", {bound.label()} on {self.peaks.device}" if bound is not None else "")
            )
        problems = check_totals(p)
        lines.append(
            "per-line sums equal ncu's kernel totals"
            if not problems
            else "per-line sums differ from ncu's totals: " + "; ".join(problems)
        )
        if p.unmatched:
            lines.append(f"{p.unmatched} SASS rows of ncu were not in the launch's cubin (line 0)")
        return lines

    def rows(self) -> list[tuple[int, bool, list[str], str, str]]:
        """(line, hot, counter cells, top stall, source text) for every line with counters."""
        hot = set(self.profile.hottest())
        out = []
        for number in sorted(self.profile.lines):
            lc = self.profile.lines[number]
            cells = [f"{lc.get(c):.0f}" for c, _ in self.columns]
            stall = max(
                ((r, v) for r, v in lc.stalls.items() if r != "selected"),
                key=lambda kv: kv[1],
                default=("", 0.0),
            )
            text = self.source_lines.get(
                number,
                "(no line info)" if number == 0 else "(a line of a @jit callee or tl function)",
            )
            out.append((number, number in hot, cells, stall[0] if stall[1] else "", text.strip()))
        return out

    # -- text -------------------------------------------------------------------------------------------
    def text(self) -> list[str]:
        lines = self.headline()
        heads = ["line"] + [h for _, h in self.columns] + ["top stall", "source"]
        lines.append("  ".join(heads))
        for number, hot, cells, stall, text in self.rows():
            mark = "*" if hot else " "
            lines.append(f"{mark}{number:>4}  " + "  ".join(cells) + f"  {stall or '-'}  {text}")
        return lines

    # -- HTML -------------------------------------------------------------------------------------------
    def html(self) -> str:
        uid = f"twprof{next(_uids)}"
        head = "".join(f"<li>{html.escape(line)}</li>" for line in self.headline())
        ths = "".join(
            f'<th style="{PAD}">{html.escape(h)}</th>'
            for h in ["line", *[h for _, h in self.columns], "top stall", "source"]
        )
        trs = []
        for number, hot, cells, stall, text in self.rows():
            style = ' style="background:#fde2e1;font-weight:bold"' if hot else ""
            tds = "".join(f'<td style="text-align:right;{PAD}">{c}</td>' for c in cells)
            anchor = (
                f'<a href="#{uid}-l{number}">{number}</a>' if hot and self.sass else str(number)
            )
            trs.append(
                f'<tr class="s{number}"{style}><td style="{PAD}">{anchor}</td>{tds}'
                f'<td style="{PAD}">{html.escape(stall)}</td>'
                f'<td style="{PAD}"><code>{html.escape(text)}</code></td></tr>'
            )
        table = (
            f'<table class="twprof" style="border-collapse:collapse;font-size:12px">'
            f"<tr>{ths}</tr>{''.join(trs)}</table>"
        )
        # the PTX or SASS row a link lands on is marked (a static page keeps <style>)
        target = (
            f"<style>#{uid} div[id]:target {{background: #ffe58a; scroll-margin-top: 4em}}</style>"
        )
        return (
            f'<div id="{uid}">{target}<ul>{head}</ul>{table}{self._roofline_html()}'
            f"{self._links_html(uid)}</div>"
        )

    def _roofline_html(self) -> str:
        """The measured point on this device's roofline (DRAM and L2 slopes, compute roofs)."""
        point = self.profile.roofline_point(compute=self.compute)
        if point is None or self.peaks is None or not point.seconds:
            return ""
        import base64

        from .roofline import Roofline

        png = base64.b64encode(Roofline([point], self.peaks).to_bytes("png")).decode()
        return (
            f'<img alt="roofline from measured bytes and FLOPs" src="data:image/png;base64,{png}">'
        )

    def _links_html(self, uid: str) -> str:
        """For each hot line: its PTX and its SASS side by side, each instruction a link to the
        instruction(s) it became / came from."""
        if not self.sass:
            return ""
        per_pc = self._per_pc()
        parts = []
        for number in self.profile.hottest():
            ptx_rows = []
            for p in (p for p in self.ptx if p.line == number):
                targets = self.links.ptx_to_sass.get(p.index, []) if self.links else []
                text = html.escape(p.text)
                if targets:
                    text = f'<a href="#{uid}-s{targets[0]}">{text}</a>'
                ptx_rows.append(f'<div id="{uid}-p{p.index}">{text}</div>')
            sass_rows = []
            # the NOPs that pad the code after EXIT never run: left out, counted
            nops = sum(1 for s in self.sass if s.line == number and s.mnemonic == "NOP")
            for s in (s for s in self.sass if s.line == number and s.mnemonic != "NOP"):
                back = self.links.sass_to_ptx.get(s.index, []) if self.links else []
                text = html.escape(f"/*{s.pc:04x}*/ {s.text}")
                if back:
                    text = f'<a href="#{uid}-p{back[0]}">{text}</a>'
                count = per_pc.get(s.index, "")
                sass_rows.append(
                    f'<div id="{uid}-s{s.index}">{text} '
                    f'<span style="color:#888">{count}</span></div>'
                )
            if nops:
                sass_rows.append(f'<div style="color:#888">({nops} NOPs of padding left out)</div>')
            parts.append(
                f'<h4 id="{uid}-l{number}">line {number}: '
                f"<code>{html.escape(self.source_lines.get(number, '').strip())}</code></h4>"
                '<div style="display:flex;gap:1em;font:11px monospace">'
                f'<div style="flex:1"><b>PTX</b>{"".join(ptx_rows)}</div>'
                f'<div style="flex:1"><b>SASS</b> (executed, samples){"".join(sass_rows)}</div>'
                "</div>"
            )
        return "".join(parts)

    def _per_pc(self) -> dict[int, str]:
        """SASS index -> "executed, samples" of that instruction."""
        by_pc = self.profile.by_pc
        return {
            s.index: f"{by_pc[s.pc][0]:.0f}, {by_pc[s.pc][1]:.0f}"
            for s in self.sass
            if s.pc in by_pc
        }


def hot_lines(report: Any) -> dict[int, str]:
    """Line -> "hot #k: ..." for the hottest source lines of the report's measured profile (none
    without one): the source view marks them, not only the profile table."""
    section = next(
        (s for s in getattr(report, "sections", []) if isinstance(s, ProfileSection)), None
    )
    return {} if section is None else section.hot_marks()


def _hot_marks(section: ProfileSection) -> dict[int, str]:
    prof = section.profile
    key = SAMPLES if prof.column_total(SAMPLES) else INSTRUCTIONS
    total = prof.column_total(key) or 1.0
    what = "stall samples" if key == SAMPLES else "instructions executed"
    marks = {}
    for rank, number in enumerate(prof.hottest(), start=1):
        lc = prof.lines[number]
        stall = max(
            ((r, v) for r, v in lc.stalls.items() if r != "selected"),
            key=lambda kv: kv[1],
            default=("", 0.0),
        )
        marks[number] = f"hot #{rank}: {100 * lc.get(key) / total:.0f}% of {what}" + (
            f", mostly {stall[0]}" if stall[1] else ""
        )
    return marks


def profile_section(report: Any) -> Any:
    """Profile the report's launch; a ProfileSection, or an UnavailableSection saying why not."""
    from .ncu import NcuUnavailable
    from .profile import profile_launch
    from .sass_link import parse_ptx, parse_sass

    try:
        prof = profile_launch(report)
    except NcuUnavailable as exc:
        return UnavailableSection(str(exc))
    asm = report.asm
    sass = parse_sass(asm["sass"]) if "sass" in asm else []
    ptx = parse_ptx(asm["ptx"]) if "ptx" in asm else []
    compute = getattr(getattr(report, "point", None), "compute", "fp32")
    return ProfileSection(
        prof, report.source_lines, sass, ptx, getattr(report, "peaks", None), compute
    )


def config_label(record: Any) -> str:
    """`BLOCK=1024 num_warps=4`: the constexprs and launch options of a launch's compiled kernel."""
    meta = getattr(record.compiled, "metadata", None)
    parts = [f"{k}={v}" for k, v in (getattr(meta, "constexprs", None) or {}).items()]
    parts += [f"{k}={getattr(meta, k)}" for k in ("num_warps", "num_stages") if hasattr(meta, k)]
    return " ".join(parts)


class SweepProfileSection:
    """`--sweep` with `--profile`: one row per config with its time, DRAM bandwidth and top stall."""

    title = "sweep profile (Nsight Compute, measured)"

    def __init__(self, rows: list[tuple[str, Any]]):
        self.rows = rows  # (config label, ProfileSection or UnavailableSection)

    def cells(self) -> list[tuple[str, str, str, str]]:
        out = []
        for label, section in self.rows:
            if not isinstance(section, ProfileSection):
                out.append((label, "n/a", "n/a", section.line()))
                continue
            s = section.profile.summary()
            top = (
                section.profile.stalls[0].words() if section.profile.stalls else "no stall samples"
            )
            out.append((label, _si(s["seconds"], "s"), _si(s["dram_bytes_per_s"], "B/s"), top))
        return out

    def text(self) -> list[str]:
        return [f"{label}: {t}, DRAM {bw}, top stall: {top}" for label, t, bw, top in self.cells()]

    def html(self) -> str:
        head = "<tr><th>config</th><th>time</th><th>DRAM</th><th>top stall</th></tr>"
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self.cells()
        )
        return f'<table class="twprof">{head}{body}</table>'


def recorded_profiles(name: str) -> list[ProfileSection]:
    """The profiles saved in notebooks/data/<name>.json (`tileworkbench profile --json` on a GPU, with
    "device" and "date" added), as sections that say where and when they were measured; [] when
    there is no such file (a missing record is reported by the caller, never invented)."""
    import json

    from .profile import Profile
    from .recorded import data_dirs

    for folder in data_dirs():
        path = folder / f"{name}.json"
        if path.is_file():
            data = json.loads(path.read_text())
            sections = []
            for entry in data["profiles"]:
                prof = Profile.from_json(entry["profile"])
                prof.source = f"recorded on {data['device']}, {data['date']}"
                sections.append(
                    ProfileSection(prof, {int(k): v for k, v in entry["source"].items()})
                )
            return sections
    return []
