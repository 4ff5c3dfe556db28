"""The tile language, imported as `tl` (`import tileworkbench.language as tl`): Triton's names and semantics."""

from . import extra, math, random  # noqa: F401
from .builtins import *  # noqa: F401,F403
from .core import (  # noqa: F401
    block_type,
    const,
    constexpr,
    constexpr_type,
    dtype,
    float8e4b8,
    float8e4b15,
    float8e4nv,
    float8e5,
    float8e5b16,
    float16,
    bfloat16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pi32_t,
    pointer_type,
    range,
    static_range,
    tensor,
    uint8,
    uint16,
    uint32,
    uint64,
    void,
)
from .descriptor import (  # noqa: F401
    advance,
    block_pointer,
    make_block_ptr,
    make_tensor_descriptor,
    tensor_descriptor,
)
from .random import (  # noqa: F401
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    randint,
    randint4x,
    randn,
    uint_to_uniform_float,
)
from .standard import PropagateNan, cdiv, sigmoid, softmax, swizzle2d  # noqa: F401
