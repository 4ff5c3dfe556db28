"""The correctness checks of Triton's tutorials 01-06, run at small sizes: in the interpreter on CPU
torch tensors, or (GPU mode) compiled for the GPU on CUDA torch tensors, so each tutorial kernel's
GPU lowering is checked against torch too.

Each check calls the tutorial's own wrappers (and, where the tutorial has one, its own test function)
and compares with torch computed in float64. Outputs that the wrappers allocate with `torch.empty` /
`torch.empty_like` are poisoned (NaN, or a sentinel for integers) so an element a kernel fails to write
shows up as an error. `run_tutorial` loads one tutorial, runs its check while recording launches, and
returns a `TutorialResult`; tools/run_triton_tutorials.py prints a table of them.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tutorial_loader import load_tutorial

# Autotuned kernels time every config; AUTOTUNE_CONFIGS_ENV=n keeps the first n in the interpreter,
# the n smallest on the GPU (each one compiled and timed there).
AUTOTUNE_CONFIGS_ENV = "TUTORIAL_AUTOTUNE_CONFIGS"
# 08 and 09 autotune over 6-24 configs of 128 x 128 tiles each: one keeps their checks to seconds.
DEFAULT_CONFIGS = {"08-grouped-gemm.py": "1", "09-persistent-matmul.py": "1"}


@dataclass
class Comparison:
    """One output compared with its torch reference: max |ours - reference| and the tolerance."""

    what: str
    max_error: float
    tolerance: float
    verdict: bool | None = None  # the tutorial's own assertion's outcome, where it made one

    @property
    def ok(self) -> bool:
        if self.verdict is not None:
            return self.verdict
        return self.max_error <= self.tolerance  # NaN (an unwritten element) is never ok


@dataclass
class TutorialResult:
    tutorial: str
    kernels: list[str] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    targets: list[str] = field(default_factory=list)  # where the kernels ran ("interpreter", ...)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.comparisons) and all(c.ok for c in self.comparisons)

    @property
    def max_error(self) -> float:
        return max((c.max_error for c in self.comparisons), default=float("nan"))

    def failures(self) -> list[str]:
        lines = [self.error] if self.error else []
        lines += [
            f"{c.what}: max error {c.max_error:.3g} > {c.tolerance:.3g}"
            for c in self.comparisons
            if not c.ok
        ]
        return lines


def max_error(ours, reference) -> float:
    """max |ours - reference| in float64; NaN anywhere in `ours` gives NaN."""
    import torch

    difference = (ours.detach().to(torch.float64) - reference.detach().to(torch.float64)).abs()
    if torch.isnan(difference).any():
        return float("nan")
    return float(difference.max()) if difference.numel() else 0.0


@contextlib.contextmanager
def poisoned_empty() -> Iterator[None]:
    """torch.empty / torch.empty_like return NaN-filled floats and -7-filled integers meanwhile."""
    import torch

    empty, empty_like = torch.empty, torch.empty_like

    def poison(tensor):
        if tensor.dtype.is_floating_point and tensor.element_size() >= 2:
            tensor.fill_(float("nan"))
        elif not tensor.dtype.is_floating_point and tensor.dtype != torch.bool:
            tensor.fill_(-7)
        return tensor

    torch.empty = lambda *args, **kwargs: poison(empty(*args, **kwargs))
    torch.empty_like = lambda *args, **kwargs: poison(empty_like(*args, **kwargs))
    try:
        yield
    finally:
        torch.empty, torch.empty_like = empty, empty_like


@contextlib.contextmanager
def recorded_assertions(label: str, results: list[Comparison]) -> Iterator[None]:
    """Record every torch.allclose / torch.testing.assert_close the tutorial's own test makes, with
    its max error, its atol and its outcome (the tutorial's assertions still raise as before)."""
    import torch

    allclose, assert_close = torch.allclose, torch.testing.assert_close

    def record(kind: str, a, b, atol: float, ok: bool) -> None:
        what = f"{label}: {kind} #{sum(r.what.startswith(label) for r in results) + 1}"
        results.append(Comparison(what, max_error(a, b), atol, ok))

    def checked_allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
        ok = allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        record("torch.allclose", a, b, atol, bool(ok))
        return ok

    def checked_assert_close(actual, expected, *args, **kwargs):
        try:
            assert_close(actual, expected, *args, **kwargs)
        except AssertionError:
            record("assert_close", actual, expected, kwargs.get("atol") or 0.0, False)
            raise
        record("assert_close", actual, expected, kwargs.get("atol") or 0.0, True)

    torch.allclose, torch.testing.assert_close = checked_allclose, checked_assert_close
    try:
        yield
    finally:
        torch.allclose, torch.testing.assert_close = allclose, assert_close


# -- the checks, one per tutorial ---------------------------------------------------------------------


def check_vector_add(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    x = torch.rand(4099, device=module.DEVICE)
    y = torch.rand(4099, device=module.DEVICE)
    output = module.add(x, y)
    return [Comparison("add", max_error(output, x.double() + y.double()), 1e-6)]


def check_fused_softmax(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    x = torch.randn(37, 781, device=module.DEVICE)
    y = module.softmax(x)
    if not torch.allclose(y, torch.softmax(x, axis=1)):  # the tutorial's own assertion
        return [Comparison("softmax (torch.allclose)", float("inf"), 0.0)]
    return [Comparison("softmax", max_error(y, torch.softmax(x.double(), axis=1)), 1e-6)]


def check_matmul(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    a = torch.rand((100, 80), device=module.DEVICE, dtype=torch.float16) - 0.5
    b = torch.rand((80, 72), device=module.DEVICE, dtype=torch.float16) - 0.5
    reference = a.double() @ b.double()
    results = [Comparison("matmul fp16", max_error(module.matmul(a, b), reference), 1e-2)]
    leaky = torch.where(reference >= 0, reference, 0.01 * reference)
    results.append(
        Comparison(
            "matmul fp16 + leaky_relu",
            max_error(module.matmul(a, b, activation="leaky_relu"), leaky),
            1e-2,
        )
    )
    if not _interpreting():  # each Hopper-sized config on its own (autotuning checks only the best)
        for config in hopper_configs(module.matmul_kernel):
            with only_config(module.matmul_kernel, config):
                error = max_error(module.matmul(a, b), reference)
            results.append(Comparison(f"matmul fp16 at {_config_label(config)}", error, 1e-2))
    if getattr(module, "TORCH_HAS_FP8", False):  # the tutorial runs its fp8 check on CUDA only
        a8 = torch.randn((64, 96), dtype=torch.float16, device=module.DEVICE).to(torch.float8_e5m2)
        b8 = torch.randn((64, 96), dtype=torch.float16, device=module.DEVICE).T.to(
            torch.float8_e5m2
        )
        reference = a8.double() @ b8.double()
        results.append(
            Comparison(
                "matmul fp8e5 (b transposed)", max_error(module.matmul(a8, b8), reference), 0.125
            )
        )
    return results


# How many of 03's Hopper-sized configs (BLOCK_SIZE_M >= 64, 4 or more warps: a warp group per 64
# rows, so wgmma) the GPU check runs one by one, first ones in the tutorial's order (its fastest).
HOPPER_CONFIGS = 3


def hopper_configs(autotuner) -> list:
    """The first HOPPER_CONFIGS configs of `autotuner` that take wgmma on Hopper, as the tutorial
    wrote them (before limit_autotuning cut the list)."""
    configs = getattr(autotuner, "_configs_as_written", autotuner.configs)
    return [c for c in configs if c.kwargs.get("BLOCK_SIZE_M", 0) >= 64
            and (c.num_warps or 4) >= 4][:HOPPER_CONFIGS]


@contextlib.contextmanager
def only_config(autotuner, config) -> Iterator[None]:
    """`autotuner` launches `config` alone meanwhile (nothing to time, nothing remembered)."""
    saved = autotuner.configs, dict(autotuner.cache)
    autotuner.configs, autotuner.cache = [config], {}
    try:
        yield
    finally:
        autotuner.configs, autotuner.cache = saved


def _config_label(config) -> str:
    blocks = "x".join(str(config.kwargs[f"BLOCK_SIZE_{axis}"]) for axis in "MNK")
    return f"{blocks} w{config.num_warps} s{config.num_stages}"


def check_dropout(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    p = 0.5
    x = torch.randn(size=(3000,), device=module.DEVICE)
    x_keep = (torch.rand(size=(3000,), device=module.DEVICE) > p).to(torch.int32)
    output = module.dropout(x, x_keep=x_keep, p=p)
    reference = torch.where(x_keep.bool(), x.double() / (1 - p), 0.0)
    results = [Comparison("dropout with a keep mask", max_error(output, reference), 1e-6)]
    first = module.seeded_dropout(x, p=p, seed=123)
    again = module.seeded_dropout(x, p=p, seed=123)
    other = module.seeded_dropout(x, p=p, seed=512)
    results.append(
        Comparison("seeded dropout: same seed, same output", max_error(first, again), 0.0)
    )
    kept = first != 0
    scaled = torch.where(kept, x.double() / (1 - p), 0.0)
    results.append(
        Comparison("seeded dropout: kept values are x / (1 - p)", max_error(first, scaled), 1e-6)
    )
    results.append(
        Comparison(
            "seeded dropout: kept fraction is 1 - p",
            abs(float(kept.double().mean()) - (1 - p)),
            0.05,
        )
    )
    changed = float((kept != (other != 0)).double().mean())
    results.append(
        Comparison(
            "seeded dropout: another seed, another mask (1 - changed share)",
            abs(1 - changed) if changed < 0.25 else 0.0,
            0.0,
        )
    )
    return results


def check_layer_norm(module) -> list[Comparison]:
    import torch

    # torch's own fp16 layer norm backward on the CPU (the tutorial's reference) sums in fp16: at 151
    # rows its dw, db are ~8e-3 from float64, near the tutorial's 1e-2 tolerance; at 64 rows ~3e-3.
    M, N, dtype, eps = 64, 300, torch.float16, 1e-5
    results: list[Comparison] = []
    torch.manual_seed(0)
    with recorded_assertions("test_layer_norm", results):  # the tutorial's own test: y, dx, db, dw
        module.test_layer_norm(M, N, dtype)
    torch.manual_seed(1)
    weight = torch.rand((N,), dtype=dtype, device=module.DEVICE, requires_grad=True)
    bias = torch.rand((N,), dtype=dtype, device=module.DEVICE, requires_grad=True)
    x = (-2.3 + 0.5 * torch.randn((M, N), dtype=dtype, device=module.DEVICE)).requires_grad_(True)
    dy = 0.1 * torch.randn_like(x)
    y = module.layer_norm(x, (N,), weight, bias, eps)
    y.backward(dy)
    ours = [y, x.grad, weight.grad, bias.grad]
    leaves = [t.detach().double().requires_grad_(True) for t in (x, weight, bias)]
    reference = torch.nn.functional.layer_norm(leaves[0], (N,), leaves[1], leaves[2], eps)
    reference.backward(dy.double())
    expected = [reference] + [t.grad for t in leaves]
    names = ["layer_norm y vs fp64", "dx vs fp64", "dw vs fp64", "db vs fp64"]
    return results + [
        Comparison(name, max_error(a, b), 1e-2) for name, a, b in zip(names, ours, expected)
    ]


def check_fused_attention(module) -> list[Comparison]:
    import pytest

    results = []
    test_op = module.test_op
    # the tutorial's own test matrix for these (Triton 3.4's is causal only: "non-causal tests do not
    # pass at the moment"), at one small size: Z=1, H=2, N_CTX=128, HEAD_DIM=64, no warp specialization
    causals = _parameters(test_op, "causal", [False, True])
    modes = _parameters(test_op, "mode", ["fwd", "bwd"])
    providers = _parameters(test_op, "provider", ["triton-fp16", "triton-fp8"])
    for causal in causals:
        for mode in modes:
            for provider in providers:
                label = f"test_op {mode} {provider} causal={causal}"
                try:  # asserts on the output (and, backward, on dq, dk, dv)
                    with recorded_assertions(label, results):
                        test_op(1, 2, 128, 64, causal, False, mode, provider)
                except pytest.skip.Exception:
                    continue
        results.append(_attention_error(module, causal))
    return results


def _parameters(test, name: str, default: list) -> list:
    """The values a tutorial's test is `@pytest.mark.parametrize`d with for `name`."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == name:
            return list(mark.args[1])
    return default


def _attention_error(module, causal: bool) -> Comparison:
    import torch

    torch.manual_seed(20)
    shape = (1, 2, 128, 64)
    q, k, v = (
        torch.empty(shape, dtype=torch.float16, device=module.DEVICE).normal_(0.0, 0.5)
        for _ in range(3)
    )
    sm_scale = 0.5
    scores = (q.double() @ k.double().transpose(2, 3)) * sm_scale
    if causal:
        causal_mask = torch.ones(128, 128, device=module.DEVICE).tril() == 0
        scores = scores.masked_fill(causal_mask, float("-inf"))
    reference = torch.softmax(scores, dim=-1) @ v.double()
    output = module.attention(q, k, v, causal, sm_scale, False)
    return Comparison(f"attention fwd fp16 causal={causal}", max_error(output, reference), 1e-2)


# -- tutorials 07-11 ----------------------------------------------------------------------------
# Their wrappers ask torch.cuda for the SM count and allocate TMA scratch on "cuda"; in the
# interpreter (CPU torch) `cuda_stand_ins` answers with a small SM count, so the persistent loops
# each run several tiles, and places "cuda" allocations on the CPU.

INTERPRETER_SMS = 3


@contextlib.contextmanager
def cuda_stand_ins() -> Iterator[None]:
    """In the interpreter: an SM count of INTERPRETER_SMS, `device="cuda"` allocations on the CPU
    (on the GPU nothing changes)."""
    import torch

    if not _interpreting():
        yield
        return
    saved_cuda = torch.cuda.get_device_properties, torch.cuda.get_device_capability
    saved_factories = {name: getattr(torch, name) for name in CUDA_FACTORIES}

    class Properties:
        multi_processor_count = INTERPRETER_SMS

    def on_the_cpu(factory):
        def make(*args, **kwargs):
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs["device"] = "cpu"
            return factory(*args, **kwargs)

        return make

    torch.cuda.get_device_properties = lambda *args, **kwargs: Properties()
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    for name, factory in saved_factories.items():
        setattr(torch, name, on_the_cpu(factory))
    try:
        yield
    finally:
        torch.cuda.get_device_properties, torch.cuda.get_device_capability = saved_cuda
        for name, factory in saved_factories.items():
            setattr(torch, name, factory)


# The torch factories `cuda_stand_ins` keeps on the CPU (09's TMA scratch, 10's MX inputs).
CUDA_FACTORIES = ("empty", "zeros", "rand", "randint", "randn", "tensor", "full")


def _device(module):
    """Where the check's tensors go: the tutorial's DEVICE, else cuda unless interpreting."""
    device = getattr(module, "DEVICE", None)
    if device is not None:
        return device
    return "cpu" if _interpreting() else "cuda"


def _interpreting() -> bool:
    from tileworkbench.config import config

    return bool(config.interpret)


def check_extern_functions(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    size = 3001
    x = torch.rand(size, device=module.DEVICE) * 2 - 1
    output = torch.empty(size, device=module.DEVICE)
    grid = lambda meta: (module.triton.cdiv(size, meta["BLOCK_SIZE"]),)  # noqa: E731
    module.asin_kernel[grid](x, output, size, BLOCK_SIZE=1024)
    return [Comparison("libdevice.asin", max_error(output, torch.asin(x.double())), 1e-6)]


def check_grouped_gemm(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    device = module.DEVICE
    # (M, N, K): whole tiles of every config. 08's pointer kernel loads and stores unmasked ("assume
    # full tile for now"): on ragged sizes it wrote past each C into whatever torch placed after it
    # (on the GPU, the pointer tables the next programs load from: the illegal address of session 6).
    sizes = [(256, 128, 192), (128, 384, 64), (128, 128, 128)]
    _check_whole_tiles(module.grouped_matmul_kernel, sizes)
    group_a = [torch.rand((m, k), device=device, dtype=torch.float16) - 0.5 for m, n, k in sizes]
    group_b = [torch.rand((k, n), device=device, dtype=torch.float16) - 0.5 for m, n, k in sizes]
    results = []
    with cuda_stand_ins():
        outputs = module.group_gemm_fn(group_a, group_b)
        for index, (a, b, c) in enumerate(zip(group_a, group_b, outputs)):
            error = max_error(c, a.double() @ b.double())
            results.append(Comparison(f"grouped gemm #{index} {tuple(c.shape)}", error, 2e-2))
        b_transposed = [b.T.contiguous() for b in group_b]
        outputs = module.group_gemm_tma_fn(group_a, b_transposed)
        for index, (a, b, c) in enumerate(zip(group_a, group_b, outputs)):
            error = max_error(c, a.double() @ b.double())
            results.append(Comparison(f"grouped gemm (TMA) #{index}", error, 2e-2))
    return results


def _check_whole_tiles(kernel, sizes: list[tuple[int, int, int]]) -> None:
    """Refuse (M, N, K) sizes that are not whole tiles of every config of autotuned `kernel`."""
    for config in kernel.configs:
        blocks = [config.kwargs[f"BLOCK_SIZE_{axis}"] for axis in "MNK"]
        for size in sizes:
            if any(extent % block for extent, block in zip(size, blocks)):
                raise ValueError(f"{size} is not whole {tuple(blocks)} tiles; the kernel does not "
                                 f"mask its loads and stores")


def check_persistent_matmul(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    device = _device(module)
    M, N, K = 300, 272, 200  # 3 x 3 tiles of 128 x 128 (more than INTERPRETER_SMS), ragged edges
    a = torch.randn((M, K), device=device, dtype=torch.float16) * 0.5
    b = torch.randn((K, N), device=device, dtype=torch.float16) * 0.5
    reference = a.double() @ b.double()
    b_transposed = b.T.contiguous()
    results = []
    with cuda_stand_ins():
        runs = [
            ("matmul (one program per tile)", lambda: module.matmul(a, b)),
            ("matmul_persistent (grid of the SM count)", lambda: module.matmul_persistent(a, b)),
        ]
        for ws in (False, True):
            runs += [
                (f"matmul_tma ws={ws}", lambda ws=ws: module.matmul_tma(a, b_transposed, ws)),
                (
                    f"matmul_tma_persistent ws={ws}",
                    lambda ws=ws: module.matmul_tma_persistent(a, b_transposed, ws),
                ),
                (
                    f"matmul_descriptor_persistent ws={ws}",
                    lambda ws=ws: module.matmul_descriptor_persistent(a, b_transposed, ws),
                ),
            ]
        for label, run in runs:
            results.append(Comparison(label, max_error(run(), reference), 5e-2))
    return results


# Which of 10's formats its check runs (comma-separated; the GPU probe runs one per process).
BLOCK_SCALED_FORMATS_ENV = "TUTORIAL_BLOCK_SCALED_FORMATS"


def check_block_scaled_matmul(module) -> list[Comparison]:
    """The tutorial's own validation (its torch reference, assert_close at 1e-3) per format."""
    results: list[Comparison] = []
    formats = os.environ.get(BLOCK_SCALED_FORMATS_ENV, "mxfp8,mxfp4,nvfp4,mixed").split(",")
    for scale_type in formats:
        with cuda_stand_ins(), recorded_assertions(f"validate_block_scaled {scale_type}", results):
            module.validate_block_scaled(256, 256, 256, block_scale_type=scale_type)
    return results


def check_programmatic_dependent_launch(module) -> list[Comparison]:
    import torch

    torch.manual_seed(0)
    device = _device(module)
    x = torch.rand(5000, device=device)
    y = torch.rand(5000, device=device)
    reference = x.double() + y.double()
    return [
        Comparison(
            f"add launch_pdl={pdl}", max_error(module.add(x, y, launch_pdl=pdl), reference), 1e-6
        )
        for pdl in (True, False)
    ]


CHECKS: dict[str, Callable] = {
    "01-vector-add.py": check_vector_add,
    "02-fused-softmax.py": check_fused_softmax,
    "03-matrix-multiplication.py": check_matmul,
    "04-low-memory-dropout.py": check_dropout,
    "05-layer-norm.py": check_layer_norm,
    "06-fused-attention.py": check_fused_attention,
    "07-extern-functions.py": check_extern_functions,
    "08-grouped-gemm.py": check_grouped_gemm,
    "09-persistent-matmul.py": check_persistent_matmul,
    "10-block-scaled-matmul.py": check_block_scaled_matmul,
    "11-programmatic-dependent-launch.py": check_programmatic_dependent_launch,
}


# The kernels each check must launch (a check that launched fewer did not test the tutorial).
EXPECTED_KERNELS: dict[str, set[str]] = {
    "01-vector-add.py": {"add_kernel"},
    "02-fused-softmax.py": {"softmax_kernel"},
    "03-matrix-multiplication.py": {"matmul_kernel"},
    "04-low-memory-dropout.py": {"_dropout", "_seeded_dropout"},
    "05-layer-norm.py": {
        "_layer_norm_fwd_fused",
        "_layer_norm_bwd_dx_fused",
        "_layer_norm_bwd_dwdb",
    },
    "06-fused-attention.py": {"_attn_fwd", "_attn_bwd_preprocess", "_attn_bwd"},
    "07-extern-functions.py": {"asin_kernel"},
    "08-grouped-gemm.py": {"grouped_matmul_kernel", "grouped_matmul_tma_kernel"},
    "09-persistent-matmul.py": {
        "matmul_kernel",
        "matmul_kernel_persistent",
        "matmul_kernel_tma",
        "matmul_kernel_tma_persistent",
        "matmul_kernel_descriptor_persistent",
    },
    "10-block-scaled-matmul.py": {"block_scaled_matmul_kernel"},
    "11-programmatic-dependent-launch.py": {"add_kernel"},
}


def limit_autotuning(module, count: int | None, smallest: bool = False) -> None:
    """Keep the first (or the `smallest`) `count` configs of every autotuned kernel in `module` (the
    kernels stay as written)."""
    from tileworkbench.runtime.autotuner import Autotuner

    if not count:
        return
    for value in vars(module).values():
        if isinstance(value, Autotuner):
            value._configs_as_written = list(value.configs)
            configs = sorted(value.configs, key=_block_volume) if smallest else value.configs
            value.configs = configs[:count]


def _block_volume(config) -> tuple[int, int]:
    """(product of the BLOCK* meta-parameters, num_warps): how big a kernel the config makes."""
    volume = 1
    for name, value in config.kwargs.items():
        if "BLOCK" in name.upper() and isinstance(value, int):
            volume *= value
    return volume, config.num_warps or 4


@contextlib.contextmanager
def interpreted(on: bool) -> Iterator[None]:
    """Force the interpreter meanwhile (when `on`), whether or not a GPU is visible."""
    from tileworkbench.config import config

    saved = config.interpret
    config.interpret = saved or on
    try:
        yield
    finally:
        config.interpret = saved


def gpu_missing() -> str | None:
    """Why the GPU mode cannot run here (no CUDA torch, no GPU for tileworkbench), or None."""
    import torch

    from tileworkbench.cuda.device import gpu_available

    if not torch.cuda.is_available():
        return "torch has no CUDA device (a CPU-only torch, or no GPU)"
    if not gpu_available():
        return "tileworkbench sees no GPU (CuPy or a CUDA device is missing)"
    return None


def ran_on_gpu(launch) -> bool:
    """Whether a recorded launch ran compiled for the GPU (the one place that reads its target)."""
    return launch.target != "interpreter"


def run_tutorial(folder: Path, name: str, interpret: bool = True) -> TutorialResult:
    """Load tutorial `name` from `folder`, run its check (in the interpreter unless `interpret` is
    False: then on the GPU, on CUDA tensors), and say what ran, where, and how close it came."""
    from tileworkbench.runtime.record import record_launches

    result = TutorialResult(name)
    begin = time.perf_counter()
    try:
        with interpreted(interpret), record_launches() as launches:
            module = load_tutorial(folder / name)
            count = int(os.environ.get(AUTOTUNE_CONFIGS_ENV, DEFAULT_CONFIGS.get(name, "0")))
            limit_autotuning(module, count, smallest=not interpret)
            with poisoned_empty():
                result.comparisons = CHECKS[name](module)
    except Exception as error:  # noqa: BLE001 (a failing tutorial is a row of the table, not a crash)
        frames = traceback.extract_tb(error.__traceback__)
        place = next(
            (
                f"{Path(f.filename).name}:{f.lineno}"
                for f in reversed(frames)
                if f.filename.endswith(name)
            ),
            "",
        )
        text = f"{type(error).__name__}: {error}".strip()
        result.error = (f"{place}: {text}" if place else text)[:2000]
    result.kernels = sorted({launch.compiled.name for launch in launches})
    result.targets = sorted({launch.target for launch in launches})
    missing = EXPECTED_KERNELS[name] - set(result.kernels)
    if missing and result.error is None:
        result.error = f"these kernels were never launched: {', '.join(sorted(missing))}"
    interpreted_kernels = sorted({lc.compiled.name for lc in launches if not ran_on_gpu(lc)})
    if not interpret and interpreted_kernels and result.error is None:
        result.error = f"ran in the interpreter, not on the GPU: {', '.join(interpreted_kernels)}"
    result.seconds = time.perf_counter() - begin
    return result
