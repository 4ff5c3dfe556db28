"""`tl.math`: the elementwise math builtins under Triton's `triton.language.math` names."""

from .builtins import (  # noqa: F401
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    maximum,
    minimum,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)
from .standard import cdiv, sigmoid, softmax  # noqa: F401
