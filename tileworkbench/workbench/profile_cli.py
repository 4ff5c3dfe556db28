"""`tileworkbench profile FILE.py`: run a script that launches tileworkbench kernels, then profile each
launch under Nsight Compute exactly as `%%tilekernel --profile` does (profile.py), printing the
per-line table, or writing it as JSON (`--json`) or a static HTML page (`--html`).

    tileworkbench profile examples/add.py                  # every kernel the script launched
    tileworkbench profile examples/add.py --kernel add_kernel --json add.json
    tileworkbench profile --recorded notebooks/data/profile_softmax.json   # a saved profile, no GPU

Without a GPU or ncu the script still runs (in the interpreter) and each launch gets one line saying
what could not be measured, and the static report (stages, counts) is printed instead.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from pathlib import Path


def add_parser(sub) -> None:
    """Register the `profile` subcommand on cli.py's subparsers."""
    prof = sub.add_parser(
        "profile",
        help="profile a script's kernel launches with Nsight Compute, per source line",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    prof.add_argument(
        "file", nargs="?", default=None, help="a Python script that launches tileworkbench kernels"
    )
    prof.add_argument("--kernel", "-k", default=None, help="profile only this kernel's launches")
    prof.add_argument("--json", default=None, help="write the profiles as JSON to this file")
    prof.add_argument("--html", default=None, help="write the report pages as HTML to this file")
    prof.add_argument(
        "--recorded",
        default=None,
        help="show a profile saved with --json (no GPU needed) instead of a script",
    )
    prof.set_defaults(func=cmd_profile)


def _run_script(path: str) -> list:
    from ..runtime.record import record_launches

    if not os.path.isfile(path):
        raise SystemExit(f"error: no such file: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    with record_launches() as launches:
        runpy.run_path(path, run_name="__main__")
    return list(launches)


def cmd_profile(args: argparse.Namespace) -> int:
    from .profile import Profile
    from .profile_view import ProfileSection

    if args.recorded:
        data = json.loads(Path(args.recorded).read_text())
        for entry in data if isinstance(data, list) else [data]:
            section = ProfileSection(
                Profile.from_json(entry["profile"]),
                {int(k): v for k, v in entry.get("source", {}).items()},
            )
            print("\n".join(section.text()))
        return 0
    if not args.file:
        raise SystemExit("error: give a FILE.py to run (or --recorded FILE.json)")
    from .build import ReportOptions, report_for_launch
    from .cellrun import group_launches
    from .gpu_stages import add_gpu_stages
    from .launch_views import add_launch_sections
    from .profile_view import ProfileSection, profile_section

    records = _run_script(args.file)
    if args.kernel:
        records = [r for r in records if r.compiled.name == args.kernel]
    if not records:
        print(
            f"{args.file} launched no tileworkbench kernel"
            + (f" named {args.kernel}" if args.kernel else ""),
            file=sys.stderr,
        )
        return 1
    reports, saved = [], []
    for record, count in group_launches(records):
        report = report_for_launch(record, ReportOptions(roofline=False), count)
        add_gpu_stages(report, record)  # an interpreter launch still shows what it compiles to
        add_launch_sections(report, record)
        section = profile_section(report)
        report.sections.insert(0, section)
        reports.append(report)
        print(f"== {report.name} (grid {report.grid}) ==")
        if isinstance(section, ProfileSection):
            print("\n".join(section.text()))
            saved.append(
                {
                    "profile": section.profile.to_json(),
                    "source": {str(k): v for k, v in report.source_lines.items()},
                }
            )
        else:  # the one line saying why, inside the static report shown instead
            print("\n".join(report.summary_lines()))
    if args.json:
        Path(args.json).write_text(json.dumps(saved, indent=1))
    if args.html:
        from .html_view import page

        Path(args.html).write_text(page(reports, title=f"tileworkbench profile: {args.file}"))
    return 0
