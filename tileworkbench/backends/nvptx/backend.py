"""The NVIDIA back end as a registered backend: targets "cuda" (the current GPU) and the architectures
of `archs.ARCHS` (the one table of them); stages up to PTX and SASS; launches through CuPy."""

from __future__ import annotations

from ...errors import CompilationError
from ...target import NO_FALLBACK
from .. import DEFAULT_OPTIONS, Backend, Lowered, register
from .archs import ARCHS, DEFAULT_ARCH, Arch


class NvptxBackend(Backend):
    name = "nvptx"
    default_name = "cuda"
    aliases = ("cuda", "gpu")
    stages = ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx", "sass")
    is_gpu = True
    cacheable = True
    stage_host_arrays = False  # tests: NumPy arguments are copied to the GPU and back (staging.py)
    default_arch = DEFAULT_ARCH

    def architectures(self) -> tuple[str, ...]:
        return tuple(ARCHS)

    def architecture(self, target: str) -> Arch | None:
        return ARCHS.get(target)

    def available(self) -> bool:
        from ...cuda.device import gpu_available

        return gpu_available()

    def resolve(self, target: str) -> str:
        if target in self.architectures():
            return target
        if not self.available():
            raise CompilationError(
                f"target {target!r} needs a GPU; none is visible. Use target='{DEFAULT_ARCH}' "
                "for compile-only use, or target='interpreter' or 'cpu' to run on the CPU"
            )
        from ...cuda.device import device_properties
        from .archs import native_arch

        props = device_properties()
        arch = native_arch(props.major, props.minor)  # an H100/H200 gets sm_90a (wgmma)
        if arch not in self.architectures():
            raise CompilationError(
                f"this GPU is {arch}, which the NVPTX back end does not support; "
                f"use one of {', '.join(self.architectures())}"
            )
        return arch

    def arch_target(self, arch) -> str:
        """Triton's spelling "sm90" (or ours, "sm_90a") -> the arch we compile for: the
        arch-specific form where we use one, as for a GPU of that capability ("sm90" -> "sm_90a",
        as Triton)."""
        from ...errors import TargetOptionError
        from .archs import native_arch

        text = str(arch).strip()
        if text in self.architectures():
            return text
        digits = text.removeprefix("sm").removeprefix("_")
        if digits.isdigit() and len(digits) >= 2:
            plain = native_arch(int(digits[:-1]), int(digits[-1]))
            if plain in self.architectures():
                return plain
        known = sorted(
            {a.rstrip("a").replace("_", "") for a in self.architectures()}, key=lambda a: int(a[2:])
        )
        raise TargetOptionError(
            f"arch={arch!r} is not an architecture the NVPTX back end compiles for; use one of "
            f"{', '.join(known)} (Triton's spelling) or {', '.join(self.architectures())}"
        )

    def check_num_ctas(self, target, num_ctas) -> None:
        """Triton's rule: clusters of num_ctas > 1 CTAs need sm_90+. (Where allowed, one CTA per
        program here: the option is accepted and ignored.)"""
        from ...errors import TargetOptionError
        from .archs import arch

        if num_ctas > 1 and not arch(target).tma:  # thread-block clusters come with TMA (sm_90+)
            raise TargetOptionError(
                f"num_ctas > 1 requires NVIDIA SM90+ (Hopper); the target is "
                f"{target}: use num_ctas=1 or an sm_90+ target"
            )

    def triton_target(self, target) -> str:
        from .archs import arch

        return f"cuda:{arch(target).sm}"

    def has_tma(self, target) -> bool:
        """sm_90+, unless `TILEWORKBENCH_TMA=0` (config.tma)."""
        from ...config import config

        return config.tma and target in ARCHS and ARCHS[target].tma

    def builds_tensor_maps(self, target) -> bool:
        """TMA targets whose PTX has `tensormap.replace`: the sm_90a family (sm_90a, sm_100a)."""
        return self.has_tma(target) and ARCHS[target].tensormap_replace

    def target_info(self, target, num_warps=4, num_stages=1, tma_fallback=NO_FALLBACK):
        return ARCHS[target].target_info(num_warps, num_stages, tma_fallback)

    def lower(
        self, func, target, num_warps, num_stages, fp_fusion, debug=False, options=DEFAULT_OPTIONS
    ) -> Lowered:
        from . import compile_nvptx

        result = compile_nvptx(
            func,
            arch=target,
            num_warps=num_warps,
            num_stages=num_stages,
            enable_fp_fusion=fp_fusion,
            assemble=False,
            debug=debug,
            maxnreg=options.maxnreg,
            reflect_ftz=options.reflect_ftz,
            tma_fallback=options.tma_fallback,
        )
        return Lowered(
            result.kernel_name,
            {"tile-gpu": result.tile_gpu, "llvm": result.llvm, "ptx": result.ptx},
            result.passes,
            result.line_maps,
            result.shared,
            result.static_shared,
            debug_checks=result.debug_checks,
            shared_plan=result.shared_plan,
            global_scratch=result.global_scratch,
            producer_warps=result.producer_warps,
        )

    def finish(self, kernel, recompile) -> None:
        """ptxas in the background, then nvdisasm; with config.disassemble off (compile workers)
        the kernel is done (and cached) after ptxas, its SASS made when first read."""
        from ...config import config
        from . import assemble_cubin, disassemble_into

        later = not config.disassemble
        kernel._assemble_in_background(
            kernel.launch_metadata.target,
            assemble_cubin,
            (lambda assembly: assembly) if later else disassemble_into,
        )
        if later:
            _defer_sass(kernel)

    def finish_cached(self, kernel) -> None:
        """An entry cached without SASS (compiled with disassembly left for later) gets it when
        `.asm` or `.line_map` is first read."""
        if "sass" not in kernel._asm and kernel._cubin is not None:
            _defer_sass(kernel)

    def missing_tools(self, stage) -> str | None:
        from .tools import missing_for

        return missing_for(stage)

    def tools_identity(self) -> tuple:
        from .tools import tools_identity

        return tools_identity()

    def load(self, compiled, kinds, names):
        from ...cuda.launcher import CudaKernel

        md = compiled.launch_metadata  # the disassembler may still be running; ptxas is done
        kernel = CudaKernel(
            compiled.ptx,
            md.name,
            num_warps=md.num_warps + md.producer_warps,
            shared=md.dynamic_shared,
            cubin=compiled.launch_cubin,
            param_kinds=kinds,
            param_names=names,
        )
        md.n_regs = md.n_regs or kernel.num_regs
        if self.stage_host_arrays:
            from .staging import StagingLauncher

            return StagingLauncher(kernel)
        return kernel

    def shared_limit(self, target: str) -> int | None:
        from .inventory import shared_limit

        return shared_limit(self.resolve(target))

    def instruction_counts(self, asm):
        from .inventory import instruction_counts

        return instruction_counts(asm)

    def takes(self, value) -> bool:
        return hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__")


def _defer_sass(kernel) -> None:
    """Disassemble `kernel`'s cubin when its SASS is first asked for (CompiledKernel._deferred),
    where nvdisasm or cuobjdump is installed; else `asm["sass"]` says which tool is missing."""
    from . import Assembly, disassemble_into
    from .tools import missing_for

    if missing_for("sass") is not None:
        return

    def make() -> str | None:
        cubin = kernel.cubin
        if cubin is None:  # ptxas failed or is missing: nothing to disassemble
            return None
        assembly = disassemble_into(Assembly(cubin, None, {}, None, None, {}))
        kernel._line_map.update(assembly.line_maps)
        return assembly.sass

    kernel._deferred["sass"] = make


BACKEND = register(NvptxBackend())
