"""The sections a launch adds to its report (the mismatch map and the whole-grid coverage of a
failed check, the memory access picture of program 0) and the view of a launch that failed out of
bounds (program id, bad offsets).
cellrun.py calls these; each is best effort: a view that cannot be drawn leaves a note, never an error.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import OutOfBoundsError, TileworkbenchError
from .access_map import AccessSection, launch_bytes, record_launch_program
from .coverage import coverage
from .mismatch import MismatchSection, block_size, mismatch_mask

ACCESS_MAP_LIMIT = 16 << 20  # bytes of arguments copied for the access picture without asking


def add_launch_sections(report, record: Any, out: Any = None, ref: Any = None) -> None:
    """Attach the mismatch map (when the check failed) and program 0's access picture."""
    report.record = record
    check = report.check
    if check is not None and not check.passed and check.error is None and out is not None:
        bad = mismatch_mask(out, ref, check.rtol, check.atol)
        report.sections.append(MismatchSection(bad, block_size(report)))
    if launch_bytes(record) > ACCESS_MAP_LIMIT:
        report.notes.append(
            "access picture left out (large arguments): "
            "tileworkbench.workbench.access_map(record, pid) draws it"
        )
        return
    if report.sections and isinstance(report.sections[-1], MismatchSection):
        try:  # a wrong answer: which programs wrote which elements (a missed or doubled block)
            report.sections.append(coverage(record))
        except (TileworkbenchError, KeyError, TypeError, ValueError) as exc:
            report.notes.append(f"no coverage view: {type(exc).__name__}: {exc}")
    try:
        report.sections.append(AccessSection(record_launch_program(record, (0, 0, 0))))
    except (TileworkbenchError, KeyError, TypeError, ValueError) as exc:
        report.notes.append(f"no access picture: {type(exc).__name__}: {exc}")


def failed_pid(error: BaseException) -> tuple[int, int, int] | None:
    """The program id an interpreter error names ("program id (x, y, z)")."""
    match = re.search(r"program id \((\d+), (\d+), (\d+)\)", str(error))
    return tuple(int(g) for g in match.groups()) if match else None


def failure_view(error: BaseException, launches: list) -> AccessSection | None:
    """For an out-of-bounds launch: what the failing program touched, the bad offsets in red."""
    pid = failed_pid(error)
    if not isinstance(error, OutOfBoundsError) or pid is None or not launches:
        return None
    record = launches[-1]
    if launch_bytes(record) > ACCESS_MAP_LIMIT:
        return None
    accesses = record_launch_program(record, pid)
    return AccessSection(accesses, title=f"the out-of-bounds access: program {pid}")
