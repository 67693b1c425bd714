"""The Pulumi program: read this stack's `gpufleet:` config and declare the GPU stack."""

from gpufleet.program import run

run()
