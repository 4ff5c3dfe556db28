"""pytest plugin: every test's outcome appended to a JSON-lines file as it happens, so a run that is
killed (a timeout, a crash, a lost CUDA context) keeps what it did; tests already in the file are
deselected, so a second run over the same file resumes where the first stopped.

    python -m pytest -p pytest_outcomes --outcomes=run.jsonl ...     (tools/ on PYTHONPATH)

Records: {"event": "collected", "count"}, {"event": "start", "test", "time", "own_process"},
{"event": "outcome", "test", "file", "outcome" (passed, failed, error, skipped, xfailed, xpassed),
"error" (the failure's first line, or a skip's reason), "duration"}, {"event": "finished",
"exitstatus", "stopped" (why the session stopped early, or "")}. tools/gpu_language_suite.py drives
it and summarizes the file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--outcomes", default=None, help="append each test's outcome to this JSON-lines file"
    )


def read_records(path: Path) -> list[dict]:
    """The records of an outcomes file (a line cut short by a killed run is dropped)."""
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


class _Recorder:
    def __init__(self, path: Path):
        self.path = path
        self.done = {r["test"] for r in read_records(path) if r.get("event") == "outcome"}
        self.reported: set[str] = set()

    def write(self, **record) -> None:
        with self.path.open("a") as stream:
            stream.write(json.dumps(record) + "\n")

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
    def pytest_collection_modifyitems(self, config, items):
        kept = [item for item in items if item.nodeid not in self.done]
        dropped = [item for item in items if item.nodeid in self.done]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        self.write(event="collected", count=len(items), resumed=len(dropped))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # own_process: tests/cuda_guard.py runs it in a child process (which takes longer)
        self.write(
            event="start",
            test=item.nodeid,
            time=time.time(),
            own_process=item.get_closest_marker("gpu_isolated") is not None,
        )

    def pytest_runtest_logreport(self, report):
        outcome = _outcome(report)
        if outcome is None or (report.nodeid in self.reported and report.when != "teardown"):
            return  # a failing teardown after the call is recorded too (the last record counts)
        self.reported.add(report.nodeid)
        self.write(
            event="outcome",
            test=report.nodeid,
            file=report.location[0],
            outcome=outcome,
            error=_first_line(report) if outcome not in ("passed", "xpassed") else "",
            duration=round(report.duration, 3),
        )

    def pytest_sessionfinish(self, session, exitstatus):
        self.write(
            event="finished", exitstatus=int(exitstatus), stopped=str(session.shouldstop or "")
        )


def _outcome(report) -> str | None:
    """The test's outcome from this phase's report; None while it is still undecided."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "setup":
        if report.failed:
            return "error"
        return "skipped" if report.skipped else None
    if report.when == "call":
        if xfail:
            return "xfailed" if report.skipped else "xpassed"
        return report.outcome
    return "error" if report.failed else None  # teardown: only a failure there changes the outcome


def _first_line(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def pytest_configure(config):
    path = config.getoption("outcomes")
    if path:
        config.pluginmanager.register(_Recorder(Path(path)), "outcomes_recorder")
