"""The LLVM lowering the NVPTX and cpu backends share: `tile-gpu` IR -> an LLVM module (llvmlite).
Not a backend (nothing registers it) and it names none: each backend hands `Lowering` its
`TargetHooks` (backends/nvptx/hooks.py, backends/cpu/hooks.py).

- `lower.py`: the driver (`Lowering`); `values.py`: `TVal`, apart so the rules need not import the
  driver that imports them; `hooks.py`: the `TargetHooks` interface; `llvm_types.py`: Tile IR types
  as LLVM types; `debuginfo.py`: `DebugInfo` and the `tile-gpu`/`llvm` line maps (NVPTX's PTX and
  SASS maps are backends/nvptx/debuginfo.py); `tile_gpu.py`: the shape check and the GPU passes.
- `lowering/`: one rule module per op family, all here, NVPTX-only ones included (`wgmma.py`,
  `tma.py`, `tensormap_device.py`, `stmatrix.py`, the mbarrier and ldmatrix parts of `shared.py`,
  `mma.py`). Why they are not in nvptx/: one dispatch table (`LOWERINGS`) that the driver reads,
  the driver itself calls into `tma.py`/`tensormap_device.py` (kernel parameters, tensor maps) and
  `control.py` drains wgmma in loops, and the test suite's CPU emulator lowers these ops with the
  NVPTX hooks on the host; moving them would make the shared driver import nvptx. They stay
  target-correct because the passes only form these ops where `TargetInfo` allows them (the cpu
  target never gets a wgmma, TMA or mma layout), and the hooks own every target instruction the
  shared rules emit.
"""
