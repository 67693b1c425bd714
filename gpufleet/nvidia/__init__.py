"""Facts about the NVIDIA Kubernetes GPU stack, as plain data and pure functions."""
