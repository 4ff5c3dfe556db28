"""Passes over Tile IR, one per module; the pipelines are the plain lists in `pipeline.py`."""

from .canonicalize import canonicalize
from .cse import cse
from .dce import dce
from .licm import licm
from .pipeline import TILE_OPT, pass_name, run_passes

__all__ = ["TILE_OPT", "canonicalize", "cse", "dce", "licm", "pass_name", "run_passes"]
