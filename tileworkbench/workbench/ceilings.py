"""A device's roofline ceilings as data: `Peak` (one ceiling, measured or from a datasheet) and
`Peaks` (a device's), the datasheet table, and the cache of measured ones
(`<cache dir>/peaks/<device>.json`). Where the numbers come from is peaks.py (GPU microbenchmarks,
the host's NumPy ceilings) and target_ceilings.py (a host target's compiled kernels).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import config
from .roofline_model import MEMORY_LEVELS

PEAK_NAMES = ("l2", "dram", "fp64", "fp32", "tf32", "fp16", "bf16")
UNITS = {name: "B/s" if name in MEMORY_LEVELS else "FLOP/s" for name in PEAK_NAMES}
T, G = 1e12, 1e9

# Dense datasheet peaks (NVIDIA product pages / whitepapers). Keys match `device name` substrings.
DATASHEET = {
    "H200": {
        "dram": 4800 * G,
        "fp32": 67 * T,
        "tf32": 494.5 * T,
        "fp16": 989.5 * T,
        "bf16": 989.5 * T,
    },
    "H100 SXM": {
        "dram": 3350 * G,
        "fp32": 67 * T,
        "tf32": 494.5 * T,
        "fp16": 989.5 * T,
        "bf16": 989.5 * T,
    },
    "H100 PCIe": {
        "dram": 2000 * G,
        "fp32": 51 * T,
        "tf32": 378 * T,
        "fp16": 756 * T,
        "bf16": 756 * T,
    },
    "A100-SXM4-80GB": {
        "dram": 2039 * G,
        "fp32": 19.5 * T,
        "tf32": 156 * T,
        "fp16": 312 * T,
        "bf16": 312 * T,
    },
    "A100": {"dram": 1555 * G, "fp32": 19.5 * T, "tf32": 156 * T, "fp16": 312 * T, "bf16": 312 * T},
    "L4": {"dram": 300 * G, "fp32": 30.3 * T, "tf32": 60 * T, "fp16": 121 * T, "bf16": 121 * T},
    "L40S": {"dram": 864 * G, "fp32": 91.6 * T, "tf32": 183 * T, "fp16": 362 * T, "bf16": 362 * T},
    "RTX 4090": {
        "dram": 1008 * G,
        "fp32": 82.6 * T,
        "tf32": 82.6 * T,
        "fp16": 165 * T,
        "bf16": 165 * T,
    },
    "RTX 3090": {
        "dram": 936 * G,
        "fp32": 35.6 * T,
        "tf32": 35.6 * T,
        "fp16": 71 * T,
        "bf16": 71 * T,
    },
    "T4": {"dram": 320 * G, "fp32": 8.1 * T, "fp16": 65 * T},
}
DEFAULT_DEVICE = "H200"  # used to place kernels when no GPU is present


@dataclass
class Peak:
    """One ceiling: `value` in `unit` (B/s or FLOP/s), `source` "measured" or "datasheet"."""

    name: str
    value: float
    unit: str
    source: str
    detail: str = ""


@dataclass
class Peaks:
    """The ceilings of one device: measured where available, datasheet beside them."""

    device: str
    measured: dict[str, Peak] = field(default_factory=dict)
    datasheet: dict[str, Peak] = field(default_factory=dict)

    def best(self, name: str) -> Peak | None:
        """The measured ceiling if there is one, else the datasheet's."""
        return self.measured.get(name) or self.datasheet.get(name)

    def __repr__(self) -> str:
        return peaks_text(self)

    def _repr_html_(self) -> str:
        return peaks_html(self)

    def to_json(self) -> dict:
        return {"device": self.device, "measured": {k: asdict(v) for k, v in self.measured.items()}}


# Device names as the driver reports them ("NVIDIA H100 80GB HBM3") -> datasheet rows, first match wins.
NAME_PATTERNS = (
    (r"H200", "H200"),
    (r"H100.*PCIE", "H100 PCIe"),
    (r"H100", "H100 SXM"),
    (r"A100.*80GB", "A100-SXM4-80GB"),
    (r"A100", "A100"),
    (r"L40S", "L40S"),
    (r"\bL4\b", "L4"),
    (r"4090", "RTX 4090"),
    (r"3090", "RTX 3090"),
    (r"\bT4\b", "T4"),
)


def datasheet_entry(device: str) -> tuple[str, dict[str, float]] | None:
    """The datasheet row for a device name (a row key, or a name as the CUDA driver reports it)."""
    if device in DATASHEET:
        return device, DATASHEET[device]
    name = device.upper()
    for pattern, key in NAME_PATTERNS:
        if re.search(pattern, name):
            return key, DATASHEET[key]
    return None


def datasheet_peaks(device: str) -> dict[str, Peak]:
    entry = datasheet_entry(device)
    if entry is None:
        return {}
    key, row = entry
    return {n: Peak(n, v, UNITS[n], "datasheet", f"{key} datasheet") for n, v in row.items()}


def cache_path(device: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", device).strip("_") or "device"
    return Path(config.cache_dir) / "peaks" / f"{slug}.json"


def load_cached(device: str) -> dict[str, Peak]:
    """Measured peaks cached for `device`, or {} (an unreadable file is ignored and re-measured)."""
    path = cache_path(device)
    try:
        data = json.loads(path.read_text())
        return {k: Peak(**v) for k, v in data["measured"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def save_cached(peaks: Peaks) -> Path:
    path = cache_path(peaks.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(peaks.to_json(), indent=1))
    tmp.replace(path)
    return path


def _peaks_rows(peaks: Peaks) -> list[tuple[str, str, str]]:
    rows = []
    for name in PEAK_NAMES:
        for peak in (peaks.measured.get(name), peaks.datasheet.get(name)):
            if peak is None:
                continue
            scale, unit = (1e9, "GB/s") if name in MEMORY_LEVELS else (1e12, "TFLOP/s")
            if unit == "TFLOP/s" and peak.value < 1e12:
                scale, unit = 1e9, "GFLOP/s"
            rows.append((name, f"{peak.value / scale:.4g} {unit}", peak.detail or peak.source))
    return rows


def peaks_text(self: Peaks) -> str:
    lines = [f"ceilings of {self.device}" + ("" if self.measured else " (nothing measured)")]
    lines += [f"  {n:5} {v:>16}  {s}" for n, v, s in _peaks_rows(self)]
    return "\n".join(lines)


def peaks_html(self: Peaks) -> str:
    """A table of the ceilings and their sources, and the ceilings drawn as a roofline."""
    import html

    rows = "".join(
        f"<tr><td>{n}</td><td>{v}</td><td>{html.escape(s)}</td></tr>"
        for n, v, s in _peaks_rows(self)
    )
    return (
        f"<b>Ceilings of {html.escape(self.device)}</b><table><tr><th>ceiling</th><th>value</th>"
        f"<th>source</th></tr>{rows}</table>" + _ceilings_png(self)
    )


def _ceilings_png(peaks: Peaks) -> str:
    """The ceilings alone on a roofline, as an inline PNG."""
    import base64

    from .roofline_chart import chart_bytes

    png = base64.b64encode(chart_bytes([], peaks, "png")).decode()
    return f'<img alt="ceilings" src="data:image/png;base64,{png}" style="max-width:680px">'
