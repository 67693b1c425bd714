"""cluster.aks GPU pools become gpufleet node pools; the VM-size table and MIG profile mapping feed them."""

from __future__ import annotations

from gpufleet.azure.mig import aks_mig_profile
from gpufleet.azure.vm_sizes import VM_SIZES, find_vm_size
from gpufleet.config.aks import AGENT_POOL_LABEL
from gpufleet.config.node_pools import Taint
from gpufleet.nvidia.products import PRODUCTS
from gpufleet.render.aks import MIG_MANAGER_DEPLOY_LABEL, gpu_agent_pools
from gpufleet.render.labels import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL
from gpufleet.render.workloads import workload_objects
from tests.aks.conftest import INFER, a100_mig_sections, base_sections, issues_of, parse


def test_every_vm_size_names_a_known_gpu_product():
    assert {v.product for v in VM_SIZES.values()} <= set(PRODUCTS)


def test_vm_size_table_maps_the_common_gpu_sizes():
    assert (find_vm_size("Standard_NC4as_T4_v3").product,
            find_vm_size("Standard_NC4as_T4_v3").gpu_count) == ("Tesla-T4", 1)
    assert find_vm_size("standard_nc24ads_a100_v4").gpu_memory_mib == 81920
    assert (find_vm_size("Standard_ND96asr_v4").product, find_vm_size("Standard_ND96asr_v4").gpu_count) == (
        "NVIDIA-A100-SXM4-40GB", 8)
    assert (find_vm_size("Standard_ND96isr_H100_v5").product, find_vm_size("Standard_ND96isr_H100_v5").gpu_count) == (
        "NVIDIA-H100-80GB-HBM3", 8)


def test_aks_mig_profile_resolves_to_the_gpus_own_profile_name():
    a100_80 = PRODUCTS["NVIDIA-A100-80GB-PCIe"]
    assert (aks_mig_profile(a100_80, "MIG1g").name, aks_mig_profile(a100_80, "MIG1g").max_count) == ("1g.10gb", 7)
    assert aks_mig_profile(a100_80, "MIG3g").name == "3g.40gb"
    assert aks_mig_profile(PRODUCTS["NVIDIA-A100-SXM4-40GB"], "MIG2g").name == "2g.10gb"
    assert aks_mig_profile(PRODUCTS["Tesla-T4"], "MIG1g") is None


def test_gpu_pool_is_derived_as_a_node_pool_with_product_count_taints_and_selector():
    cfg = parse(base_sections())
    [pool] = cfg.node_pools
    assert pool.name == "t4"
    assert pool.node_selector == {AGENT_POOL_LABEL: "t4"}
    assert (pool.gpu.product, pool.gpu.count, pool.count) == ("Tesla-T4", 1, 2)
    assert pool.taints == [Taint(key="sku", value="gpu", effect="NoSchedule")]
    assert pool.labels == {"workload": "inference"}


def test_autoscaled_pool_is_planned_at_its_initial_size_and_carries_its_bounds():
    cfg = parse(a100_mig_sections())  # autoscale {minCount: 0, maxCount: 2}
    pool = cfg.pool("a100")
    assert (pool.count, pool.autoscaling.min, pool.autoscaling.max) == (0, 0, 2)
    assert (pool.node_count(), pool.most_nodes()) == (0, 2)


def test_aks_pool_takes_the_node_pools_spelling_of_the_bounds():
    sections = a100_mig_sections()
    pool = sections["cluster"]["aks"]["gpuPools"][0]
    pool["autoscaling"] = {"min": 1, "max": 4}
    del pool["autoscale"]
    cfg = parse(sections)
    assert (cfg.pool("a100").count, cfg.pool("a100").autoscaling.max) == (1, 4)
    [a100] = gpu_agent_pools(cfg)
    assert (a100.autoscaled, a100.count, a100.min_count, a100.max_count) == (True, 1, 1, 4)


def test_derived_pools_survive_a_dump_and_reload_without_duplicates():
    cfg = parse(base_sections())
    again = type(cfg).model_validate(cfg.model_dump(by_alias=True))
    assert [p.name for p in again.node_pools] == ["t4"]
    assert issues_of(cfg.model_dump(by_alias=True, exclude_defaults=True)) == []


def test_workload_aimed_at_the_pool_selects_it_and_tolerates_its_taint():
    cfg = parse(base_sections())
    deployment = workload_objects(cfg, cfg.workloads[0])[0]
    spec = deployment["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {AGENT_POOL_LABEL: "t4"}
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in spec["tolerations"]


def test_aks_mig_pool_serves_its_profile_to_workloads_and_capacity():
    cfg = parse(a100_mig_sections())
    assert cfg.mig_profiles_of_pool(cfg.pool("a100")) == {"1g.10gb": 7}
    container = workload_objects(cfg, cfg.workloads[0])[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}


def test_sharing_and_mig_selection_labels_go_on_the_agent_pool_not_on_named_nodes():
    sections = base_sections(
        devicePlugin={"migStrategy": "single", "sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 2}}},
        mig={"geometries": {"all-3g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]}},
        workloads=[{**INFER, "gpu": {"count": 1, "shared": True}}],
    )
    sections["cluster"]["aks"]["gpuPools"] = [
        {**sections["cluster"]["aks"]["gpuPools"][0], "sharing": "ts"},
        {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "driver": "operator", "migGeometry": "all-3g"},
    ]
    cfg = parse(sections)
    t4, a100 = gpu_agent_pools(cfg)
    assert t4.node_labels == {"workload": "inference", DEVICE_PLUGIN_CONFIG_LABEL: "ts"}
    assert a100.node_labels == {MIG_CONFIG_LABEL: "all-3g"}


def test_aks_mig_pool_keeps_the_operators_mig_manager_away():
    cfg = parse(a100_mig_sections())
    [a100] = gpu_agent_pools(cfg)
    assert a100.node_labels == {MIG_MANAGER_DEPLOY_LABEL: "false"}
    assert (a100.gpu_instance_profile, a100.gpu_driver) == ("MIG1g", "Install")
    assert (a100.count, a100.min_count, a100.max_count) == (0, 0, 2)


def test_gpu_pool_defaults_are_pinned():
    cfg = parse(base_sections(cluster={"aks": {"resourceGroup": {"name": "rg"}, "gpuPools": [
        {"name": "g", "vmSize": "Standard_NC4as_T4_v3"}]}}, operator={"driver": {"enabled": False}},
        workloads=[]))
    aks = cfg.cluster.aks
    pool = aks.gpu_pools[0]
    assert (pool.count, pool.autoscale, pool.driver, pool.gpu_instance_profile, pool.os_sku) == (
        None, None, "aks", None, "Ubuntu")
    assert pool.node_count() == 1
    assert (aks.resource_group.existing, aks.location, aks.kubernetes_version) == (False, None, None)
    assert (aks.system_pool.name, aks.system_pool.vm_size, aks.system_pool.count) == ("system", "Standard_D4ds_v5", 2)
