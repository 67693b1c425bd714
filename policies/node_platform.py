"""node-platform: the GPU stack can run on the nodes' OS, container runtime and Kubernetes version
(checked when node facts are given: `gpufleet plan --nodes FILE`, or `nodesFile` / `kubeconfig`).

Errors only, each where the stack cannot work (gpufleet.validation.node_platform): the operator's driver
container on an OS it cannot run on (Talos, Bottlerocket, Container-Optimized OS); a GPU pool mixing
container runtimes under the operator's toolkit; containerd 2.x with a toolkit older than v1.17.4; containerd
settings on CRI-O or docker nodes; a kubelet older than the chart's minimum Kubernetes; the standalone device
plugin without runtimeClassName where nvidia is not the default runtime; the toolkit editing RKE2's
regenerated config.toml; a DaemonSet of the stack that selects no GPU node. What may work is
node-platform-advisories' (warnings).
"""

from __future__ import annotations

from gpufleet.validation.node_platform import ERROR
from policies._node_platform import policy

POLICY = policy(
    "node-platform",
    "The GPU stack can run on the GPU nodes' operating system, container runtime and Kubernetes "
    "version, and its DaemonSets select the GPU nodes.",
    ERROR,
)
