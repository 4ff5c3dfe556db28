"""bench/result_file.py: the stable name a benchmark's JSON gets under bench/results/."""

from __future__ import annotations

import pytest
import result_file


@pytest.mark.parametrize("device,tag", [("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"),
                                        ("NVIDIA A100-SXM4-80GB", "a100"),
                                        ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("znver3", "znver3")])
def test_device_tag(device, tag):
    assert result_file.device_tag(device) == tag


def test_default_path_is_stable_per_device_and_benchmark():
    path = result_file.default_path("NVIDIA H200", "tensor-cores")
    assert path == result_file.RESULTS / "h200-tensor-cores.json"
    assert path.parent.name == "results" and path.parent.parent.name == "bench"


def test_an_empty_device_name_is_refused():
    with pytest.raises(ValueError, match="no device name"):
        result_file.device_tag("NVIDIA ")
