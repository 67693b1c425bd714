"""`gpufleet:mig`: named MIG geometries in mig-parted `version: v1` form."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from gpufleet.config._base import Model
from gpufleet.config.k8s_types import GeometryName


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class MigDeviceGroup(Model):
    """One entry of a mig-parted config: which GPUs, MIG on or off, and the instances per GPU."""

    model_config = ConfigDict(alias_generator=_kebab, populate_by_name=True, extra="forbid", frozen=True)

    devices: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    """`all`, or GPU indices on the node."""
    device_filter: str | list[str] | None = None
    """PCI device IDs the entry applies to (e.g. 0x20B010DE)."""
    mig_enabled: bool
    """Whether MIG mode is on for these GPUs."""
    mig_devices: dict[str, int] = Field(default_factory=dict)
    """MIG profile -> instances per GPU, e.g. {"1g.5gb": 7}. Empty when MIG is off."""


class MigConfig(Model):
    """MIG geometries applied by mig-manager to nodes labelled `nvidia.com/mig.config=<name>`."""

    geometries: dict[GeometryName, list[MigDeviceGroup]] = Field(default_factory=dict)
    """Geometry name -> mig-parted entries. `all-disabled` is always available."""
    default: str = "all-disabled"
    """Geometry for MIG-capable nodes without a label."""
