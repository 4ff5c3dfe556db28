"""Triton's CUDA compile options: `maxnreg` (`.maxnreg N` on the kernel's `.entry`),
`enable_reflect_ftz` (libdevice's __CUDA_FTZ, `ex2.approx.ftz.f32`), `arch=` and the override-arch
setting (compile for that architecture), `num_ctas`, and `config.default_fp_fusion`. The PTX each
gives is checked and assembled with ptxas; launches run on every target against float64."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.backends import backend_for
from tileworkbench.config import Config, config
from tileworkbench.errors import OptionError
from tileworkbench.language.extra import libdevice


@tw.jit(noinline=True)
def store_row(out_ptr, x, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), x)


@tw.jit
def row_stats_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """Each program: x * x + the row's sum, over an N x N tile (many registers per thread)."""
    rows = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + tl.program_id(0) * N * N + rows)
    y = x * x + tl.sum(x, axis=1)[:, None]
    tl.store(out_ptr + tl.program_id(0) * N * N + rows, y)
    store_row(out_ptr + tl.program_id(0) * N * N, tl.sum(y, axis=0), N)


@tw.jit
def exp2_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.math.exp2(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@tw.jit
def sqrt_rn_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.sqrt_rn(tl.load(x_ptr + offs)))


ROW_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
EXP2_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@pytest.fixture
def gpu_target(monkeypatch, tmp_path):
    """Launches compile for the NVPTX back end (sm_90a), which `warmup` does without a GPU."""
    monkeypatch.setattr(config, "interpret", False)
    monkeypatch.setattr(config, "target", "sm_90a")
    monkeypatch.setattr(config, "override_arch", None)
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")


def _row_reference(x: np.ndarray, n: int) -> np.ndarray:
    tiles = x.astype(np.float64).reshape(-1, n, n)
    y = tiles * tiles + tiles.sum(axis=2, keepdims=True)
    y[:, 0, :] = y.sum(axis=1)  # store_row overwrites each tile's first row with the column sums
    return y.reshape(-1)


# -- maxnreg ---------------------------------------------------------------------------------------


@needs_ptxas
def test_maxnreg_is_on_the_entry_and_caps_registers(tmp_path, wait_for_cache_entries):
    free = tw.compile(row_stats_kernel, ROW_SIGNATURE, {"N": 64}, target="sm_90a", num_warps=2)
    capped = tw.compile(row_stats_kernel, ROW_SIGNATURE, {"N": 64}, target="sm_90a", num_warps=2,
                        maxnreg=48)
    ptx = capped.asm["ptx"]
    assert re.search(r"\.visible \.entry [^{;]*\.maxnreg 48", ptx), ptx[:2000]
    assert not re.search(r"\.func [^{;]*\.maxnreg", ptx)
    assert ".maxnreg" not in free.asm["ptx"]
    assert run_ptxas(ptx, "sm_90a", tmp_path).returncode == 0
    assert capped.metadata.maxnreg == 48 and free.metadata.maxnreg is None
    assert free.metadata.n_regs > 48 >= capped.metadata.n_regs, (free.n_regs, capped.n_regs)
    # part of the cache key: a hit keeps its own cap, and the two never share an entry
    wait_for_cache_entries(2)
    again = tw.compile(row_stats_kernel, ROW_SIGNATURE, {"N": 64}, target="sm_90a", num_warps=2,
                       maxnreg=48)
    assert again.metadata.cache_hit and again.metadata.maxnreg == 48 and again.asm["ptx"] == ptx


def test_maxnreg_launch_option_and_autotune_config(gpu_target):
    x = np.zeros(2 * 16 * 16, np.float32)
    k = row_stats_kernel.warmup(x, x, N=16, grid=(2,), num_warps=1, maxnreg=40)
    assert k.metadata.maxnreg == 40 and ".maxnreg 40" in k.asm["ptx"]
    assert ".maxnreg" not in row_stats_kernel.warmup(x, x, N=16, grid=(2,), num_warps=1).asm["ptx"]
    assert tw.Config({"N": 64}, maxnreg=40).all_kwargs()["maxnreg"] == 40


@pytest.mark.parametrize("bad", [0, 256, 12.5, True, "32"])
def test_maxnreg_out_of_range_names_the_kernel(bad, gpu_target):
    x = np.zeros(16 * 16, np.float32)
    with pytest.raises(OptionError, match=r"row_stats_kernel: maxnreg must be an integer from 1 to "
                                          rf"255 .*got {re.escape(repr(bad))}"):
        row_stats_kernel.warmup(x, x, N=16, grid=(1,), maxnreg=bad)


def test_maxnreg_launch_computes_the_same_on_every_target(target):
    """On the GPU the cap makes ptxas spill; the result must not change. Targets without registers
    (the interpreter, cpu) take the option and ignore it."""
    n, programs = 32, 3
    x = np.random.default_rng().standard_normal(programs * n * n).astype(np.float32)
    out = target.put(np.full_like(x, np.nan))
    row_stats_kernel[(programs,)](target.put(x), out, N=n, num_warps=1, maxnreg=32)
    want = _row_reference(x, n)
    got = target.get(out).astype(np.float64)
    assert np.max(np.abs(got - want) / np.abs(want).max()) < 1e-5


# -- enable_reflect_ftz ----------------------------------------------------------------------------


def test_reflect_ftz_picks_the_exp2_form(gpu_target):
    x = np.zeros(128, np.float32)
    forms = {}
    for option in (None, True, False):
        extra = {} if option is None else {"enable_reflect_ftz": option}
        k = exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), **extra)
        forms[option] = sorted(set(re.findall(r"\bex2\.approx[.\w]*", k.asm["ptx"])))
        assert k.metadata.enable_reflect_ftz == (option is not False)
    assert forms == {None: ["ex2.approx.ftz.f32"], True: ["ex2.approx.ftz.f32"],
                     False: ["ex2.approx.f32"]}


@needs_ptxas
@pytest.mark.parametrize("ftz", [True, False])
def test_reflect_ftz_sets_libdevice_reflection(ftz, tmp_path):
    k = tw.compile(sqrt_rn_kernel, ROW_SIGNATURE, {"BLOCK": 128}, target="sm_90a",
                   enable_reflect_ftz=ftz, use_cache=False)
    assert ('"nvvm-reflect-ftz", i32 1' in k.asm["llvm"]) == ftz
    suffix = ".ftz" if ftz else ""
    assert re.findall(r"\bsqrt\.[.\w]+", k.asm["ptx"]) == [f"sqrt.rn{suffix}.f32"]
    assert run_ptxas(k.asm["ptx"], "sm_90a", tmp_path).returncode == 0


def test_reflect_ftz_is_part_of_the_cache_key(wait_for_cache_entries):
    forms = []
    for ftz in (True, False, False):
        k = tw.compile(exp2_kernel, EXP2_SIGNATURE, {"BLOCK": 128}, target="sm_90",
                       enable_reflect_ftz=ftz)
        forms.append(("ex2.approx.ftz.f32" in k.asm["ptx"], k.metadata.enable_reflect_ftz))
        wait_for_cache_entries(1 if ftz else 2)
    assert forms == [(True, True), (False, False), (False, False)]
    assert k.metadata.cache_hit


@pytest.mark.parametrize("ftz", [True, False])
def test_exp2_subnormal_results_follow_reflect_ftz(ftz, target):
    """2^x for x in [-152, -100] (results down through the subnormals) against float64. Without ftz,
    every target keeps subnormal results; with it, targets that compile through LLVM (cpu, GPU)
    flush them to zero, as the GPU's ex2.approx.ftz.f32 does. The interpreter computes exactly
    either way (Triton's interpreter also ignores the option)."""
    rng = np.random.default_rng()
    n = 1000
    x = rng.uniform(-152.0, -100.0, n).astype(np.float32)
    x[:4] = [-126.5, -140.0, -149.0, -100.0]
    out = target.put(np.full(n, np.nan, np.float32))
    exp2_kernel[(4,)](target.put(x), out, n, BLOCK=256, enable_reflect_ftz=ftz)
    got = target.get(out).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    subnormal = want < 2.0 ** -126
    assert subnormal.sum() > 100 and (~subnormal).sum() > 100
    normal_err = np.abs(got - want)[~subnormal] / want[~subnormal]
    assert normal_err.max() < 2.0 ** -20
    flushes = ftz and "llvm" in backend_for(str(target)).stages  # the LLVM lowering's targets
    if flushes:
        assert np.all(got[subnormal] == 0.0)
    else:  # within a few units of 2^-149, the subnormals' spacing
        assert np.max(np.abs(got - want)[subnormal]) <= 4 * 2.0 ** -149
        representable = np.count_nonzero(want[subnormal] >= 2.0 ** -149)
        assert np.count_nonzero(got[subnormal]) > 0.9 * representable


@pytest.mark.parametrize("ftz", [True, False])
def test_exp2_subnormals_on_the_emulated_gpu(ftz):
    """The NVPTX lowering's PTX forms, run by the host emulator (a host thread per GPU thread)."""
    from cpu_emulator import Emulator

    n = 256
    x = np.random.default_rng().uniform(-152.0, -100.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    emulator = Emulator(exp2_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 128}, num_warps=1, reflect_ftz=ftz)
    emulator.launch((2,), x, out, n)
    want = np.exp2(x.astype(np.float64))
    subnormal = want < 2.0 ** -126
    assert np.max(np.abs(out - want)[~subnormal] / want[~subnormal]) < 2.0 ** -20
    if ftz:
        assert np.all(out[subnormal] == 0.0)
    else:
        assert np.max(np.abs(out - want)[subnormal]) <= 2.0 ** -149


def test_cli_takes_maxnreg_and_no_reflect_ftz(capsys):
    from tileworkbench.cli import main

    main(["compile", f"{__file__}::exp2_kernel", "-s", "x_ptr=*fp32,out_ptr=*fp32,n=i32",
          "-c", "BLOCK=128", "--maxnreg", "48", "--no-reflect-ftz", "-t", "sm_90a"])
    ptx = capsys.readouterr().out
    assert re.search(r"\.entry [^{;]*\.maxnreg 48", ptx) and "ex2.approx.f32" in ptx
    assert "ex2.approx.ftz" not in ptx


# -- arch= and the override-arch setting -----------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("arch, compiled_for, triton",
                         [("sm80", "sm_80", 80), ("sm90", "sm_90a", 90), ("sm_86", "sm_86", 86)])
def test_arch_compiles_for_that_architecture(arch, compiled_for, triton, gpu_target, tmp_path):
    x = np.zeros(128, np.float32)
    k = exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), arch=arch)
    assert k.metadata.target == compiled_for
    assert re.search(r"^\.target (\w+)", k.asm["ptx"], re.M).group(1) == compiled_for
    assert re.search(r'ttg\.target = "cuda:(\d+)"', k.asm["ttgir"]).group(1) == str(triton)
    assert run_ptxas(k.asm["ptx"], compiled_for, tmp_path).returncode == 0


def test_override_arch_setting_and_arch_option(gpu_target, monkeypatch):
    x = np.zeros(128, np.float32)
    monkeypatch.setattr(config, "override_arch", "sm80")
    assert exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,)).metadata.target == "sm_80"
    # the launch's own arch= wins over the setting, as in Triton
    explicit = exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), arch="sm90")
    assert explicit.metadata.target == "sm_90a"
    monkeypatch.setattr(config, "override_arch", None)
    assert exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,)).metadata.target == "sm_90a"


@pytest.mark.parametrize("variable", ["TILEWORKBENCH_OVERRIDE_ARCH", "TRITON_OVERRIDE_ARCH"])
def test_override_arch_from_the_environment(variable, monkeypatch):
    monkeypatch.delenv("TILEWORKBENCH_OVERRIDE_ARCH", raising=False)
    monkeypatch.delenv("TRITON_OVERRIDE_ARCH", raising=False)
    assert Config().override_arch is None
    monkeypatch.setenv(variable, "sm80")
    assert Config().override_arch == "sm80"


@pytest.mark.parametrize("bad", ["sm70", "gfx942", "sm_75", "hopper"])
def test_unknown_arch_is_an_error_naming_kernel_and_value(bad, gpu_target, monkeypatch):
    x = np.zeros(128, np.float32)
    pattern = rf"exp2_kernel: arch={re.escape(repr(bad))} is not an architecture .* sm80, .*sm_90a"
    with pytest.raises(OptionError, match=pattern):
        exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), arch=bad)
    monkeypatch.setattr(config, "override_arch", bad)
    with pytest.raises(OptionError, match=pattern):
        exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,))


@pytest.mark.only_on("interpreter", "cpu")  # launches, whatever the arch (the GPU compiles for it)
def test_targets_without_architectures_ignore_arch(target):
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    out = target.put(np.full(100, np.nan, np.float32))
    compiled = exp2_kernel[(1,)](target.put(x), out, 100, BLOCK=128, arch="sm80")
    assert compiled.metadata.target == str(target)
    got = target.get(out).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    assert np.max(np.abs(got - want) / want) < 2.0 ** -20


def test_num_ctas_above_one_needs_hopper(gpu_target, monkeypatch):
    """Triton's rule (a ValueError); where allowed, num_ctas is accepted and ignored (one CTA)."""
    from tileworkbench.errors import TargetOptionError

    x = np.zeros(128, np.float32)
    with pytest.raises(TargetOptionError, match=r"exp2_kernel: num_ctas > 1 requires NVIDIA SM90\+ "
                                                r"\(Hopper\); the target is sm_80"):
        exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), arch="sm80", num_ctas=2)
    assert issubclass(TargetOptionError, ValueError)
    assert exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), arch="sm80", num_ctas=1)
    hopper = exp2_kernel.warmup(x, x, 128, BLOCK=128, grid=(1,), num_ctas=2)
    assert hopper.metadata.target == "sm_90a"


# -- config.default_fp_fusion (Triton's knobs.language.default_fp_fusion) --------------------------


@pytest.mark.parametrize("default", [True, False])
def test_default_fp_fusion_setting(default, gpu_target, monkeypatch):
    monkeypatch.setattr(config, "default_fp_fusion", default)
    x = np.zeros(128, np.float32)
    k = row_stats_kernel.warmup(x, x, N=8, grid=(1,))
    assert k.metadata.enable_fp_fusion == default
    assert bool(re.search(r"\bfma\.rn\.f32", k.asm["ptx"])) == default
    # an explicit option still wins
    k = row_stats_kernel.warmup(x, x, N=8, grid=(1,), enable_fp_fusion=not default)
    assert k.metadata.enable_fp_fusion == (not default)


# -- on the GPU ------------------------------------------------------------------------------------


def _cupy():
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    import cupy

    return cupy


@pytest.mark.gpu
def test_gpu_maxnreg_spills_and_computes_the_same():
    cupy = _cupy()
    n, programs = 64, 4
    x = np.random.default_rng().standard_normal(programs * n * n).astype(np.float32)
    want = _row_reference(x, n)
    for cap in (None, 48):
        out = cupy.full(x.shape, np.nan, np.float32)
        extra = {} if cap is None else {"maxnreg": cap}
        k = row_stats_kernel[(programs,)](cupy.asarray(x), out, N=n, num_warps=2, **extra)
        got = out.get().astype(np.float64)
        assert np.max(np.abs(got - want) / np.abs(want).max()) < 1e-5, cap
        if cap is not None:
            assert k.metadata.n_regs <= cap and f".maxnreg {cap}" in k.asm["ptx"]


@pytest.mark.gpu
@pytest.mark.parametrize("ftz", [True, False])
def test_gpu_exp2_subnormals_follow_reflect_ftz(ftz):
    cupy = _cupy()
    n = 4096
    x = np.random.default_rng().uniform(-152.0, -100.0, n).astype(np.float32)
    out = cupy.full(n, np.nan, np.float32)
    exp2_kernel[(n // 256,)](cupy.asarray(x), out, n, BLOCK=256, enable_reflect_ftz=ftz)
    got = out.get().astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    subnormal = want < 2.0 ** -126
    assert np.max(np.abs(got - want)[~subnormal] / want[~subnormal]) < 2.0 ** -20
    if ftz:
        assert np.all(got[subnormal] == 0.0)
    else:
        assert np.max(np.abs(got - want)[subnormal]) <= 4 * 2.0 ** -149


@pytest.mark.gpu
def test_gpu_arch_sm90_launches_and_other_arch_compiles():
    cupy = _cupy()
    x = np.random.default_rng().standard_normal(300).astype(np.float32)
    out = cupy.full(300, np.nan, np.float32)
    k = exp2_kernel[(2,)](cupy.asarray(x), out, 300, BLOCK=256, arch="sm90")
    assert k.metadata.target == "sm_90a"
    want = np.exp2(x.astype(np.float64))
    assert np.max(np.abs(out.get() - want) / want) < 2.0 ** -20
    assert exp2_kernel.warmup(cupy.asarray(x), out, 300, BLOCK=256, grid=(2,),
                              arch="sm80").metadata.target == "sm_80"


@pytest.mark.gpu
def test_gpu_autotune_configs_compile_with_their_maxnreg():
    cupy = _cupy()
    n, programs = 32, 2
    tuned = tw.autotune([tw.Config({}, num_warps=1, maxnreg=32), tw.Config({}, num_warps=1)],
                        key=[], warmup=1, rep=3)(row_stats_kernel)
    x = np.random.default_rng().standard_normal(programs * n * n).astype(np.float32)
    out = cupy.full(x.shape, np.nan, np.float32)
    tuned[(programs,)](cupy.asarray(x), out, N=n)
    got = out.get().astype(np.float64)
    want = _row_reference(x, n)
    assert np.max(np.abs(got - want) / np.abs(want).max()) < 1e-5
    caps = {bound.compiled.metadata.maxnreg for bound in row_stats_kernel.cache.values()}
    assert {32, None} <= caps
