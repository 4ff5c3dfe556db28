"""`CompiledKernel.asm`: stage name -> text, a dict that says why a stage is absent, not with a bare
KeyError (`sass` without nvdisasm, GPU stages of an interpreter kernel, a misspelt stage)."""

from __future__ import annotations


class MissingStageError(KeyError):
    """A stage that this compiled kernel does not have, with the reason and what to do."""

    def __str__(self) -> str:  # KeyError's str() would quote the whole sentence
        return str(self.args[0])


class StageTexts(dict):
    """stage -> text; `asm["sass"]` on a machine without nvdisasm raises a MissingStageError that
    names the tool and how to install it."""

    def __init__(self, texts: dict[str, str], target: str, backend_stages: tuple[str, ...]) -> None:
        super().__init__(texts)
        self.target = target
        self.backend_stages = backend_stages  # the stages the target's backend makes

    def __missing__(self, stage: str) -> str:
        raise MissingStageError(self.why_missing(stage))

    def why_missing(self, stage: str) -> str:
        from .compiler import STAGES

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
        from ..backends.nvptx.tools import missing_for

        return (
            missing_for(stage) or f"no {stage!r} stage for {self.target} (this kernel has {have})"
        )
