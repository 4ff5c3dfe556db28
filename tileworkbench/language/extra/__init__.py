"""`tl.extra`: device-library functions (`from tileworkbench.language.extra import libdevice`)."""

from . import libdevice

__all__ = ["libdevice"]
