"""Helm charts and GitOps manifests (Argo CD, Flux) generated from a stack's typed config.

The chart's objects are built by the same `gpufleet.render` functions the Pulumi components wrap, so a
chart installed by Argo CD or Flux and a `pulumi up` create the same Kubernetes objects.
"""

from gpufleet.charts.generate import chart_files, chart_name, write_files

__all__ = ["chart_files", "chart_name", "write_files"]
