"""The GPU's device queries, under the name notebooks import (`from tileworkbench.runtime.device
import gpu_available`); they live in the CUDA layer, `cuda/device.py`."""

from __future__ import annotations

from ..cuda.device import (  # noqa: F401
    DeviceProperties,
    current_device,
    device_count,
    device_properties,
    gpu_available,
)
