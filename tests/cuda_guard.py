"""The language suites on the `cuda` target, kept apart from the device's failures (a pytest plugin
that tests/conftest.py registers).

A kernel that stops the device (a trap, `__assertfail`, an illegal address) leaves the process's
CUDA context unusable: every later CUDA call fails with the same error. Two defences:

- `@pytest.mark.gpu_isolated`: on "cuda" the test runs in a Python process of its own (its outcome
  reported here), for tests whose kernels fail on the device on purpose (debug mode's device_assert
  and bounds reports) or print from it (`tl.device_print`).
- `device_stdout` (a fixture): what kernels printed, the GPU's printf buffer and C stdio flushed
  first (device printf reaches fd 1 through C stdio, which pytest's capsys does not see).
- After every test on "cuda" the context is probed; if it is lost, the session stops there with
  "CUDA context lost in <test>: <error>" instead of failing every test after it for a reason they do
  not share (a test that passed and left it lost, by an asynchronous fault, fails).
  `tools/gpu_language_suite.py` then resumes the remaining tests in a new process.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

_CHILD = "TILEWORKBENCH_TEST_ISOLATED_CHILD"  # set in the process an isolated test runs in
ISOLATED_TIMEOUT_S = 120


def _on_cuda(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("target") == "cuda"


def context_error() -> str | None:
    """None while the current CUDA context works; else the error a small round trip raises."""
    try:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()
        probe = cupy.arange(4, dtype=cupy.int32) + 1
        if probe.get().tolist() != [1, 2, 3, 4]:
            return "a probe kernel (arange + 1) gave a wrong result"
    except Exception as exc:  # noqa: BLE001 - any failure of the round trip: the context is gone
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@pytest.fixture
def device_stdout(capfd):
    """`device_stdout()`: what Python or a kernel wrote to stdout since the last call."""

    from tileworkbench.workbench.capture import synchronize_device

    def read() -> str:
        synchronize_device()  # flushes the device's printf buffer (where CuPy is in use)
        ctypes.CDLL(None).fflush(None)
        return capfd.readouterr().out

    return read


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A `gpu_isolated` test on "cuda": run it in a child pytest; pass, skip or fail as it did."""
    if os.environ.get(_CHILD) or not _on_cuda(pyfuncitem):
        return None
    if pyfuncitem.get_closest_marker("gpu_isolated") is None:
        return None
    env = dict(os.environ, **{_CHILD: "1"})
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-header",
        "-rs",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        pyfuncitem.nodeid,
    ]
    try:
        child = subprocess.run(
            command,
            cwd=pyfuncitem.config.rootpath,
            env=env,
            capture_output=True,
            text=True,
            timeout=ISOLATED_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"isolated on the GPU: no result after {ISOLATED_TIMEOUT_S} s (the kernel hangs?)",
            pytrace=False,
        )
    output = child.stdout + child.stderr
    tail = "\n".join(output.strip().splitlines()[-30:])
    if child.returncode == 0 and " passed" in output:
        return True
    if child.returncode == 0 and " skipped" in output:
        pytest.skip(_skip_reason(output))
    pytest.fail(f"isolated on the GPU (exit status {child.returncode}):\n{tail}", pytrace=False)


def _skip_reason(output: str) -> str:
    for line in output.splitlines():
        if line.startswith("SKIPPED"):
            return line.split(": ", 1)[-1]
    return "skipped in its own process"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """After a test on "cuda" ran (or failed to set up): stop the session if the CUDA context is
    lost. A test that passed and left it lost (an asynchronous fault) fails: its kernel did it."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped or not _on_cuda(item) or os.environ.get(_CHILD):
        return
    if report.passed and report.when != "call":
        return
    if item.get_closest_marker("gpu_isolated") is not None and report.when == "call":
        return  # it ran in its own process
    error = context_error()
    if error is None:
        return
    item.session.shouldstop = (
        f"CUDA context lost in {item.nodeid}: {error}; the tests after it "
        "did not run (tools/gpu_language_suite.py resumes them)"
    )
    if report.passed:
        report.outcome = "failed"
        report.longrepr = f"the test passed, but left the CUDA context lost: {error}"
    else:
        report.sections.append(("CUDA context", f"lost after this test: {error}"))
