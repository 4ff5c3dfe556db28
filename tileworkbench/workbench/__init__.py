"""The Jupyter workbench: the `%%tilekernel` magic, kernel reports, the roofline and device peaks.

Importing this package is cheap and needs neither IPython nor ipywidgets; they are imported by the magic
and the widget view when used. Public names: `inspect`, `get_peaks`, `load_ipython_extension`; `roofline.roofline` plots.
"""

from __future__ import annotations

from .build import inspect
from .peaks import get_peaks
from .roofline import Roofline, RooflinePoint

# `roofline(...)` lives in the `roofline` submodule (`workbench.roofline.roofline`); it is not re-exported
# here so that `from tileworkbench.workbench import roofline` keeps naming the module.


def load_ipython_extension(ipython) -> None:
    """`%load_ext tileworkbench`: registers `%%tilekernel` and `%tilekernel_peaks`."""
    from .magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .magic import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    "Roofline",
    "RooflinePoint",
    "get_peaks",
    "inspect",
    "load_ipython_extension",
    "unload_ipython_extension",
]
