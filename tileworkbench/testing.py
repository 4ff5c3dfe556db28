"""`tileworkbench.testing`: Triton's `triton.testing` names (do_bench, assert_close, perf_report, Benchmark)."""

from .runtime.testing import *  # noqa: F401,F403
from .runtime.testing import (  # noqa: F401
    Benchmark,
    assert_close,
    do_bench,
    do_bench_cudagraph,
    get_dram_gbps,
    get_max_simd_tflops,
    get_max_tensorcore_tflops,
    perf_report,
)
