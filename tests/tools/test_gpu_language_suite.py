"""tools/gpu_language_suite.py and tests/cuda_guard.py on a stand-in suite whose "cuda" tests pass,
fail, skip, lose the (simulated) CUDA context, hang, crash the process, or run isolated: every
outcome is counted in the JSON, each stop is resumed in a new process, and nothing after a stop is
lost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = textwrap.dedent("""
    import os, sys
    import pytest
    sys.path.insert(0, {tests!r})
    import cuda_guard

    # the simulated context is lost once a test of this process set FAKE_CONTEXT_LOST
    LOST = "CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS"
    cuda_guard.context_error = lambda: LOST if os.environ.get("FAKE_CONTEXT_LOST") else None


    def pytest_configure(config):
        config.addinivalue_line("markers", "gpu: on the GPU")
        config.addinivalue_line("markers", "gpu_isolated: own process")
        config.pluginmanager.register(cuda_guard, "cuda_guard")


    @pytest.fixture(params=[pytest.param("cuda", marks=pytest.mark.gpu), "interpreter"])
    def target(request):
        return request.param
""")

TESTS = textwrap.dedent('''
    import os, time
    import pytest

    FLAGS = os.path.dirname(__file__)


    def once(name):
        """True the first time `name` is asked for, in any process."""
        path = os.path.join(FLAGS, name + ".flag")
        if os.path.exists(path):
            return False
        open(path, "w").close()
        return True


    def test_1_passes(target):
        pass


    def test_2_fails(target):
        assert target != "cuda", "wrong on the GPU"


    def test_3_skips(target):
        pytest.skip("not meaningful here")


    def test_4_passes_but_loses_the_context(target):  # as an asynchronous fault does
        if target == "cuda" and once("lost"):
            os.environ["FAKE_CONTEXT_LOST"] = "1"


    def test_5_hangs(target):
        if target == "cuda":
            time.sleep(60)


    def test_6_crashes(target):
        if target == "cuda" and once("crash"):
            os._exit(3)


    @pytest.mark.gpu_isolated
    def test_7_isolated_fails(target):
        assert os.environ.get("TILEWORKBENCH_TEST_ISOLATED_CHILD"), "not in its own process"
        assert False, "device_assert failed as it should not"


    @pytest.mark.gpu_isolated
    def test_8_isolated_passes(target):
        assert os.environ.get("TILEWORKBENCH_TEST_ISOLATED_CHILD") or target != "cuda"


    def test_9_passes(target):
        pass
''')


def test_every_outcome_is_counted_and_each_stop_resumed(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.format(tests=str(ROOT / "tests")))
    (suite / "test_stand_in.py").write_text(TESTS)
    out = tmp_path / "summary.json"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "gpu_language_suite.py"),
            "--out",
            str(out),
            "--test-timeout",
            "8",
            "--budget",
            "100",
            "suite",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # some failed
    summary = json.loads(out.read_text())
    assert summary["totals"] == {"passed": 3, "failed": 5, "error": 0, "skipped": 1}, summary
    assert summary["not_run"] == 0 and summary["runs"] == 4
    assert list(summary["files"]) == ["suite/test_stand_in.py"]
    errors = {f["test"].split("::")[1]: f["error"] for f in summary["failures"]}
    assert errors["test_2_fails[cuda]"] == "AssertionError: wrong on the GPU"
    assert errors["test_4_passes_but_loses_the_context[cuda]"] == (
        "the test passed, but left the CUDA context lost: "
        "CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS"
    )
    assert "timed out after 8 s" in errors["test_5_hangs[cuda]"]
    assert "died in it" in errors["test_6_crashes[cuda]"]
    assert "isolated on the GPU" in errors["test_7_isolated_fails[cuda]"]
    reasons = [stop["reason"] for stop in summary["restarts"]]
    assert reasons[0].startswith(
        "CUDA context lost in suite/test_stand_in.py::test_4_passes_but_loses_the_context"
    )
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in reasons[0]
    assert reasons[1].startswith("timed out") and reasons[2].startswith("crashed")
    assert "total: 3 passed, 5 failed" in result.stdout
