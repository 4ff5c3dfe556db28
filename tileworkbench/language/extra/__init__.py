"""`tl.extra`: device-library functions (`from tileworkbench.language.extra import libdevice`) and
`tl.extra.cuda` (special registers, launch configuration)."""

from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]
