
from gpufleet.capacity import capacity_from_stack, memory_budget
from gpufleet.config import parse_sections


def cfg(pools, device_plugin=None, mig=None, workloads=None, mode="operator"):
    sections = {"mode": mode, "nodePools": pools, "devicePlugin": device_plugin or {}, "workloads": workloads or []}
    if mig:
        sections["mig"] = mig
    return parse_sections(sections, "test")


T4 = {"product": "Tesla-T4", "count": 1}
A100 = {"product": "NVIDIA-A100-SXM4-40GB", "count": 2}


def test_plain_pool_advertises_one_gpu_resource_per_gpu_and_synthetic_names():
    nodes = capacity_from_stack(cfg([{"name": "p", "count": 2, "gpu": {"product": "NVIDIA-L4", "count": 4}}]))
    assert [n.name for n in nodes] == ["p-0", "p-1"]
    assert nodes[0].allocatable["nvidia.com/gpu"] == 4
    assert nodes[0].labels["nvidia.com/gpu.product"] == "NVIDIA-L4"
    assert nodes[0].labels["kubernetes.io/hostname"] == "p-0"


def test_time_slicing_replicas_multiply_the_count():
    dp = {"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}}
    (node,) = capacity_from_stack(cfg([{"name": "p", "nodes": ["n0"], "gpu": {"product": "Tesla-T4", "count": 2},
                                        "sharing": "ts"}], dp))
    assert node.allocatable["nvidia.com/gpu"] == 8
    assert node.labels["nvidia.com/gpu.product"] == "Tesla-T4-SHARED"


def test_rename_by_default_advertises_shared_name():
    dp = {"sharingProfiles": {"ts": {"strategy": "mps", "replicas": 4, "renameByDefault": True}}}
    (node,) = capacity_from_stack(cfg([{"name": "p", "nodes": ["n0"], "gpu": T4, "sharing": "ts"}], dp))
    assert node.allocatable.get("nvidia.com/gpu.shared") == 4 and "nvidia.com/gpu" not in node.allocatable


def test_mig_single_geometry_counts_instances_as_gpus():
    mig = {"geometries": {"all-1g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}}
    (node,) = capacity_from_stack(cfg([{"name": "p", "nodes": ["n0"], "gpu": A100, "migGeometry": "all-1g"}],
                                      {"migStrategy": "single"}, mig))
    assert node.allocatable["nvidia.com/gpu"] == 14
    assert node.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"


def test_mig_mixed_geometry_counts_per_profile():
    mig = {"geometries": {"mixed": [{"devices": "all", "mig-enabled": True,
                                     "mig-devices": {"1g.5gb": 2, "3g.20gb": 1}}]}}
    (node,) = capacity_from_stack(cfg([{"name": "p", "nodes": ["n0"], "gpu": A100, "migGeometry": "mixed"}],
                                      {"migStrategy": "mixed"}, mig))
    assert node.allocatable["nvidia.com/mig-1g.5gb"] == 4 and node.allocatable["nvidia.com/mig-3g.20gb"] == 2
    assert "nvidia.com/gpu" not in node.allocatable


def test_unset_cpu_and_memory_are_unknown_and_set_ones_are_allocatable():
    (node,) = capacity_from_stack(cfg([{"name": "p", "nodes": ["n0"], "gpu": T4,
                                        "resources": {"cpu": "7500m", "pods": 30}, "taints": [{"key": "gpu"}]}]))
    assert node.allocatable["cpu"] == 7500 and node.allocatable["pods"] == 30
    assert node.unknown == {"memory", "ephemeral-storage"}
    assert node.taints[0].key == "gpu" and node.taints[0].effect == "NoSchedule"


def _workload(name, gpu, **extra):
    return {"kind": "inference", "name": name, "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "nodePool": "p",
            "gpu": gpu, **extra}


def test_mps_slice_smaller_than_expected_memory_names_both_numbers():
    dp = {"sharingProfiles": {"mps": {"strategy": "mps", "replicas": 4}}}
    c = cfg([{"name": "p", "nodes": ["n0"], "gpu": T4, "sharing": "mps"}], dp,
            workloads=[_workload("big", {"shared": True, "memoryMiB": 4000})])
    (p,) = memory_budget(c)
    assert (p.expected_mib, p.available_mib) == (4000, 3840)
    assert "4000 MiB" in p.message and "3840 MiB" in p.message


def test_mig_instance_memory_is_the_budget():
    mig = {"geometries": {"g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}}
    c = cfg([{"name": "p", "nodes": ["n0"], "gpu": A100, "migGeometry": "g"}], {"migStrategy": "mixed"}, mig,
            workloads=[_workload("ok", {"profile": "1g.5gb", "memoryMiB": 4864}),
                       _workload("big", {"profile": "1g.5gb", "memoryMiB": 6000})])
    assert [(p.expected_mib, p.available_mib) for p in memory_budget(c)] == [(6000, 4864)]


def test_whole_gpu_budget_is_the_product_memory():
    c = cfg([{"name": "p", "nodes": ["n0"], "gpu": T4}], workloads=[_workload("w", {"memoryMiB": 15361})])
    assert memory_budget(c)[0].available_mib == 15360


def test_time_sliced_gpu_budget_is_shared_by_all_its_workloads():
    dp = {"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}}
    pools = [{"name": "p", "nodes": ["n0"], "gpu": T4, "sharing": "ts"}]
    fits = cfg(pools, dp, workloads=[_workload("a", {"shared": True, "memoryMiB": 7000}),
                                     _workload("b", {"shared": True, "memoryMiB": 7000})])
    assert memory_budget(fits) == []
    over = cfg(pools, dp, workloads=[_workload("a", {"shared": True, "memoryMiB": 7000}, replicas=2),
                                     _workload("b", {"shared": True, "memoryMiB": 7000})])
    (p,) = memory_budget(over)
    assert (p.expected_mib, p.available_mib) == (21000, 15360)


def test_platform_managed_pinned_workloads_share_the_device_memory():
    pools = [{"name": "p", "nodes": ["n0"], "gpu": T4}]
    c = cfg(pools, mode="platform-managed", workloads=[_workload("a", {"visibleDevices": "0", "memoryMiB": 9000}),
                                                        _workload("b", {"visibleDevices": "0", "memoryMiB": 9000})])
    (p,) = memory_budget(c)
    assert (p.expected_mib, p.available_mib) == (18000, 15360)


def test_platform_managed_mps_gives_each_pinned_workload_a_slice():
    dp = {"sharingProfiles": {"ase": {"strategy": "mps", "replicas": 2}}}
    c = cfg([{"name": "p", "nodes": ["n0"], "gpu": T4, "sharing": "ase"}], dp, mode="platform-managed",
            workloads=[_workload("a", {"visibleDevices": "0", "memoryMiB": 8000})])
    assert [(p.expected_mib, p.available_mib) for p in memory_budget(c)] == [(8000, 7680)]
