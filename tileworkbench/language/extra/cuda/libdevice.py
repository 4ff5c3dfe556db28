"""`tl.extra.cuda.libdevice`: the same functions as `tl.extra.libdevice` (one set of builtins)."""

from ..libdevice import *  # noqa: F401,F403
from ..libdevice import FUNCTIONS, SIGNATURES  # noqa: F401
