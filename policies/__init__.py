"""gpufleet's CrossGuard policy pack: one policy per module, collected here in a fixed order.

`policies/__main__.py` (run by `pulumi preview --policy-pack policies`, or by `gpufleet plan`) only
constructs the PolicyPack from `ALL_POLICIES`; tests import the modules and call `POLICY.validate`.
"""

from __future__ import annotations

from policies import (
    dra_device_class_exists,
    dra_device_plugin_exclusive,
    dra_sharing_gate,
    gpu_capacity_fit,
    gpu_cluster_xor_cluster_policy,
    gpu_privileged,
    gpu_request_shape,
    gpu_taint_toleration,
    mig_geometry_valid,
    model_concurrency,
    model_fits_gpu,
    mps_client_memory,
    no_driver_hostpath,
    no_privileged_shared_gpu,
    no_visible_devices_bypass,
    node_platform,
    node_platform_advisories,
    pinned_versions,
    preemption_evictions,
    preinstalled_driver,
    public_loadbalancer,
    runtime_paths,
    service_headroom,
    sharing_config_valid,
    stack_matches_nodes,
)

PACK_NAME = "gpufleet-policies"
MODULES = (gpu_capacity_fit, gpu_request_shape, sharing_config_valid, mig_geometry_valid, no_visible_devices_bypass,
           no_driver_hostpath, gpu_taint_toleration, public_loadbalancer, pinned_versions, runtime_paths,
           model_fits_gpu,
           model_concurrency, gpu_cluster_xor_cluster_policy, dra_device_plugin_exclusive, dra_sharing_gate,
           dra_device_class_exists, stack_matches_nodes, preinstalled_driver, service_headroom, node_platform,
           node_platform_advisories, no_privileged_shared_gpu, gpu_privileged, mps_client_memory, preemption_evictions)
ALL_POLICIES = [m.POLICY for m in MODULES]

__all__ = ["ALL_POLICIES", "MODULES", "PACK_NAME"]
