"""The differential fuzzer's modules import each other by name (as tests/nvptx's do); at the end of
a session, its summary (fuzz_summary.py) goes to $FUZZ_SUMMARY when that is set."""

from __future__ import annotations

import os


def pytest_sessionfinish(session, exitstatus):
    from fuzz_summary import TALLY

    path = os.environ.get("FUZZ_SUMMARY")
    if path:
        TALLY.write(path)


def pytest_terminal_summary(terminalreporter):
    from fuzz_summary import TALLY

    for name, entry in TALLY.as_json()["tests"].items():
        counts = ", ".join(f"{target} {dict(c)}" for target, c in entry["targets"].items())
        seconds = ", ".join(f"{target} {s} s" for target, s in entry["seconds"].items())
        line = f"fuzz {name}: {entry['examples']} examples; {counts}; {seconds}"
        terminalreporter.write_line(line)
    if TALLY.tests:
        terminalreporter.write_line(f"fuzz: {TALLY.count} disagreement(s) found")
