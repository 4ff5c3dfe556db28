"""The magic's session state and what it adds after a cell: the sweep, what changed since the last
run, and the export. One `WorkbenchSession` lives on each `TileKernelMagics` (not a module global), so
"the last run of this cell" means the last run in this notebook's kernel.
"""

from __future__ import annotations

import dataclasses

from .history import RunHistory, current_cell_id


class WorkbenchSession:
    """History of the notebook's cells, and the steps `%%tilekernel` runs after its reports exist."""

    def __init__(self):
        self.history = RunHistory()

    def validate(self, options) -> None:
        """Refuse a malformed or misplaced --sweep before the cell runs."""
        sweep = getattr(options, "sweep", None)
        if not sweep:
            return
        from .cellrun import UsageError
        from .sweep import parse_sweep

        if options.signature is not None:
            raise UsageError(
                "--sweep runs the cell's launches; it does not combine with --signature"
            )
        parse_sweep(sweep)

    def finish(self, shell, options, cell: str, reports: list, recorder) -> list:
        """Sweep (--sweep), diff against the last run, export (--export); returns the reports."""
        if getattr(options, "sweep", None) and reports:
            self._sweep(shell, options, cell, reports[0], recorder)
        kind = "compile-only" if getattr(options, "signature", None) else "launch"
        self.history.annotate(reports, (current_cell_id(shell), kind))
        folder = getattr(options, "export", None)
        if folder:
            for report in reports:
                written = report.export(folder)
                written.update(_export_profile(report, folder))
                report.notes.append("exported: " + ", ".join(written.values()))
        return reports

    def _sweep(self, shell, options, cell: str, report, recorder) -> None:
        from .build import report_for_launch
        from .cellrun import _target_scope, default_recorder, report_options, run_inner
        from .sweep import run_sweep

        # each config is timed; its roofline is left out (the sweep has its own plot)
        timed = dataclasses.replace(options, bench=options.bench or 20, no_roofline=True)

        profiled = []  # --profile: (config, its profile section), one per config (issue 22)

        def build(record):
            # --ref and --out are evaluated again after each run: the cell makes new arrays
            built = report_for_launch(record, report_options(shell, timed))
            if getattr(options, "profile", False):
                from .profile_view import config_label, profile_section

                built.record = record
                profiled.append((config_label(record), profile_section(built)))
            return built

        with _target_scope(options.target):  # `--target cpu`: the configs run there too
            section = run_sweep(
                shell, cell, options.sweep, recorder or default_recorder(), build, run_inner
            )
        report.sections.append(section)
        if profiled:
            from .profile_view import SweepProfileSection

            report.sections.append(SweepProfileSection(profiled))


def _export_profile(report, folder: str) -> dict[str, str]:
    """--export with --profile: the measured profile as JSON beside the HTML (issue 22), which
    `tileworkbench profile --recorded FILE` shows again without a GPU."""
    import json
    import re
    from pathlib import Path

    from .profile_view import ProfileSection

    sections = [s for s in report.sections if isinstance(s, ProfileSection)]
    if not sections:
        return {}
    path = Path(folder) / (re.sub(r"[^A-Za-z0-9_]", "_", report.name) + "_profile.json")
    path.write_text(
        json.dumps(
            [
                {
                    "profile": sections[0].profile.to_json(),
                    "source": {str(k): v for k, v in report.source_lines.items()},
                }
            ]
        )
    )
    return {"profile": str(path)}
