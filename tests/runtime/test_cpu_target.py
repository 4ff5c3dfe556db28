"""The cpu target itself: selection (target="cpu", TILEWORKBENCH_TARGET), its stages, torch CPU tensors,
host math against float64 NumPy, device_assert, and the measured roofline ceilings."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import Config, config
from tileworkbench.errors import LaunchError


@tw.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tw.jit
def math_kernel(x_ptr, exp_ptr, log_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(exp_ptr + offs, tl.exp(x))
    tl.store(log_ptr + offs, tl.log(tl.abs(x)))


@tw.jit(debug=True)  # device_assert is compiled in debug mode only, as in Triton
def assert_kernel(x_ptr, N: tl.constexpr):
    tl.device_assert(tl.load(x_ptr + tl.arange(0, N)) > 0, "x must be positive")


@pytest.fixture
def on_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "interpret", False)
    monkeypatch.setattr(config, "target", "cpu")
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")


def test_env_variable_selects_the_target(monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_TARGET", "cpu")
    assert Config().target == "cpu"
    from tileworkbench.backends import backend_for

    assert backend_for("cpu").name == "cpu" and not backend_for("cpu").is_gpu


def test_compile_gives_llvm_and_host_assembly():
    compiled = tw.compile(scale_add, signature="x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,n=i32,alpha=fp32",
                          constexprs={"BLOCK": 64}, target="cpu")
    assert compiled.target == "cpu"
    assert {"tile-gpu", "llvm", "asm"} <= set(compiled.asm)
    assert "define void @scale_add_grid" in compiled.asm["llvm"]
    assert "scale_add_grid" in compiled.asm["asm"] and "ptx" not in compiled.asm


def test_numpy_and_torch_arguments_and_a_grid_over_threads(on_cpu):
    rng = np.random.default_rng()
    n = 10_000
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    scale_add[(tw.cdiv(n, 256),)](x, y, out, n, 1.5, BLOCK=256)
    want = 1.5 * x.astype(np.float64) + y
    assert np.max(np.abs(out - want) / np.maximum(np.abs(want), 1e-6)) < 1e-5
    torch = pytest.importorskip("torch")
    tx, ty, tout = torch.from_numpy(x), torch.from_numpy(y), torch.full((n,), float("nan"))
    scale_add[(tw.cdiv(n, 256),)](tx, ty, tout, n, -2.0, BLOCK=256)
    want = -2.0 * x.astype(np.float64) + y
    assert np.max(np.abs(tout.numpy() - want) / np.maximum(np.abs(want), 1e-6)) < 1e-5


def test_host_exp_and_log_keep_the_gpu_accuracy(on_cpu):
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-80, 80, 100), rng.uniform(-1, 1, 20), [0.0, -0.0, 1e-40, 88.0,
                        -103.0, np.inf, -np.inf, np.nan]]).astype(np.float32)  # 128: IR grows per element
    exp_out, log_out = np.full_like(x, np.nan), np.full_like(x, np.nan)
    math_kernel[(1,)](x, exp_out, log_out, N=x.size)
    with np.errstate(all="ignore"):
        want_exp, want_log = np.exp(x.astype(np.float64)), np.log(np.abs(x.astype(np.float64)))
    finite = np.isfinite(want_exp) & (want_exp > 1e-37) & (want_exp < 3e38)
    # exp(x) = 2^(x * log2 e) as on the GPU: rounding x * log2 e costs |x| ulp-sized relative error
    bound = 1.2e-7 * (np.abs(x[finite].astype(np.float64)) + 4)
    assert np.all(np.abs(exp_out[finite] / want_exp[finite] - 1) < bound)
    assert np.array_equal(np.isnan(exp_out), np.isnan(want_exp))
    ok = np.isfinite(want_log)
    assert np.max(np.abs(log_out[ok] - want_log[ok]) / np.maximum(np.abs(want_log[ok]), 1)) < 2e-6
    assert np.array_equal(log_out[~ok], want_log[~ok].astype(np.float32), equal_nan=True)


def test_device_assert_raises_the_interpreters_error_after_the_launch(on_cpu):
    """Debug mode on the cpu target is the GPU's (bounds checks and an error record): the same
    DeviceAssertionError, with kernel, line, program id and failing index."""
    from tileworkbench.errors import DeviceAssertionError

    assert_kernel[(1,)](np.ones(8, np.float32), N=8)
    x = np.ones(8, np.float32)
    x[5] = -1.0
    message = "x must be positive in kernel 'assert_kernel'"
    with pytest.raises(DeviceAssertionError, match=message) as info:
        assert_kernel[(2,)](x, N=8)
    line = next(n for n, text in enumerate(open(__file__), 1)
                if "tl.device_assert(tl.load(x_ptr" in text)
    assert f"test_cpu_target.py:{line}" in str(info.value)  # the kernel's source line
    # both programs read the same x: the first to fail is recorded, whichever it is (as on the GPU)
    assert re.search(r"program id \([01], 0, 0\), failing index \(5,\)", str(info.value))


def test_gpu_arrays_are_refused_with_a_hint(on_cpu):
    class DeviceArray:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}

    from tileworkbench.backends.cpu.launch import host_address

    with pytest.raises(LaunchError, match="host arrays"):
        host_address(DeviceArray(), "x_ptr", "k")


def test_host_ceilings_are_measured_once_and_cached(monkeypatch, tmp_path):
    from tileworkbench.workbench import target_ceilings

    monkeypatch.setattr(config, "cache_dir", tmp_path)
    monkeypatch.setattr(target_ceilings, "COPY_ELEMENTS", 2**18)
    monkeypatch.setattr(target_ceilings, "FMA_ITERATIONS", 16)
    first = target_ceilings.target_ceilings("cpu")
    assert first["dram"]["value"] > 1e8 and first["fp32"]["value"] > 1e8
    assert first["device"].startswith("CPU ")
    monkeypatch.setattr(target_ceilings, "measure", lambda *args: pytest.fail("measured twice"))
    assert target_ceilings.target_ceilings("cpu") == first
    assert target_ceilings.target_ceilings("interpreter") is None  # not a host target


@tw.jit
def scale_add_sum(x_ptr, y_ptr, out_ptr, sum_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, alpha * x + tl.load(y_ptr + offs, mask=mask), mask=mask)
    tl.store(sum_ptr + tl.program_id(0), tl.sum(x))  # a reduction: not strip-mined


ADD_SUM_SIGNATURE = "x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,sum_ptr=*fp32,n=i32,alpha=fp32"


def test_tensors_are_llvm_vectors_so_the_code_does_not_grow_with_the_block():
    """A tensor is one `<N x T>` value: the elementwise add of 1024 elements is one vector fadd, and
    the kernel's LLVM IR is about as long at BLOCK=1024 as at BLOCK=64 (it grew per element before)."""
    def llvm_lines(block):
        compiled = tw.compile(scale_add_sum, signature=ADD_SUM_SIGNATURE,
                              constexprs={"BLOCK": block}, target="cpu")
        return compiled.asm["llvm"]

    small, large = llvm_lines(64), llvm_lines(1024)
    assert "<1024 x float>" in large and "fmul" in large
    body = [line for line in large.splitlines() if ("fadd" in line or "fmul" in line)
            and "<1024 x float>" in line]
    assert len(body) <= 4, body
    assert len(large.splitlines()) < 1.5 * len(small.splitlines())


def test_a_lane_local_program_runs_as_a_loop_over_chunks_of_simd_registers(on_cpu):
    """Elementwise work on a 1024-lane tile is strip-mined (backends/cpu/chunks.py): an `scf.for`
    over chunks of a few registers' lanes, no 1024-lane LLVM value (it spilled), and the same
    results, masked tail included."""
    from tileworkbench.backends.cpu.codegen import chunk_lanes

    lanes = chunk_lanes()
    compiled = tw.compile(scale_add, signature="x_ptr=*fp32:16,y_ptr=*fp32:16,out_ptr=*fp32:16,"
                          "n=i32,alpha=fp32", constexprs={"BLOCK": 1024}, target="cpu")
    tile_gpu = compiled.asm["tile-gpu"]
    assert "scf.for %chunk" in tile_gpu
    assert f"tensor<{lanes}xf32" in tile_gpu and "1024xf32" not in tile_gpu
    assert "<1024 x" not in compiled.asm["llvm"] and f"<{lanes} x float>" in compiled.asm["llvm"]
    rng = np.random.default_rng()
    n = 5 * 1024 + 77  # a masked tail that ends mid-chunk
    x, y = (rng.standard_normal(n + 64, dtype=np.float32) for _ in range(2))
    out = np.full(n + 64, np.nan, np.float32)
    scale_add[(tw.cdiv(n, 1024),)](x, y, out, n, 0.75, BLOCK=1024)
    want = 0.75 * x[:n].astype(np.float64) + y[:n]
    assert np.max(np.abs(out[:n] - want) / np.maximum(np.abs(want), 1e-6)) < 1e-6
    assert np.all(np.isnan(out[n:]))  # nothing past the mask


def test_a_reduction_keeps_the_whole_tile_and_agrees(on_cpu):
    compiled = tw.compile(scale_add_sum, signature=ADD_SUM_SIGNATURE, constexprs={"BLOCK": 256},
                          target="cpu")
    assert "scf.for" not in compiled.asm["tile-gpu"]
    rng = np.random.default_rng()
    n = 3 * 256 - 5
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out, sums = np.full(n, np.nan, np.float32), np.full(3, np.nan, np.float32)
    scale_add_sum[(3,)](x, y, out, sums, n, -1.25, BLOCK=256)
    assert np.max(np.abs(out - (-1.25 * x.astype(np.float64) + y))) < 1e-5
    want = [x[i * 256:(i + 1) * 256].astype(np.float64).sum() for i in range(3)]
    assert np.max(np.abs(sums - want)) < 1e-4


@tw.jit
def inline_ptx_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offs)],
                                  dtype=tl.int32, is_pure=True, pack=1)  # INLINE PTX
    tl.store(out_ptr + offs, y)


def test_inline_ptx_is_refused_naming_the_line():
    """PTX has no host meaning (tl.extra.cuda's own few strings aside: test_extra_cuda.py)."""
    from tileworkbench.errors import CompilationError

    with pytest.raises(CompilationError, match="inline PTX cannot run on the cpu target") as info:
        tw.compile(inline_ptx_kernel, signature="x_ptr=*i32,out_ptr=*i32", constexprs={"N": 8},
                   target="cpu", use_cache=False)
    assert "# INLINE PTX" in str(info.value) or "test_cpu_target.py" in str(info.value)


@tw.jit
def unknown_extern_kernel(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.extern_elementwise("libdevice", "", [tl.load(x_ptr + offs)],
                              {(tl.float32,): ("__nv_frobnicatef", tl.float32)}, is_pure=True)
    tl.store(x_ptr + offs, y)


def test_a_libdevice_function_nobody_has_is_refused_by_name():
    from tileworkbench.errors import CompilationError

    with pytest.raises(CompilationError, match="frobnicatef"):
        tw.compile(unknown_extern_kernel, signature="x_ptr=*fp32", constexprs={"N": 8},
                   target="cpu", use_cache=False)


def test_libdevice_without_a_host_version_calls_the_interpreters(on_cpu):
    """erfinv has no C-library namesake: the kernel calls back into the interpreter's NumPy version
    (host_calls.py), so its values are the interpreter's."""
    from tileworkbench.language.extra import libdevice

    @tw.jit
    def erfinv_kernel(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, libdevice.erfinv(tl.load(x_ptr + offs)))

    rng = np.random.default_rng()
    x = rng.uniform(-0.99, 0.99, 64)
    out = np.full(64, np.nan)
    erfinv_kernel[(1,)](x, out, N=64)
    import math

    assert np.max(np.abs(np.array([math.erf(v) for v in out]) - x)) < 1e-12
    llvm_text = erfinv_kernel.warmup(x, out, N=64, grid=(1,)).asm["llvm"]
    assert "tw_host.__nv_erfinv.f64.f64" in llvm_text


def test_a_cpu_launch_is_timed_and_placed_against_the_hosts_measured_ceilings(on_cpu, monkeypatch):
    """The workbench's roofline for a cpu-target launch: the host's ceilings (measured once with
    compiled kernels, workbench/target_ceilings.py; stubbed here for speed), the launch's own time,
    and the fraction of the bound it reached."""
    from tileworkbench.runtime.record import record_launches
    from tileworkbench.workbench import build
    from tileworkbench.workbench.build import ReportOptions, report_for_launch
    from tileworkbench.workbench.roofline import bound_of

    ceilings = {"device": "CPU test host (2 cores)",
                "dram": {"value": 20e9, "unit": "B/s", "detail": "copy"},
                "fp32": {"value": 50e9, "unit": "FLOP/s", "detail": "fma"}}
    monkeypatch.setattr(build, "target_ceilings", lambda target: ceilings)
    rng = np.random.default_rng()
    n = 1 << 16
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    with record_launches() as launches:
        scale_add[(n // 1024,)](x, y, out, n, 2.0, BLOCK=1024)
    ref = 2.0 * x.astype(np.float64) + y
    report = report_for_launch(launches[-1], ReportOptions(bench=5, ref=ref))
    assert report.check is not None and report.check.passed
    assert report.peaks.device == "CPU test host (2 cores)"
    dram = report.peaks.best("dram")
    assert dram.value == 20e9 and dram.source == "measured"
    point = report.point
    assert point.seconds is not None and point.seconds > 0  # timed, not placed by intensity alone
    assert point.bytes >= 3 * 4 * n
    bound = bound_of(point, report.peaks)
    assert bound is not None and bound.name == "dram"
    assert bound.attainable == pytest.approx(20e9 * point.flops / point.bytes)
    assert bound.fraction == pytest.approx(point.flops / point.seconds / bound.attainable)


def test_the_pool_helps_only_where_it_pays(monkeypatch):
    """Helpers for a launch: always before the first measurement; never for less than a hand-off;
    for a few milliseconds' work only while a core is idle (a late helper holds the launch up)."""
    from tileworkbench.backends.cpu import launch

    monkeypatch.setattr(launch, "workers", lambda: 2)
    monkeypatch.setattr(launch, "_cores_busy", lambda: False)
    assert launch._pool_pays(None, 1000)
    assert not launch._pool_pays(1e-8, 1000)  # 10 us in all
    assert launch._pool_pays(1e-6, 1000)  # 1 ms on an idle machine
    monkeypatch.setattr(launch, "_cores_busy", lambda: True)
    assert not launch._pool_pays(1e-6, 1000)
    assert launch._pool_pays(1e-5, 1000)  # 10 ms: worth a late helper
    monkeypatch.setattr(launch, "workers", lambda: 1)
    assert not launch._pool_pays(None, 1000)


def test_every_program_runs_once_when_the_pool_helps(on_cpu, monkeypatch):
    from tileworkbench.backends.cpu import launch

    @tw.jit
    def program_ids(out_ptr):
        tl.atomic_add(out_ptr + tl.program_id(0), 1)

    monkeypatch.setattr(launch, "_pool_pays", lambda seconds, programs: True)
    counts = np.zeros(1001, np.int32)
    program_ids[(1001,)](counts)
    assert np.all(counts == 1)
