"""gpufleet: the NVIDIA GPU stack and GPU services on Kubernetes as one typed, checked config.

Layers (imports only point downwards):
    gpufleet.nvidia   facts about the NVIDIA stack (versions, products, MIG tables, presets)
    gpufleet.config   the typed stack config (pydantic), its loader and its error rendering
    gpufleet.render   pure functions: config -> chart values and Kubernetes manifests
    gpufleet.planning the offline plan (Pulumi mock engine), plan.json, preview and diffs
    gpufleet.cli      thin typer commands
"""

__version__ = "0.1.0"
