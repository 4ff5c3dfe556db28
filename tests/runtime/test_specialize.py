"""Launch specialization (runtime/specialize.py), without a GPU: launches on the stand-in GPU of
test_warm_launch.py. Two launches that differ in one specialized property (an array's dtype or
alignment, an integer's multiple-of-16, -8 or -4, equal-to-1 or width, a scalar's kind, None for an array, a
constexpr's value or class, a descriptor's block or TMA fit, the launch options) compile separately;
the same launch again compiles nothing and, where the warm path takes it, skips the full path. The
full path's key and the generated binder's key are the same parts."""

from __future__ import annotations

import numpy as np
import pytest
from test_warm_launch import DeviceArray, stand_in_gpu

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.errors import ArgumentOverflowError, LaunchError
from tileworkbench.runtime import binder, jit, specialize
from tileworkbench.tools.tensor_descriptor import TensorDescriptor


@pytest.fixture
def compiles(monkeypatch):
    """The stand-in GPU; returns (compiles, full runs): the signature of each compile, and the name
    of each full-path launch."""
    full_runs = stand_in_gpu(monkeypatch, "sm_90")
    seen = []
    inner = jit.compile

    def counting(fn, specs, constexprs, **options):
        seen.append(({s.name: s.key for s in specs}, dict(constexprs)))
        return inner(fn, specs, constexprs, **options)

    monkeypatch.setattr(jit, "compile", counting)
    return seen, full_runs


@tw.jit
def affine_kernel(x_ptr, out_ptr, n, scale, bias_ptr, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * scale
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=mask)
    if FLAG:
        x = -x
    tl.store(out_ptr + offs, x, mask=mask)


def _base_call(rng):
    x = DeviceArray(4096 * int(rng.integers(1, 999)))
    out = DeviceArray(4096 * int(rng.integers(1, 999)))
    # odd and not 1: a multiple of none of 16, 8 and 4, nor equal to 1
    n = int(rng.integers(2, 1 << 16)) * 16 + 2 * int(rng.integers(1, 8)) + 1
    return [x, out, n, float(rng.uniform(0.5, 2.0)), None], {"BLOCK": 64, "FLAG": 1}


# property -> (how the changed call differs, the parameter, its key or constexpr value after it)
CHANGES = {
    "dtype": (
        lambda a, k: a.__setitem__(0, DeviceArray(a[0].address, "float16")),
        "x_ptr",
        "*fp16:16",
    ),
    "pointer alignment": (
        lambda a, k: a.__setitem__(0, DeviceArray(a[0].address + 4)),
        "x_ptr",
        "*fp32",
    ),
    "multiple of 16": (lambda a, k: a.__setitem__(2, 1024 * 16), "n", "i32:16"),
    "multiple of 8": (lambda a, k: a.__setitem__(2, 1024 * 16 + 8), "n", "i32:8"),
    "multiple of 4": (lambda a, k: a.__setitem__(2, 1024 * 16 + 4), "n", "i32:4"),
    "equal to 1": (lambda a, k: a.__setitem__(2, 1), "n", "i32:1"),
    "64-bit integer": (lambda a, k: a.__setitem__(2, 2**40 + 3), "n", "i64"),
    "unsigned 64-bit integer": (lambda a, k: a.__setitem__(2, 2**63 + 5), "n", "u64"),
    "scalar kind": (lambda a, k: a.__setitem__(3, np.float16(1.5)), "scale", "fp16"),
    "None for an array": (
        lambda a, k: a.__setitem__(4, DeviceArray(1 << 24)),
        "bias_ptr",
        "*fp32:16",
    ),
    "constexpr value": (lambda a, k: k.__setitem__("BLOCK", 128), "BLOCK", 128),
    "constexpr class": (lambda a, k: k.__setitem__("FLAG", True), "FLAG", True),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_specialized_property_compiles_apart_and_the_same_launch_hits(compiles, change):
    seen, full_runs = compiles
    affine_kernel.clear_cache()
    rng = np.random.default_rng()
    args, kwargs = _base_call(rng)
    first = affine_kernel[(3,)](*args, **kwargs)
    assert len(seen) == 1
    edit, name, says = CHANGES[change]
    edit(args, kwargs)
    second = affine_kernel[(3,)](*args, **kwargs)
    assert second is not first and len(seen) == 2
    (before, before_constexprs), (signature, constexprs) = seen
    if name in constexprs:
        assert constexprs[name] == says and type(constexprs[name]) is type(says)
        assert type(before_constexprs[name]) is not type(says) or before_constexprs[name] != says
    else:
        assert signature[name] == says and before.get(name) != says
    runs = len(full_runs)
    assert affine_kernel[(3,)](*args, **kwargs) is second  # the same launch: no compile
    assert len(seen) == 2
    assert len(full_runs) == runs  # ... and the warm path took it
    full_key = affine_kernel._key(
        dict(zip(affine_kernel.arg_names, [*args, *kwargs.values()])), "cuda", 4, 3, True
    )[0]
    assert full_key in affine_kernel._fast_plain  # the full path's parts are the warm launcher's
    assert affine_kernel[(3,)](*_base_call(rng)[0], BLOCK=64, FLAG=1) is first and len(seen) == 2


def test_launch_options_compile_apart(compiles):
    seen, _ = compiles
    affine_kernel.clear_cache()
    args, kwargs = _base_call(np.random.default_rng())
    first = affine_kernel[(1,)](*args, **kwargs)
    for options in (
        {"num_warps": 8},
        {"num_stages": 2},
        {"enable_fp_fusion": False},
        {"maxnreg": 64},
    ):
        count = len(seen)
        other = affine_kernel[(1,)](*args, **kwargs, **options)
        assert other is not first and len(seen) == count + 1, options
        assert affine_kernel[(1,)](*args, **kwargs, **options) is other and len(seen) == count + 1


def test_do_not_specialize_leaves_those_properties_out(compiles, monkeypatch):
    seen, _ = compiles
    kernel = tw.jit(
        affine_kernel.fn, do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr"]
    )
    args, kwargs = _base_call(np.random.default_rng())
    first = kernel[(1,)](*args, **kwargs)
    args[2], args[0] = 1, DeviceArray(args[0].address + 4)  # equal to 1; unaligned
    assert kernel[(1,)](*args, **kwargs) is first and len(seen) == 1
    assert [seen[0][0][name] for name in ("x_ptr", "out_ptr", "n")] == ["*fp32", "*fp32:16", "i32"]
    args[2] = 16 * 1024 + 8  # a multiple of 8 (and of 16 below): not specialized either
    assert kernel[(1,)](*args, **kwargs) is first and len(seen) == 1
    args[2] = 16 * 1024  # a multiple of 16, and the other array's alignment still counts
    args[1] = DeviceArray(args[1].address + 8)
    assert kernel[(1,)](*args, **kwargs) is not first
    assert [seen[1][0][name] for name in ("x_ptr", "out_ptr", "n")] == ["*fp32", "*fp32", "i32"]


@tw.jit
def desc_copy_kernel(in_desc, out_ptr, BLOCK: tl.constexpr):
    tile = in_desc.load([0, 0])
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs[:, None] * BLOCK + offs[None, :], tile)


def test_descriptors_specialize_on_block_and_tma_fit(monkeypatch):
    """Compiled for sm_80 (no TMA): the launch passes base, shapes and strides, and needs no
    driver."""
    stand_in_gpu(monkeypatch, "sm_80")
    desc_copy_kernel.clear_cache()
    base, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    fits = TensorDescriptor(base, [64, 64], [64, 1], [16, 16])
    first = desc_copy_kernel[(1,)](fits, out, BLOCK=16)
    assert (
        desc_copy_kernel[(1,)](TensorDescriptor(base, [64, 64], [64, 1], [16, 16]), out, BLOCK=16)
        is first
    )
    misaligned = TensorDescriptor(DeviceArray((1 << 20) + 4), [64, 64], [64, 1], [16, 16])
    other = desc_copy_kernel[(1,)](misaligned, out, BLOCK=16)
    assert other is not first
    parts = [specialize.key_part(d) for d in (fits, misaligned)]
    assert parts == ["tensordesc<fp32,16x16,zero>:16", "tensordesc<fp32,16x16,zero>"]
    wider = desc_copy_kernel[(1,)](
        TensorDescriptor(base, [64, 64], [64, 1], [32, 32]), out, BLOCK=32
    )
    assert wider is not first and wider is not other and len(desc_copy_kernel.cache) == 3


def test_a_descriptor_extent_of_2_31_is_refused_at_launch(monkeypatch):
    """Descriptor shapes are int32 (as Triton's): the pointer form of their blocks adds positions in
    32 bits. A wider extent stops the launch with the argument's name, before anything runs."""
    stand_in_gpu(monkeypatch, "sm_80")
    base, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    for shape in ([2**31, 64], [64, -1]):
        with pytest.raises(LaunchError, match=r"tensor descriptor 'in_desc' has shape .*2\*\*31"):
            desc_copy_kernel[(1,)](TensorDescriptor(base, shape, [64, 1], [16, 16]), out, BLOCK=16)
    desc_copy_kernel[(1,)](TensorDescriptor(base, [2**31 - 1, 64], [64, 1], [16, 16]), out, BLOCK=16)


def test_the_table_reads_every_argument_kind():
    rng = np.random.default_rng()
    address = 16 * int(rng.integers(1, 1 << 20))
    numpy = np.zeros(4, np.float16)
    assert specialize.specialize(numpy) == (
        "*fp16:16@full",
        numpy.ctypes.data,
    )  # host: full path only
    assert specialize.array_address(numpy) == ("fp16", numpy.ctypes.data)
    assert specialize.key_part(7) == "i32" and specialize.key_part(-32) == "i32:16"
    assert specialize.key_part(True) == "i1" and specialize.key_part(0.5) == "fp32"
    assert specialize.key_part(None) == "None" and specialize.key_part(np.int64(3)) == "i64"
    assert specialize.key_part(-(2**40)) == "i64:16" and specialize.key_part(2**64 - 1) == "u64"
    with pytest.raises(ArgumentOverflowError, match="fits in no 64-bit kind"):
        specialize.key_part(2**64)
    with pytest.raises(LaunchError, match="cannot pass a list"):
        specialize.key_part([1])
    assert specialize.array_address([1]) is None
    spec = specialize.arg_spec("x", specialize.key_part(DeviceArray(address + 4, "float16")))
    assert (spec.type, spec.divisible_16, spec.equal_1, spec.key) == (
        "*fp16",
        False,
        False,
        "*fp16",
    )
    assert specialize.arg_spec("n", "i32:16:1").key == "i32:16:1"
    assert [specialize.key_part(n) for n in (4104, 4100, 4098, -8)] == ["i32:8", "i32:4", "i32", "i32:8"]
    assert specialize.key_part(2**40 + 8) == "i64:8" and specialize.key_part(2**63 + 4) == "u64:4"
    spec = specialize.arg_spec("n", "i32:8")
    assert (spec.divisible_16, spec.divisible_by, spec.key) == (False, 8, "i32:8")


def test_a_ragged_size_compiles_apart_from_multiples_of_16_and_of_nothing(compiles):
    """N = 4104 (fp16 rows of whole 16-byte chunks), 4096 and 4100 are three compiles, each with its
    divisibility on the IR; the same N again, on the warm path, compiles nothing."""
    seen, full_runs = compiles
    affine_kernel.clear_cache()
    args, kwargs = _base_call(np.random.default_rng())
    kernels = {}
    for n, says in ((4104, "i32:8"), (4096, "i32:16"), (4100, "i32:4"), (4098, "i32")):
        args[2] = n
        kernels[n] = affine_kernel[(1,)](*args, **kwargs)
        assert seen[-1][0]["n"] == says
        divisibility = {"i32:8": 8, "i32:16": 16, "i32:4": 4, "i32": None}[says]
        header = kernels[n].asm["tile"].splitlines()[0]
        attr = f"%n: i32 {{tt.divisibility = {divisibility}}}"
        assert (attr in header) == bool(divisibility) and ("%n: i32," in header) != bool(divisibility)
    assert len(seen) == 4 and len({id(k) for k in kernels.values()}) == 4
    runs = len(full_runs)
    args[2] = 4104
    assert affine_kernel[(1,)](*args, **kwargs) is kernels[4104] and len(seen) == 4
    assert len(full_runs) == runs
    assert specialize.normalize_grid(5, None) == (5, 1, 1)
    assert specialize.normalize_grid(lambda meta: (meta["n"], 2), {"n": 3}) == (3, 2, 1)
    with pytest.raises(LaunchError, match="1 to 3 dimensions"):
        specialize.normalize_grid((1, 1, 1, 1), None)


def test_warm_paths_let_unexpected_errors_through(compiles, monkeypatch):
    """The warm paths catch only what they expect (specialize.KEY_MISSES, LAUNCH_REFUSALS): a bug
    in the table is not hidden behind a silent fall back to the full path."""
    affine_kernel.clear_cache()
    args, kwargs = _base_call(np.random.default_rng())
    affine_kernel[(1,)](*args, **kwargs)

    def broken(value):
        raise ZeroDivisionError("a bug in a specializer")

    monkeypatch.setitem(specialize.SPECIALIZE, float, broken)
    with pytest.raises(ZeroDivisionError):
        affine_kernel[(1,)](*args, **kwargs)
    with pytest.raises(ZeroDivisionError):
        affine_kernel.run(*args, grid=(1,), num_warps=4, **kwargs)


def test_binder_does_not_import_the_jit():
    import ast
    import inspect

    for module in (binder, specialize):
        tree = ast.parse(inspect.getsource(module))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "jit" not in imported and not any(m and m.endswith(".jit") for m in imported), module
