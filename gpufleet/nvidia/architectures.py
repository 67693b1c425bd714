"""GPU architectures: their compute capabilities, the last driver branch that drives them, and whether
their MPS is the one the device plugin and the DRA driver configure. Pure facts, no gpufleet imports.

Sources:
- Compute capabilities and the last driver branch: NVIDIA Data Center Drivers documentation, "CUDA
  Toolkit, Driver, and Architecture Matrix"
  (https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html):
  last driver support Kepler (3.0, 3.2, 3.5, 3.7) R470; Maxwell (5.0, 5.2, 5.3), Pascal (6.0, 6.1) and
  Volta (7.0) R580; Turing, Ampere, Ada, Hopper and Blackwell "Ongoing". The same cut-off is announced in
  NVIDIA's "Unix Graphics Feature Deprecation Schedule" forum post
  (https://forums.developer.nvidia.com/t/unix-graphics-feature-deprecation-schedule/60588): the release
  580 series is the last to support Maxwell, Pascal and Volta; 470 the last for Kepler.
- MPS: CUDA Multi-Process Service documentation (https://docs.nvidia.com/deploy/mps/), "Volta MPS":
  from Volta on, each MPS client has its own GPU address space and execution resources can be
  provisioned; the control commands `set_default_active_thread_percentage` and the pinned device memory
  limits are Volta MPS commands. The device plugin's MPS control daemon (k8s-device-plugin v0.20.0,
  cmd/mps-control-daemon/mps/daemon.go) always sets both, so its MPS sharing needs Volta or newer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Volta MPS: per-client address space, memory and thread limits (see the module docstring).
VOLTA_MPS_COMPUTE_CAPABILITY = (7, 0)


@dataclass(frozen=True)
class Architecture:
    """One GPU architecture as the driver documentation lists it."""

    name: str
    compute_capabilities: tuple[tuple[int, int], ...]
    #: The last driver branch (R<n>) that supports the architecture; None: the current branches do.
    last_driver_branch: int | None = None

    def supports_branch(self, branch: int) -> bool:
        return self.last_driver_branch is None or branch <= self.last_driver_branch

    @property
    def volta_mps(self) -> bool:
        """Whether MPS on these GPUs is Volta MPS (what the device plugin's and DRA driver's MPS configure)."""
        return min(self.compute_capabilities) >= VOLTA_MPS_COMPUTE_CAPABILITY


#: Keyed by `GpuProduct.family`.
ARCHITECTURES: dict[str, Architecture] = {
    "kepler": Architecture("Kepler", ((3, 0), (3, 2), (3, 5), (3, 7)), 470),
    "maxwell": Architecture("Maxwell", ((5, 0), (5, 2), (5, 3)), 580),
    "pascal": Architecture("Pascal", ((6, 0), (6, 1)), 580),
    "volta": Architecture("Volta", ((7, 0),), 580),
    "turing": Architecture("Turing", ((7, 5),)),
    "ampere": Architecture("Ampere", ((8, 0), (8, 6))),
    "ada-lovelace": Architecture("Ada", ((8, 9),)),
    "hopper": Architecture("Hopper", ((9, 0),)),
    "blackwell": Architecture("Blackwell", ((10, 0), (12, 0))),
}

_VERSION = re.compile(r"^\s*[Rr]?(\d{3,4})(?:\.(\d+))?(?:\.(\d+))?\s*$")


def driver_version(text: str) -> tuple[int, int, int] | None:
    """A driver version (595.91.07, 580, R580) as numbers; None for what is not one (a digest, a tag)."""
    m = _VERSION.match(text or "")
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)


def driver_branch(text: str) -> int | None:
    """The branch of a driver version: 595.91.07 -> 595."""
    version = driver_version(text)
    return version[0] if version else None
