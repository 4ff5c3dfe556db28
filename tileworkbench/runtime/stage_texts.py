"""`CompiledKernel.asm`: stage name -> text, a dict that says why a stage is absent, not with a bare
KeyError (`sass` without nvdisasm, GPU stages of an interpreter kernel, a misspelt stage). Triton's
stage names (`ttir`, `ttgir`, `llir`) read our nearest stage, so code written for Triton runs."""

from __future__ import annotations

import re


class MissingStageError(KeyError):
    """A stage that this compiled kernel does not have, with the reason and what to do."""

    def __str__(self) -> str:  # KeyError's str() would quote the whole sentence
        return str(self.args[0])


# every stage a compiled kernel may carry, in pipeline order (a backend makes some: Backend.stages)
STAGES = ("source", "tile", "tile-opt", "tile-gpu", "llvm", "ptx", "sass", "asm")

# Triton's stage -> ours holding the same step of the pipeline: `ttir` is after the
# target-independent passes, `ttgir` after the GPU passes (layouts, pipelining), `llir` the LLVM IR.
# Our IR prints Triton's dialect names, so text searched there (`tt.dot`, `arith.constant`,
# `scf.for`) answers honestly; what our IR does not have (`ttg.async_wait`, `ub.poison`) is not found.
TRITON_STAGES = {"ttir": "tile-opt", "ttgir": "tile-gpu", "llir": "llvm"}

# Ops that MLIR prints in its generic form because they have no syntax of their own, as Triton's
# TTIR/TTGIR show them (`"tt.reduce"(%x) <{axis = 1 : i32}> ({`, code counts that text); our stages
# print them like every other op (`tt.reduce %x {axis = 1} : ... ({`).
_GENERIC_HEADER = re.compile(
    r"^(?P<head>\s*(?:%[\w.]+(?:, %[\w.]+)* = )?)(?P<name>tt\.reduce|tt\.scan) "
    r"(?P<operands>%[\w.]+(?:, %[\w.]+)*)(?: \{(?P<attrs>[^}]*)\})? : .*? \(\{(?P<rest>.*)$",
    re.M,
)


def _generic(match: re.Match) -> str:
    attrs = re.sub(r"= (\d+)\b", r"= \1 : i32", match["attrs"] or "")
    attrs = f" <{{{attrs}}}>" if attrs else ""
    return f'{match["head"]}"{match["name"]}"({match["operands"]}){attrs} ({{{match["rest"]}'


def triton_text(text: str) -> str:
    """A `tile*` stage's text as Triton's TTIR/TTGIR would print the same ops (generic forms)."""
    return _GENERIC_HEADER.sub(_generic, text)


def ttgir_module(triton_target: str | None, num_warps: int) -> str | None:
    """The `module attributes {...} {` line Triton's TTGIR opens with, naming the target as Triton
    does (`ttg.target = "cuda:90"`, Backend.triton_target); None where Triton has no such target."""
    if triton_target is None:
        return None
    return (
        f'module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = {num_warps} : i32, '
        f'ttg.target = "{triton_target}", "ttg.threads-per-warp" = 32 : i32}} {{'
    )


def _in_module(module: str, text: str) -> str:
    """`text` inside `module {` ... `}`, after its layout aliases (`#blocked = ...`), as Triton."""
    lines = text.splitlines()
    aliases = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "\n".join([*lines[:aliases], module, *lines[aliases:], "}"]) + "\n"


class StageTexts(dict):
    """stage -> text; `asm["sass"]` on a machine without nvdisasm raises a MissingStageError that
    names the tool and how to install it. `ttgir_module`: the module line `asm["ttgir"]` is wrapped
    in (ttgir_module()), as Triton's TTGIR."""

    def __init__(
        self,
        texts: dict[str, str],
        target: str,
        backend_stages: tuple[str, ...],
        ttgir_module: str | None = None,
    ) -> None:
        super().__init__(texts)
        self.target = target
        self.backend_stages = backend_stages  # the stages the target's backend makes
        self.ttgir_module = ttgir_module

    def __missing__(self, stage: str) -> str:
        ours = TRITON_STAGES.get(stage)
        if ours is not None and dict.__contains__(self, ours):
            if stage == "ttgir" and self.ttgir_module:
                return _in_module(self.ttgir_module, triton_text(self[ours]))
            return triton_text(self[ours]) if ours.startswith("tile") else self[ours]
        raise MissingStageError(self.why_missing(ours or stage))

    def why_missing(self, stage: str) -> str:
        have = ", ".join(self)
        if stage not in STAGES:
            return (
                f"no stage {stage!r}: the stages are {', '.join(STAGES)} (this kernel has {have})"
            )
        if stage not in self.backend_stages:
            return (
                f"no {stage!r} stage: this kernel was compiled for {self.target}, whose stages are "
                f"{', '.join(self.backend_stages)}; compile it for a GPU arch (target='sm_90', no GPU "
                f"needed) for {stage}"
            )
        from ..backends import backend_for

        return (
            backend_for(self.target).missing_tools(stage)
            or f"no {stage!r} stage for {self.target} (this kernel has {have})"
        )
