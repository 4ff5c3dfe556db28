"""The LLVM lowering the NVPTX and cpu backends share (not a backend itself: nothing registers it)."""
