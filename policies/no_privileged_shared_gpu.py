"""no-privileged-shared-gpu: a container on a shared GPU (time-slicing or MPS) neither runs privileged nor
mounts the host's /dev: it would see every GPU of the node and all their memory, so the shares and MPS's
limits no longer hold. Decided in gpufleet.validation.privileged_gpus (`gpufleet check` runs the same rule,
shared GPUs read from the nodes' GFD labels); elsewhere a privileged GPU container is gpu-privileged's
warning.
"""

from __future__ import annotations

from gpufleet.validation.workload_policies import NO_PRIVILEGED_SHARED_GPU
from policies._privileged import policy

POLICY = policy(NO_PRIVILEGED_SHARED_GPU,
                "A container on a shared GPU neither runs privileged nor mounts the host's /dev.")
