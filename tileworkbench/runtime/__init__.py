"""The runtime: jit launches, the cache, the launcher, autotuning, benchmarking, and Triton's driver."""

from . import driver  # noqa: F401  (triton.runtime.driver.active, as Triton code reads it)
