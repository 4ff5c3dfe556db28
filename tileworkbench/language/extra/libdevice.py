"""CUDA libdevice functions by their common names (`libdevice.tanh(x)`), as `tl.extra.libdevice` in Triton.

`SIGNATURES` lists, per function, the argument types each libdevice symbol takes and its result type
(CUDA's libdevice ABI, the same overloads as Triton's table). A call picks the overload that fits its
arguments (frontend/math_calls.py); fp16/bf16 arguments of a float-only function are computed in fp32.
The interpreter has a NumPy version of every symbol (backends/numpy_libdevice/functions.py).
"""

from __future__ import annotations

from ..core import BUILTINS, builtin

# name: ((argument types, libdevice symbol, result type), ...); types are Triton's short names.
SIGNATURES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "clz": (
        ("i32", "__nv_clz", "i32"),
        ("i64", "__nv_clzll", "i32"),
    ),
    "popc": (
        ("i32", "__nv_popc", "i32"),
        ("i64", "__nv_popcll", "i32"),
    ),
    "byte_perm": (("i32,i32,i32", "__nv_byte_perm", "i32"),),
    "mulhi": (
        ("i32,i32", "__nv_mulhi", "i32"),
        ("u32,u32", "__nv_umulhi", "u32"),
        ("i64,i64", "__nv_mul64hi", "i64"),
        ("u64,u64", "__nv_umul64hi", "u64"),
    ),
    "mul24": (
        ("i32,i32", "__nv_mul24", "i32"),
        ("u32,u32", "__nv_umul24", "u32"),
    ),
    "brev": (
        ("i32", "__nv_brev", "i32"),
        ("i64", "__nv_brevll", "i64"),
    ),
    "sad": (
        ("i32,i32,u32", "__nv_sad", "i32"),
        ("u32,u32,u32", "__nv_usad", "u32"),
    ),
    "abs": (
        ("i32", "__nv_abs", "i32"),
        ("i64", "__nv_llabs", "i64"),
        ("fp32", "__nv_fabsf", "fp32"),
        ("fp64", "__nv_fabs", "fp64"),
    ),
    "floor": (
        ("fp32", "__nv_floorf", "fp32"),
        ("fp64", "__nv_floor", "fp64"),
    ),
    "rcp64h": (("fp64", "__nv_rcp64h", "fp64"),),
    "rsqrt": (
        ("fp32", "__nv_rsqrtf", "fp32"),
        ("fp64", "__nv_rsqrt", "fp64"),
    ),
    "ceil": (
        ("fp64", "__nv_ceil", "fp64"),
        ("fp32", "__nv_ceilf", "fp32"),
    ),
    "trunc": (
        ("fp64", "__nv_trunc", "fp64"),
        ("fp32", "__nv_truncf", "fp32"),
    ),
    "exp2": (
        ("fp32", "__nv_exp2f", "fp32"),
        ("fp64", "__nv_exp2", "fp64"),
    ),
    "saturatef": (("fp32", "__nv_saturatef", "fp32"),),
    "fma_rn": (
        ("fp32,fp32,fp32", "__nv_fmaf_rn", "fp32"),
        ("fp64,fp64,fp64", "__nv_fma_rn", "fp64"),
    ),
    "fma_rz": (
        ("fp32,fp32,fp32", "__nv_fmaf_rz", "fp32"),
        ("fp64,fp64,fp64", "__nv_fma_rz", "fp64"),
    ),
    "fma_rd": (
        ("fp32,fp32,fp32", "__nv_fmaf_rd", "fp32"),
        ("fp64,fp64,fp64", "__nv_fma_rd", "fp64"),
    ),
    "fma_ru": (
        ("fp32,fp32,fp32", "__nv_fmaf_ru", "fp32"),
        ("fp64,fp64,fp64", "__nv_fma_ru", "fp64"),
    ),
    "fast_dividef": (("fp32,fp32", "__nv_fast_fdividef", "fp32"),),
    "div_rn": (
        ("fp32,fp32", "__nv_fdiv_rn", "fp32"),
        ("fp64,fp64", "__nv_ddiv_rn", "fp64"),
    ),
    "div_rz": (
        ("fp32,fp32", "__nv_fdiv_rz", "fp32"),
        ("fp64,fp64", "__nv_ddiv_rz", "fp64"),
    ),
    "div_rd": (
        ("fp32,fp32", "__nv_fdiv_rd", "fp32"),
        ("fp64,fp64", "__nv_ddiv_rd", "fp64"),
    ),
    "div_ru": (
        ("fp32,fp32", "__nv_fdiv_ru", "fp32"),
        ("fp64,fp64", "__nv_ddiv_ru", "fp64"),
    ),
    "rcp_rn": (
        ("fp32", "__nv_frcp_rn", "fp32"),
        ("fp64", "__nv_drcp_rn", "fp64"),
    ),
    "rcp_rz": (
        ("fp32", "__nv_frcp_rz", "fp32"),
        ("fp64", "__nv_drcp_rz", "fp64"),
    ),
    "rcp_rd": (
        ("fp32", "__nv_frcp_rd", "fp32"),
        ("fp64", "__nv_drcp_rd", "fp64"),
    ),
    "rcp_ru": (
        ("fp32", "__nv_frcp_ru", "fp32"),
        ("fp64", "__nv_drcp_ru", "fp64"),
    ),
    "sqrt_rn": (
        ("fp32", "__nv_fsqrt_rn", "fp32"),
        ("fp64", "__nv_dsqrt_rn", "fp64"),
    ),
    "sqrt_rz": (
        ("fp32", "__nv_fsqrt_rz", "fp32"),
        ("fp64", "__nv_dsqrt_rz", "fp64"),
    ),
    "sqrt_rd": (
        ("fp32", "__nv_fsqrt_rd", "fp32"),
        ("fp64", "__nv_dsqrt_rd", "fp64"),
    ),
    "sqrt_ru": (
        ("fp32", "__nv_fsqrt_ru", "fp32"),
        ("fp64", "__nv_dsqrt_ru", "fp64"),
    ),
    "sqrt": (
        ("fp32", "__nv_sqrtf", "fp32"),
        ("fp64", "__nv_sqrt", "fp64"),
    ),
    "add_rn": (
        ("fp64,fp64", "__nv_dadd_rn", "fp64"),
        ("fp32,fp32", "__nv_fadd_rn", "fp32"),
    ),
    "add_rz": (
        ("fp64,fp64", "__nv_dadd_rz", "fp64"),
        ("fp32,fp32", "__nv_fadd_rz", "fp32"),
    ),
    "add_rd": (
        ("fp64,fp64", "__nv_dadd_rd", "fp64"),
        ("fp32,fp32", "__nv_fadd_rd", "fp32"),
    ),
    "add_ru": (
        ("fp64,fp64", "__nv_dadd_ru", "fp64"),
        ("fp32,fp32", "__nv_fadd_ru", "fp32"),
    ),
    "mul_rn": (
        ("fp64,fp64", "__nv_dmul_rn", "fp64"),
        ("fp32,fp32", "__nv_fmul_rn", "fp32"),
    ),
    "mul_rz": (
        ("fp64,fp64", "__nv_dmul_rz", "fp64"),
        ("fp32,fp32", "__nv_fmul_rz", "fp32"),
    ),
    "mul_rd": (
        ("fp64,fp64", "__nv_dmul_rd", "fp64"),
        ("fp32,fp32", "__nv_fmul_rd", "fp32"),
    ),
    "mul_ru": (
        ("fp64,fp64", "__nv_dmul_ru", "fp64"),
        ("fp32,fp32", "__nv_fmul_ru", "fp32"),
    ),
    "double2float_rn": (("fp64", "__nv_double2float_rn", "fp32"),),
    "double2float_rz": (("fp64", "__nv_double2float_rz", "fp32"),),
    "double2float_rd": (("fp64", "__nv_double2float_rd", "fp32"),),
    "double2float_ru": (("fp64", "__nv_double2float_ru", "fp32"),),
    "double2int_rn": (("fp64", "__nv_double2int_rn", "i32"),),
    "double2int_rz": (("fp64", "__nv_double2int_rz", "i32"),),
    "double2int_rd": (("fp64", "__nv_double2int_rd", "i32"),),
    "double2int_ru": (("fp64", "__nv_double2int_ru", "i32"),),
    "double2uint_rn": (("fp64", "__nv_double2uint_rn", "i32"),),
    "double2uint_rz": (("fp64", "__nv_double2uint_rz", "i32"),),
    "double2uint_rd": (("fp64", "__nv_double2uint_rd", "i32"),),
    "double2uint_ru": (("fp64", "__nv_double2uint_ru", "i32"),),
    "int2double_rn": (("i32", "__nv_int2double_rn", "fp64"),),
    "uint2double_rn": (("u32", "__nv_uint2double_rn", "fp64"),),
    "float2int_rn": (("fp32", "__nv_float2int_rn", "i32"),),
    "float2int_rz": (("fp32", "__nv_float2int_rz", "i32"),),
    "float2int_rd": (("fp32", "__nv_float2int_rd", "i32"),),
    "float2int_ru": (("fp32", "__nv_float2int_ru", "i32"),),
    "float2uint_rn": (("fp32", "__nv_float2uint_rn", "i32"),),
    "float2uint_rz": (("fp32", "__nv_float2uint_rz", "i32"),),
    "float2uint_rd": (("fp32", "__nv_float2uint_rd", "i32"),),
    "float2uint_ru": (("fp32", "__nv_float2uint_ru", "i32"),),
    "int2float_rn": (("i32", "__nv_int2float_rn", "fp32"),),
    "int2float_rz": (("i32", "__nv_int2float_rz", "fp32"),),
    "int2float_rd": (("i32", "__nv_int2float_rd", "fp32"),),
    "int2float_ru": (("i32", "__nv_int2float_ru", "fp32"),),
    "uint2float_rn": (("u32", "__nv_uint2float_rn", "fp32"),),
    "uint2float_rz": (("u32", "__nv_uint2float_rz", "fp32"),),
    "uint2float_rd": (("u32", "__nv_uint2float_rd", "fp32"),),
    "uint2float_ru": (("u32", "__nv_uint2float_ru", "fp32"),),
    "hiloint2double": (("i32,i32", "__nv_hiloint2double", "fp64"),),
    "double2loint": (("fp64", "__nv_double2loint", "i32"),),
    "double2hiint": (("fp64", "__nv_double2hiint", "i32"),),
    "float2ll_rn": (("fp32", "__nv_float2ll_rn", "i64"),),
    "float2ll_rz": (("fp32", "__nv_float2ll_rz", "i64"),),
    "float2ll_rd": (("fp32", "__nv_float2ll_rd", "i64"),),
    "float2ll_ru": (("fp32", "__nv_float2ll_ru", "i64"),),
    "float2ull_rn": (("fp32", "__nv_float2ull_rn", "i64"),),
    "float2ull_rz": (("fp32", "__nv_float2ull_rz", "i64"),),
    "float2ull_rd": (("fp32", "__nv_float2ull_rd", "i64"),),
    "float2ull_ru": (("fp32", "__nv_float2ull_ru", "i64"),),
    "double2ll_rn": (("fp64", "__nv_double2ll_rn", "i64"),),
    "double2ll_rz": (("fp64", "__nv_double2ll_rz", "i64"),),
    "double2ll_rd": (("fp64", "__nv_double2ll_rd", "i64"),),
    "double2ll_ru": (("fp64", "__nv_double2ll_ru", "i64"),),
    "double2ull_rn": (("fp64", "__nv_double2ull_rn", "i64"),),
    "double2ull_rz": (("fp64", "__nv_double2ull_rz", "i64"),),
    "double2ull_rd": (("fp64", "__nv_double2ull_rd", "i64"),),
    "double2ull_ru": (("fp64", "__nv_double2ull_ru", "i64"),),
    "ll2float_rn": (("i64", "__nv_ll2float_rn", "fp32"),),
    "ll2float_rz": (("i64", "__nv_ll2float_rz", "fp32"),),
    "ll2float_rd": (("i64", "__nv_ll2float_rd", "fp32"),),
    "ll2float_ru": (("i64", "__nv_ll2float_ru", "fp32"),),
    "ull2float_rn": (("u64", "__nv_ull2float_rn", "fp32"),),
    "ull2float_rz": (("u64", "__nv_ull2float_rz", "fp32"),),
    "ull2float_rd": (("u64", "__nv_ull2float_rd", "fp32"),),
    "ull2float_ru": (("u64", "__nv_ull2float_ru", "fp32"),),
    "ll2double_rn": (("i64", "__nv_ll2double_rn", "fp64"),),
    "ll2double_rz": (("i64", "__nv_ll2double_rz", "fp64"),),
    "ll2double_rd": (("i64", "__nv_ll2double_rd", "fp64"),),
    "ll2double_ru": (("i64", "__nv_ll2double_ru", "fp64"),),
    "ull2double_rn": (("u64", "__nv_ull2double_rn", "fp64"),),
    "ull2double_rz": (("u64", "__nv_ull2double_rz", "fp64"),),
    "ull2double_rd": (("u64", "__nv_ull2double_rd", "fp64"),),
    "ull2double_ru": (("u64", "__nv_ull2double_ru", "fp64"),),
    "int_as_float": (("i32", "__nv_int_as_float", "fp32"),),
    "float_as_int": (("fp32", "__nv_float_as_int", "i32"),),
    "uint_as_float": (("u32", "__nv_uint_as_float", "fp32"),),
    "float_as_uint": (("fp32", "__nv_float_as_uint", "i32"),),
    "longlong_as_double": (("i64", "__nv_longlong_as_double", "fp64"),),
    "double_as_longlong": (("fp64", "__nv_double_as_longlong", "i64"),),
    "fast_sinf": (("fp32", "__nv_fast_sinf", "fp32"),),
    "fast_cosf": (("fp32", "__nv_fast_cosf", "fp32"),),
    "fast_log2f": (("fp32", "__nv_fast_log2f", "fp32"),),
    "fast_logf": (("fp32", "__nv_fast_logf", "fp32"),),
    "fast_expf": (("fp32", "__nv_fast_expf", "fp32"),),
    "fast_tanf": (("fp32", "__nv_fast_tanf", "fp32"),),
    "fast_exp10f": (("fp32", "__nv_fast_exp10f", "fp32"),),
    "fast_log10f": (("fp32", "__nv_fast_log10f", "fp32"),),
    "fast_powf": (("fp32,fp32", "__nv_fast_powf", "fp32"),),
    "hadd": (
        ("i32,i32", "__nv_hadd", "i32"),
        ("u32,u32", "__nv_uhadd", "u32"),
    ),
    "rhadd": (
        ("i32,i32", "__nv_rhadd", "i32"),
        ("u32,u32", "__nv_urhadd", "u32"),
    ),
    "sub_rn": (
        ("fp32,fp32", "__nv_fsub_rn", "fp32"),
        ("fp64,fp64", "__nv_dsub_rn", "fp64"),
    ),
    "sub_rz": (
        ("fp32,fp32", "__nv_fsub_rz", "fp32"),
        ("fp64,fp64", "__nv_dsub_rz", "fp64"),
    ),
    "sub_rd": (
        ("fp32,fp32", "__nv_fsub_rd", "fp32"),
        ("fp64,fp64", "__nv_dsub_rd", "fp64"),
    ),
    "sub_ru": (
        ("fp32,fp32", "__nv_fsub_ru", "fp32"),
        ("fp64,fp64", "__nv_dsub_ru", "fp64"),
    ),
    "rsqrt_rn": (("fp32", "__nv_frsqrt_rn", "fp32"),),
    "ffs": (
        ("i32", "__nv_ffs", "i32"),
        ("i64", "__nv_ffsll", "i32"),
    ),
    "rint": (
        ("fp32", "__nv_rintf", "fp32"),
        ("fp64", "__nv_rint", "fp64"),
    ),
    "llrint": (
        ("fp32", "__nv_llrintf", "i64"),
        ("fp64", "__nv_llrint", "i64"),
    ),
    "nearbyint": (
        ("fp32", "__nv_nearbyintf", "fp32"),
        ("fp64", "__nv_nearbyint", "fp64"),
    ),
    "isnan": (
        ("fp32", "__nv_isnanf", "i32"),
        ("fp64", "__nv_isnand", "i32"),
    ),
    "signbit": (
        ("fp32", "__nv_signbitf", "i32"),
        ("fp64", "__nv_signbitd", "i32"),
    ),
    "copysign": (
        ("fp32,fp32", "__nv_copysignf", "fp32"),
        ("fp64,fp64", "__nv_copysign", "fp64"),
    ),
    "finitef": (
        ("fp32", "__nv_finitef", "i32"),
        ("fp64", "__nv_isfinited", "i32"),
    ),
    "isinf": (
        ("fp32", "__nv_isinff", "i32"),
        ("fp64", "__nv_isinfd", "i32"),
    ),
    "nextafter": (
        ("fp32,fp32", "__nv_nextafterf", "fp32"),
        ("fp64,fp64", "__nv_nextafter", "fp64"),
    ),
    "sin": (
        ("fp32", "__nv_sinf", "fp32"),
        ("fp64", "__nv_sin", "fp64"),
    ),
    "cos": (
        ("fp32", "__nv_cosf", "fp32"),
        ("fp64", "__nv_cos", "fp64"),
    ),
    "sinpi": (
        ("fp32", "__nv_sinpif", "fp32"),
        ("fp64", "__nv_sinpi", "fp64"),
    ),
    "cospi": (
        ("fp32", "__nv_cospif", "fp32"),
        ("fp64", "__nv_cospi", "fp64"),
    ),
    "tan": (
        ("fp32", "__nv_tanf", "fp32"),
        ("fp64", "__nv_tan", "fp64"),
    ),
    "log2": (
        ("fp32", "__nv_log2f", "fp32"),
        ("fp64", "__nv_log2", "fp64"),
    ),
    "exp": (
        ("fp32", "__nv_expf", "fp32"),
        ("fp64", "__nv_exp", "fp64"),
    ),
    "exp10": (
        ("fp32", "__nv_exp10f", "fp32"),
        ("fp64", "__nv_exp10", "fp64"),
    ),
    "cosh": (
        ("fp32", "__nv_coshf", "fp32"),
        ("fp64", "__nv_cosh", "fp64"),
    ),
    "sinh": (
        ("fp32", "__nv_sinhf", "fp32"),
        ("fp64", "__nv_sinh", "fp64"),
    ),
    "tanh": (
        ("fp32", "__nv_tanhf", "fp32"),
        ("fp64", "__nv_tanh", "fp64"),
    ),
    "atan2": (
        ("fp32,fp32", "__nv_atan2f", "fp32"),
        ("fp64,fp64", "__nv_atan2", "fp64"),
    ),
    "atan": (
        ("fp32", "__nv_atanf", "fp32"),
        ("fp64", "__nv_atan", "fp64"),
    ),
    "asin": (
        ("fp32", "__nv_asinf", "fp32"),
        ("fp64", "__nv_asin", "fp64"),
    ),
    "acos": (
        ("fp32", "__nv_acosf", "fp32"),
        ("fp64", "__nv_acos", "fp64"),
    ),
    "log": (
        ("fp32", "__nv_logf", "fp32"),
        ("fp64", "__nv_log", "fp64"),
    ),
    "log10": (
        ("fp32", "__nv_log10f", "fp32"),
        ("fp64", "__nv_log10", "fp64"),
    ),
    "log1p": (
        ("fp32", "__nv_log1pf", "fp32"),
        ("fp64", "__nv_log1p", "fp64"),
    ),
    "acosh": (
        ("fp32", "__nv_acoshf", "fp32"),
        ("fp64", "__nv_acosh", "fp64"),
    ),
    "asinh": (
        ("fp32", "__nv_asinhf", "fp32"),
        ("fp64", "__nv_asinh", "fp64"),
    ),
    "atanh": (
        ("fp32", "__nv_atanhf", "fp32"),
        ("fp64", "__nv_atanh", "fp64"),
    ),
    "expm1": (
        ("fp32", "__nv_expm1f", "fp32"),
        ("fp64", "__nv_expm1", "fp64"),
    ),
    "hypot": (
        ("fp32,fp32", "__nv_hypotf", "fp32"),
        ("fp64,fp64", "__nv_hypot", "fp64"),
    ),
    "rhypot": (
        ("fp32,fp32", "__nv_rhypotf", "fp32"),
        ("fp64,fp64", "__nv_rhypot", "fp64"),
    ),
    "norm3d": (
        ("fp32,fp32,fp32", "__nv_norm3df", "fp32"),
        ("fp64,fp64,fp64", "__nv_norm3d", "fp64"),
    ),
    "rnorm3d": (
        ("fp32,fp32,fp32", "__nv_rnorm3df", "fp32"),
        ("fp64,fp64,fp64", "__nv_rnorm3d", "fp64"),
    ),
    "norm4d": (
        ("fp32,fp32,fp32,fp32", "__nv_norm4df", "fp32"),
        ("fp64,fp64,fp64,fp64", "__nv_norm4d", "fp64"),
    ),
    "rnorm4d": (
        ("fp32,fp32,fp32,fp32", "__nv_rnorm4df", "fp32"),
        ("fp64,fp64,fp64,fp64", "__nv_rnorm4d", "fp64"),
    ),
    "cbrt": (
        ("fp32", "__nv_cbrtf", "fp32"),
        ("fp64", "__nv_cbrt", "fp64"),
    ),
    "rcbrt": (
        ("fp32", "__nv_rcbrtf", "fp32"),
        ("fp64", "__nv_rcbrt", "fp64"),
    ),
    "j0": (
        ("fp32", "__nv_j0f", "fp32"),
        ("fp64", "__nv_j0", "fp64"),
    ),
    "j1": (
        ("fp32", "__nv_j1f", "fp32"),
        ("fp64", "__nv_j1", "fp64"),
    ),
    "y0": (
        ("fp32", "__nv_y0f", "fp32"),
        ("fp64", "__nv_y0", "fp64"),
    ),
    "y1": (
        ("fp32", "__nv_y1f", "fp32"),
        ("fp64", "__nv_y1", "fp64"),
    ),
    "yn": (
        ("i32,fp32", "__nv_ynf", "fp32"),
        ("i32,fp64", "__nv_yn", "fp64"),
    ),
    "jn": (
        ("i32,fp32", "__nv_jnf", "fp32"),
        ("i32,fp64", "__nv_jn", "fp64"),
    ),
    "cyl_bessel_i0": (
        ("fp32", "__nv_cyl_bessel_i0f", "fp32"),
        ("fp64", "__nv_cyl_bessel_i0", "fp64"),
    ),
    "cyl_bessel_i1": (
        ("fp32", "__nv_cyl_bessel_i1f", "fp32"),
        ("fp64", "__nv_cyl_bessel_i1", "fp64"),
    ),
    "erf": (
        ("fp32", "__nv_erff", "fp32"),
        ("fp64", "__nv_erf", "fp64"),
    ),
    "erfinv": (
        ("fp32", "__nv_erfinvf", "fp32"),
        ("fp64", "__nv_erfinv", "fp64"),
    ),
    "erfc": (
        ("fp32", "__nv_erfcf", "fp32"),
        ("fp64", "__nv_erfc", "fp64"),
    ),
    "erfcx": (
        ("fp32", "__nv_erfcxf", "fp32"),
        ("fp64", "__nv_erfcx", "fp64"),
    ),
    "erfcinv": (
        ("fp32", "__nv_erfcinvf", "fp32"),
        ("fp64", "__nv_erfcinv", "fp64"),
    ),
    "normcdfinv": (
        ("fp32", "__nv_normcdfinvf", "fp32"),
        ("fp64", "__nv_normcdfinv", "fp64"),
    ),
    "normcdf": (
        ("fp32", "__nv_normcdff", "fp32"),
        ("fp64", "__nv_normcdf", "fp64"),
    ),
    "lgamma": (
        ("fp32", "__nv_lgammaf", "fp32"),
        ("fp64", "__nv_lgamma", "fp64"),
    ),
    "ldexp": (
        ("fp32,i32", "__nv_ldexpf", "fp32"),
        ("fp64,i32", "__nv_ldexp", "fp64"),
    ),
    "scalbn": (
        ("fp32,i32", "__nv_scalbnf", "fp32"),
        ("fp64,i32", "__nv_scalbn", "fp64"),
    ),
    "fmod": (
        ("fp32,fp32", "__nv_fmodf", "fp32"),
        ("fp64,fp64", "__nv_fmod", "fp64"),
    ),
    "remainder": (
        ("fp32,fp32", "__nv_remainderf", "fp32"),
        ("fp64,fp64", "__nv_remainder", "fp64"),
    ),
    "fma": (
        ("fp32,fp32,fp32", "__nv_fmaf", "fp32"),
        ("fp64,fp64,fp64", "__nv_fma", "fp64"),
    ),
    "pow": (
        ("fp32,i32", "__nv_powif", "fp32"),
        ("fp64,i32", "__nv_powi", "fp64"),
        ("fp32,fp32", "__nv_powf", "fp32"),
        ("fp64,fp64", "__nv_pow", "fp64"),
    ),
    "tgamma": (
        ("fp32", "__nv_tgammaf", "fp32"),
        ("fp64", "__nv_tgamma", "fp64"),
    ),
    "round": (
        ("fp32", "__nv_roundf", "fp32"),
        ("fp64", "__nv_round", "fp64"),
    ),
    "llround": (
        ("fp32", "__nv_llroundf", "i64"),
        ("fp64", "__nv_llround", "i64"),
    ),
    "fdim": (
        ("fp32,fp32", "__nv_fdimf", "fp32"),
        ("fp64,fp64", "__nv_fdim", "fp64"),
    ),
    "ilogb": (
        ("fp32", "__nv_ilogbf", "i32"),
        ("fp64", "__nv_ilogb", "i32"),
    ),
    "logb": (
        ("fp32", "__nv_logbf", "fp32"),
        ("fp64", "__nv_logb", "fp64"),
    ),
    "isfinited": (
        ("fp64", "__nv_isfinited", "i32"),
        ("fp32", "__nv_finitef", "i32"),
    ),  # not in Triton's table (nor the fp64 finitef / fp32 isfinited above): kept from earlier versions
    "fabs": (
        ("fp32", "__nv_fabsf", "fp32"),
        ("fp64", "__nv_fabs", "fp64"),
    ),
    "fmin": (
        ("fp32,fp32", "__nv_fminf", "fp32"),
        ("fp64,fp64", "__nv_fmin", "fp64"),
    ),
    "fmax": (
        ("fp32,fp32", "__nv_fmaxf", "fp32"),
        ("fp64,fp64", "__nv_fmax", "fp64"),
    ),
}

# name -> number of arguments
FUNCTIONS = {name: len(overloads[0][0].split(",")) for name, overloads in SIGNATURES.items()}


def _make(name: str):
    def fn(*args):
        pass

    fn.__name__ = name
    fn.__qualname__ = name
    symbols = ", ".join(
        f"`{symbol}`({types}) -> {result}" for types, symbol, result in SIGNATURES[name]
    )
    fn.__doc__ = f"libdevice element by element: {symbols}."
    stub = builtin(fn)
    stub.__tile_builtin__ = f"libdevice.{name}"
    BUILTINS[stub] = f"libdevice.{name}"
    return stub


for _name in SIGNATURES:
    globals()[_name] = _make(_name)
