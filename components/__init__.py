"""Pulumi ComponentResources: one per module, each `X(name, XArgs, opts)`, type token gpufleet:index:X."""
