"""Host-side helpers with Triton's `triton.tools` names."""
