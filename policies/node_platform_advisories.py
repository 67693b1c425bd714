"""node-platform-advisories: what may go wrong with the GPU stack on the nodes' OS, runtime and Kubernetes
version (checked when node facts are given). Warnings, each with what to verify on the cluster: an OS the
operator's driver container is not validated on (Amazon Linux 2023, Flatcar), a node that runs its own
device plugin (Bottlerocket, GKE), mixed runtimes where the host configures them, a kubelet outside the
operator release's validated range. The errors are node-platform's.
"""

from __future__ import annotations

from gpufleet.validation.node_platform import WARNING
from policies._node_platform import policy

POLICY = policy(
    "node-platform-advisories",
    "What may go wrong with the GPU stack on the GPU nodes' operating system, container runtime and "
    "Kubernetes version.",
    WARNING,
)
