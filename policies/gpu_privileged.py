"""gpu-privileged: a GPU container that runs privileged or mounts the host's /dev sees every GPU of the node,
not only its own (advisory: whether it touches the others is the workload's). On shared GPUs the same is
no-privileged-shared-gpu's error. Decided in gpufleet.validation.privileged_gpus, as `gpufleet check` does.
"""

from __future__ import annotations

from gpufleet.validation.workload_policies import GPU_PRIVILEGED
from policies._privileged import policy

POLICY = policy(GPU_PRIVILEGED,
                "A GPU container that runs privileged or mounts the host's /dev sees every GPU of the node.")
