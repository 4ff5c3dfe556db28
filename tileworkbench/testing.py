"""`tileworkbench.testing`: Triton's `triton.testing` names (do_bench, assert_close, perf_report, Benchmark)."""

from .runtime.testing import *  # noqa: F401,F403
from .runtime.testing import Benchmark, assert_close, do_bench, perf_report  # noqa: F401
