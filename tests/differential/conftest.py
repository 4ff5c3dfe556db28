"""The differential fuzzer's modules import each other by name (as tests/nvptx's do)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nvptx"))
