"""The `cpu` target: the shared LLVM lowering with host hooks, JIT-compiled for this CPU (backend.py)."""
