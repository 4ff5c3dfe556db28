"""The JIT's warm launch path (runtime/binder.py + CudaKernel.launch_values), run without a GPU: the CUDA
kernel is a stand-in that records what the driver would receive, and device arrays are stand-ins with
torch's `is_cuda` / `data_ptr()` / `dtype`. Checked: a repeated call skips the full path and packs the
same values the full path packs; every change that must re-specialize (alignment, 1, 16-multiples,
constexprs, None, launch options, a changed global) leaves the warm path; bad calls get the full path's
errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config
from tileworkbench.errors import LaunchError
from tileworkbench.launch_checks import DEFAULT_MAX_GRID
from tileworkbench.cuda import arguments, launcher
from tileworkbench.runtime import binder, jit, specialize
from tileworkbench.runtime import compiler as compiler_module


class DeviceArray:
    """A CUDA array as the warm path sees a torch tensor."""

    def __init__(self, address: int, dtype="float32"):
        self.address = address
        self.dtype = np.dtype(dtype)
        self.is_cuda = True

    def data_ptr(self) -> int:
        return self.address

    @property
    def __cuda_array_interface__(self):  # the full path reads this
        return {"data": (self.address, False), "typestr": self.dtype.str, "shape": (1,), "version": 3}


class RecordingKernel(launcher.CudaKernel):
    """CudaKernel without CUDA: `launches` holds (grid, parameter values) of each launch."""

    def __init__(self, ptx, kernel_name, *, num_warps, shared, cubin=None, param_kinds=None,
                 param_names=None):
        self.name, self.num_warps, self.shared, self.device_id = kernel_name, num_warps, shared, 0
        self._max_grid = DEFAULT_MAX_GRID
        self._function_address, self.num_regs = 1, 10
        self._threads, self._check_current = 32 * num_warps, False
        self._block = (self._threads, 1, 1)
        self._params = arguments.ParamBuffer(param_kinds, param_names, kernel_name, None)
        self.launches = []
        # the values the driver would read through kernelParams (the 10th argument)
        self._launch_kernel = lambda fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra: (
            self.launches.append(((gx, gy, gz), self._params.values_at(params))))
        stream = types.SimpleNamespace(ptr=0)
        self._current_stream = lambda: stream


@pytest.fixture
def fake_gpu(monkeypatch):
    return stand_in_gpu(monkeypatch, "sm_90")


def stand_in_gpu(monkeypatch, arch: str) -> list[str]:
    """Launches compile for `arch` and run on RecordingKernel; returns the names of the kernels
    each full-path (`JITFunction._run`) launch ran, so a test can tell warm launches apart."""
    monkeypatch.setattr(launcher, "CudaKernel", RecordingKernel)
    monkeypatch.setattr(config, "target", "cuda")
    monkeypatch.setattr(config, "interpret", False)
    original = compiler_module.compile
    monkeypatch.setattr(jit, "compile", lambda *a, **k: original(*a, **{**k, "target": arch,
                                                                      "use_cache": False}))
    monkeypatch.setitem(specialize.SPECIALIZE, DeviceArray, specialize.SPECIALIZE_TORCH)
    monkeypatch.setattr(arguments.ParamBuffer, "_torch_type", DeviceArray, raising=False)
    full_runs = []
    original_run = jit.JITFunction._run

    def counting_run(self, *args, **kwargs):
        full_runs.append(self.fn.__name__)
        return original_run(self, *args, **kwargs)

    monkeypatch.setattr(jit.JITFunction, "_run", counting_run)
    return full_runs


OFFSET = tl.constexpr(1.0)


@tw.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, bias_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) * alpha + OFFSET
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


def _kernel_of(compiled) -> RecordingKernel:
    for entry in scale_kernel._fast.values():
        if entry.compiled is compiled:
            return entry.cuda
    raise AssertionError("no warm-path entry for this kernel")


def test_repeated_call_takes_the_warm_path_and_packs_the_same_values(fake_gpu):
    scale_kernel.clear_cache()
    rng = np.random.default_rng()
    x, out = DeviceArray(4096 * int(rng.integers(1, 1000))), DeviceArray(4096 * int(rng.integers(1, 1000)))
    n, alpha = int(rng.integers(1, 1 << 20)) * 16 + 3, float(rng.standard_normal())
    compiled = scale_kernel[(7,)](x, out, n, alpha, None, BLOCK=128)
    assert fake_gpu == ["scale_kernel"]
    cuda = _kernel_of(compiled)
    full = cuda.launches[-1]
    x2 = DeviceArray(x.address + 64 * 16)  # another array, same alignment class
    again = scale_kernel[(7,)](x2, out, n, alpha, None, BLOCK=128)
    assert again is compiled and fake_gpu == ["scale_kernel"]  # no second full run
    grid, values = cuda.launches[-1]
    assert grid == (7, 1, 1) == full[0]
    assert values[0] == x2.address and values[1:] == full[1][1:]
    assert values[2] == n and values[3] == pytest.approx(alpha, rel=1e-6)
    # a callable grid sees the arguments by name, on the warm path too
    scale_kernel[lambda meta: (meta["n"] // meta["BLOCK"] + 1,)](x2, out, n, alpha, None, BLOCK=128)
    assert cuda.launches[-1][0] == (n // 128 + 1, 1, 1) and fake_gpu == ["scale_kernel"]


@pytest.mark.parametrize("change", ["unaligned", "n_is_1", "n_multiple_of_16", "constexpr", "bias",
                                    "num_warps", "float_for_int", "maxnreg", "reflect_ftz"])
def test_changes_that_respecialize_leave_the_warm_path(fake_gpu, change):
    scale_kernel.clear_cache()
    x, out, bias = DeviceArray(1 << 20), DeviceArray(2 << 20), DeviceArray(3 << 20)
    first = scale_kernel[(1,)](x, out, 1000, 2.0, None, BLOCK=64)
    args, kwargs = [x, out, 1000, 2.0, None], {"BLOCK": 64}
    if change == "unaligned":
        args[0] = DeviceArray(x.address + 4)
    elif change == "n_is_1":
        args[2] = 1
    elif change == "n_multiple_of_16":
        args[2] = 1024
    elif change == "constexpr":
        kwargs["BLOCK"] = 128
    elif change == "bias":
        args[4] = bias
    elif change == "num_warps":
        kwargs["num_warps"] = 8
    elif change == "float_for_int":
        args[2] = 1000.0  # n becomes an fp32 parameter, as in Triton
    elif change == "maxnreg":
        kwargs["maxnreg"] = 40
    elif change == "reflect_ftz":
        kwargs["enable_reflect_ftz"] = False
    second = scale_kernel[(1,)](*args, **kwargs)
    assert second is not first
    assert fake_gpu == ["scale_kernel", "scale_kernel"]
    scale_kernel[(1,)](*args, **kwargs)  # and that specialization is warm now
    assert len(fake_gpu) == 2


@pytest.mark.parametrize("setting, value", [("override_arch", "sm80"), ("default_fp_fusion", False)])
def test_settings_that_change_the_compile_leave_the_warm_path(fake_gpu, monkeypatch, setting, value):
    """A warm entry is keyed by the options a call gives, not by these settings: while one is set,
    every launch takes the full path, which compiles for the setting."""
    scale_kernel.clear_cache()
    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    first = scale_kernel[(1,)](x, out, 1000, 2.0, None, BLOCK=64)
    scale_kernel[(1,)](x, out, 1000, 2.0, None, BLOCK=64)
    assert len(fake_gpu) == 1
    monkeypatch.setattr(config, setting, value)
    second = scale_kernel[(1,)](x, out, 1000, 2.0, None, BLOCK=64)
    scale_kernel[(1,)](x, out, 1000, 2.0, None, BLOCK=64)
    assert len(fake_gpu) == 3 and second is not first
    if setting == "default_fp_fusion":
        assert first.metadata.enable_fp_fusion and not second.metadata.enable_fp_fusion


def test_changed_global_recompiles(fake_gpu):
    global OFFSET
    scale_kernel.clear_cache()
    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    first = scale_kernel[(1,)](x, out, 100, 1.0, None, BLOCK=64)
    OFFSET = tl.constexpr(2.0)
    try:
        second = scale_kernel[(1,)](x, out, 100, 1.0, None, BLOCK=64)
    finally:
        OFFSET = tl.constexpr(1.0)
    assert second is not first and len(fake_gpu) == 2
    assert "2.000000e+00" in second.asm["tile"] or "2.0" in second.asm["tile"]


def test_bad_calls_get_the_full_paths_errors(fake_gpu):
    scale_kernel.clear_cache()
    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    scale_kernel[(1,)](x, out, 100, 1.0, None, BLOCK=64)
    with pytest.raises(LaunchError, match="no parameter 'BLOKC'"):
        scale_kernel[(1,)](x, out, 100, 1.0, None, BLOKC=64)
    with pytest.raises(LaunchError, match="missing the argument 'alpha'"):
        scale_kernel[(1,)](x, out, 100, BLOCK=64)
    with pytest.raises(LaunchError, match="grid"):
        scale_kernel[(-1,)](x, out, 100, 1.0, None, BLOCK=64)
    host = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="host array"):
        scale_kernel[(1,)](host, out, 100, 1.0, None, BLOCK=64)
    # a Triton backend option is accepted (and ignored) without leaving the warm path
    runs = len(fake_gpu)
    scale_kernel[(1,)](x, out, 100, 1.0, None, BLOCK=64, num_ctas=1)
    assert len(fake_gpu) == runs


def test_zero_grid_launches_nothing(fake_gpu):
    scale_kernel.clear_cache()
    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    compiled = scale_kernel[(1,)](x, out, 100, 1.0, None, BLOCK=64)
    cuda = _kernel_of(compiled)
    count = len(cuda.launches)
    scale_kernel[(0,)](x, out, 100, 1.0, None, BLOCK=64)
    assert len(cuda.launches) == count


@pytest.mark.parametrize("inline", [False, True], ids=["table", "inlined-tensor-branch"])
def test_binder_keys_split_calls_as_the_full_key_does(fake_gpu, monkeypatch, inline):
    """Two calls share a binder key exactly when they share the full path's specialization key. With
    `inline`, the stand-in arrays take the binder's inlined branch for torch tensors."""
    if inline:
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=DeviceArray))
    fn = scale_kernel
    bind, runtime = binder.make_binder(fn.arg_names, fn.constexpr_names, fn.defaults, fn.do_not_specialize,
                                       fn.no_align)
    host = DeviceArray(64)
    host.is_cuda = False
    key, _ = bind(host, DeviceArray(128), 5, 1.0, None, BLOCK=64)  # a host tensor: the full path's
    assert specialize.is_full_only(key[0]) and not specialize.is_full_only(key[1])
    assert runtime == ["x_ptr", "out_ptr", "n", "alpha", "bias_ptr"]
    rng = np.random.default_rng()
    calls = []
    for _ in range(60):
        x = DeviceArray(int(rng.choice([16, 4, 32, 8])) * int(rng.integers(1, 99)))
        n = int(rng.choice([1, 16, 32, 17, 5, -16, 2**31 + 16]))
        bias = None if rng.random() < 0.5 else DeviceArray(64)
        calls.append((x, DeviceArray(128), n, float(rng.standard_normal()), bias, int(rng.choice([64, 128]))))
    full, fast = {}, {}
    for i, (x, out, n, alpha, bias, block) in enumerate(calls):
        bound = dict(zip(fn.arg_names, (x, out, n, alpha, bias, block)))
        full.setdefault(fn._key(bound, "cuda", 4, 3, True), set()).add(i)
        key, values = bind(x, out, n, alpha, bias, BLOCK=block)
        fast.setdefault(key, set()).add(i)
        assert values[0] == x.address and values[2] == n
        assert values[4] == (None if bias is None else bias.address)
    assert sorted(map(sorted, full.values())) == sorted(map(sorted, fast.values()))


@tw.jit
def offset_kernel(x_ptr, out_ptr, n, shift=3, BLOCK: tl.constexpr = 64):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + tl.program_id(1) * n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + shift, mask=offs < n)


def test_generated_launcher_binds_as_python_does(fake_gpu):
    """Keywords in any order, defaults left out, 2-D grids: all warm, all packing the full path's values."""
    offset_kernel.clear_cache()
    rng = np.random.default_rng()
    x, out = DeviceArray(4096 * int(rng.integers(1, 999))), DeviceArray(4096 * int(rng.integers(1, 999)))
    n = int(rng.integers(1, 1 << 20)) * 16 + 5
    compiled = offset_kernel[(3, 2)](x, out, n)
    cuda = next(e.cuda for e in offset_kernel._fast.values() if e.compiled is compiled)
    full = cuda.launches[-1]
    assert full[0] == (3, 2, 1) and full[1] == (x.address, out.address, n, 3)
    calls = [lambda: offset_kernel[(3, 2)](x, out, n),
             lambda: offset_kernel[(3, 2)](n=n, out_ptr=out, x_ptr=x),
             lambda: offset_kernel[(3, 2, 1)](x, out_ptr=out, n=n, shift=3, BLOCK=64),
             lambda: offset_kernel[lambda meta: (3, meta["shift"] - 1)](x, out, n)]
    for call in calls:
        cuda.launches.clear()
        assert call() is compiled
        assert cuda.launches == [full]
    assert fake_gpu == ["offset_kernel"]  # one full run, for the first call only
    shift = int(rng.integers(2, 100)) * 2 + 1  # odd and not 1: the same specialization as 3
    offset_kernel[(1,)](x, out, n, shift)  # another runtime value of a defaulted parameter: same kernel
    assert cuda.launches[-1][1][3] == shift and fake_gpu == ["offset_kernel"]


def test_generated_launcher_hands_bad_calls_to_the_full_path(fake_gpu):
    offset_kernel.clear_cache()
    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    offset_kernel[(1,)](x, out, 100)
    with pytest.raises(LaunchError, match="takes 5 arguments, got 6"):
        offset_kernel[(1,)](x, out, 100, 3, 64, 7)
    with pytest.raises(LaunchError, match="missing the argument 'n'"):
        offset_kernel[(1,)](x, out, shift=2)
    with pytest.raises(LaunchError, match="cannot pass a list"):
        offset_kernel[(1,)](x, out, [100])
    with pytest.raises(LaunchError, match="grid"):
        offset_kernel[(1, 2, 3, 4)](x, out, 100)
    # a launch option still goes through `run`, and is warm there after its first call
    runs = len(fake_gpu)
    offset_kernel[(1,)](x, out, 100, num_warps=2)
    offset_kernel[(1,)](x, out, 100, num_warps=2)
    assert len(fake_gpu) == runs + 1


@tw.jit
def constants_only_kernel(BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 0)


def test_kernel_without_runtime_parameters_goes_warm(fake_gpu):
    constants_only_kernel.clear_cache()
    first = constants_only_kernel[(2,)](BLOCK=8)
    assert constants_only_kernel[(2,)](BLOCK=8) is first and fake_gpu == ["constants_only_kernel"]
    cuda = next(iter(constants_only_kernel._fast.values())).cuda
    assert cuda.launches == [((2, 1, 1), ())] * 2


def test_launches_from_several_threads_pack_their_own_values(fake_gpu):
    """The launcher fills its own parameter block in the thread that filed it; other threads take the
    locked path on the kernel's shared block. Every recorded launch must carry the values of its call."""
    import threading

    offset_kernel.clear_cache()
    out = DeviceArray(1 << 24)
    offset_kernel[(1,)](DeviceArray(1 << 20), out, 16 * 3 + 5)
    cuda = next(iter(offset_kernel._fast.values())).cuda
    cuda.launches.clear()
    errors = []

    def launch_many(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(300):
                k = int(rng.integers(1, 1 << 16))
                # x's address encodes n, so each launch's pair can be checked afterwards
                offset_kernel[(1,)](DeviceArray(k << 8), out, 16 * k + 5)
        except Exception as error:  # reported below; a thread's exception would otherwise vanish
            errors.append(error)

    threads = [threading.Thread(target=launch_many, args=(seed,)) for seed in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so a race between packing and launching shows
    try:
        for thread in threads:
            thread.start()
        launch_many(99)  # the owner thread at the same time
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert len(cuda.launches) == 4 * 300 and fake_gpu == ["offset_kernel"]
    for _, (x, out_address, n, shift) in cuda.launches:
        assert n == 16 * (x >> 8) + 5 and out_address == out.address and shift == 3


def test_an_argument_given_twice_is_a_type_error_warm_or_cold(fake_gpu):
    """Cold, the full path binds and raises ArgumentBindingError (a LaunchError and a TypeError); warm,
    CPython's own binding of the generated launcher raises TypeError. Both name the kernel and the
    parameter, and `except TypeError` catches both."""

    @tw.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 64):  # never launched before this test
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x, out = DeviceArray(1 << 20), DeviceArray(2 << 20)
    with pytest.raises(tw.ArgumentBindingError, match=r"copy_kernel got two values for 'n'"):
        copy_kernel[(1,)](x, out, 100, n=100)
    copy_kernel[(1,)](x, out, 100)  # now warm
    assert copy_kernel._launcher is not None
    with pytest.raises(TypeError, match=r"copy_kernel\(\) got multiple values for argument 'n'"):
        copy_kernel[(1,)](x, out, 100, n=100)
    with pytest.raises(TypeError, match="missing the argument 'n'"):  # the full path's, via the launcher
        copy_kernel[(1,)](x, out)


@tw.jit
def parameterless_kernel():
    x = tl.arange(0, 16)
    tl.static_assert(x.shape[0] == 16)
    tl.device_assert(tl.sum(x) == 120, "the sum of 0..15")


@tw.jit(debug=True)  # device_assert checks only in debug mode, as in Triton
def failing_parameterless_kernel():
    tl.device_assert(tl.sum(tl.arange(0, 16)) == 121, "never true")


def test_kernel_without_any_parameter_goes_warm(fake_gpu):
    """Issue 15: the warm launcher of `def kernel():` was generated as `def kernel(_tw_grid, , ...)`,
    a SyntaxError at the first launch (Triton's test_shapes_as_params, test_tensor_member)."""
    parameterless_kernel.clear_cache()
    first = parameterless_kernel[(3,)]()
    assert parameterless_kernel._launcher is not None
    assert parameterless_kernel[(3,)]() is first and fake_gpu == ["parameterless_kernel"]
    cuda = next(iter(parameterless_kernel._fast.values())).cuda
    assert cuda.launches == [((3, 1, 1), ())] * 2


@pytest.mark.parametrize("names, constexprs", [([], set()), (["N"], {"N"}), (["x", "N"], {"N"}),
                                               (["x"], set())])
def test_generated_launcher_compiles_for_any_parameter_list(names, constexprs):
    """The generator itself, without a GPU: every parameter list gives valid Python, and a call while
    the interpreter is on goes to the full path with the arguments by name."""
    calls = []

    def slow(grid, named, extra, more):
        calls.append((grid, named, extra, more))
        return "slow"

    cfg = types.SimpleNamespace(interpret=True)
    rec = types.SimpleNamespace(ACTIVE=False)
    launch = binder.make_launcher("k", names, constexprs, {}, set(), set(), {}, slow, cfg, rec)
    bind, runtime = binder.make_binder(names, constexprs, {}, set(), set())
    values = {name: i + 7 for i, name in enumerate(names)}
    assert launch((2,), **values) == "slow"
    assert calls == [((2,), values, {}, ())]
    key, packed = bind(**values)
    assert runtime == [n for n in names if n not in constexprs]
    assert packed == tuple(values[n] for n in runtime)


def test_kernel_without_any_parameter_runs_in_the_interpreter(monkeypatch):
    monkeypatch.setattr(config, "interpret", True)
    parameterless_kernel[(2,)]()
    with pytest.raises(tw.InterpreterError, match="never true"):  # the kernel body really ran
        failing_parameterless_kernel[(1,)]()


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
def test_kernel_without_any_parameter_assembles(tmp_path):
    compiled = tw.compile(parameterless_kernel, signature={}, target="sm_90")
    assert ".entry parameterless_kernel()" in compiled.asm["ptx"]
    src = tmp_path / "k.ptx"
    src.write_text(compiled.asm["ptx"])
    done = subprocess.run(["ptxas", "-arch", "sm_90", "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.gpu
def test_kernel_without_any_parameter_launches_on_the_gpu(monkeypatch):
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible")
    monkeypatch.setattr(config, "interpret", False)
    parameterless_kernel.clear_cache()
    first = parameterless_kernel[(4,)]()
    assert parameterless_kernel[(4,)]() is first  # the second launch through the generated launcher
    assert parameterless_kernel._launcher is not None
