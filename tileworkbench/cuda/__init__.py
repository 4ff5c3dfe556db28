"""The CUDA layer: device queries (`device.py`), argument marshalling (`arguments.py`) and the
CuPy launcher (`launcher.py`). Below both the NVPTX backend, which loads kernels with it, and the
runtime, which launches them; it imports neither. CuPy is imported lazily: it loads without a GPU.
"""
