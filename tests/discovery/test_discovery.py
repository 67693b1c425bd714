import pytest

from gpufleet.capacity import capacity_from_nvml
from gpufleet.capacity.kubectl import capacity_from_cluster
from gpufleet.discovery import KubeconfigCluster, NullCluster, NullInventory, NvmlInventory
from gpufleet.discovery.fakes import FakeCluster, FakeInventory, a100_40gb_mig, h100_80gb, tesla_t4
from gpufleet.errors import DiscoveryUnavailableError
from tests.scheduling.kube import node, pod


def _has_nvml() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


@pytest.mark.skipif(_has_nvml(), reason="this machine has NVML; the failure path cannot be exercised")
def test_real_nvml_without_a_driver_raises_discovery_unavailable():
    with pytest.raises(DiscoveryUnavailableError, match="NVML is not available"):
        NvmlInventory().facts()


def test_t4_node_advertises_one_whole_gpu_with_its_memory():
    (n,) = capacity_from_nvml(FakeInventory(tesla_t4()), "edge-0").nodes
    assert n.allocatable == {"nvidia.com/gpu": 1}
    assert n.labels["nvidia.com/gpu.product"] == "Tesla-T4" and n.labels["nvidia.com/gpu.memory"] == "15360"
    assert n.gpus.driver_version and n.gpus.gpus[0].memory_mib == 15360
    assert {"cpu", "memory", "pods"} <= n.unknown


def test_a100_with_mig_advertises_its_instances():
    (n,) = capacity_from_nvml(FakeInventory(a100_40gb_mig()), "mig-0").nodes
    assert n.allocatable == {"nvidia.com/mig-1g.5gb": 7}
    assert n.gpus.gpus[0].mig_enabled and n.gpus.gpus[0].mig_instances[0].memory_mib == 4864


def test_h100_pair_counts_two_gpus():
    (n,) = capacity_from_nvml(FakeInventory(h100_80gb(0), h100_80gb(1)), "h-0").nodes
    assert n.allocatable == {"nvidia.com/gpu": 2} and n.labels["nvidia.com/gpu.count"] == "2"


def test_null_inventory_has_no_gpus():
    (n,) = capacity_from_nvml(NullInventory(), "cpu-0").nodes
    assert n.allocatable == {} and n.gpus.gpus == ()


def test_fake_cluster_feeds_the_same_model_as_files():
    cap = capacity_from_cluster(FakeCluster([node("n", 2)], [pod("p", node_name="n", phase="Running")]))
    assert cap.nodes[0].allocatable["nvidia.com/gpu"] == 2 and cap.pods[0].requests == {"nvidia.com/gpu": 1}


def test_null_cluster_is_empty():
    cap = capacity_from_cluster(NullCluster())
    assert cap.nodes == [] and cap.pods == []


def test_missing_kubeconfig_is_discovery_unavailable(tmp_path):
    with pytest.raises(DiscoveryUnavailableError, match="cannot use this kubeconfig"):
        KubeconfigCluster(tmp_path / "nope").nodes()


def test_a_live_services_selector_is_all_discovery_keeps_of_it():
    """The default spreading reads a Service's selector; its ports, IPs and annotations stay out of the
    capacity file. A Service without a selector keeps none (it selects no pod)."""
    from gpufleet.discovery.live import _service_selector

    full = {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "ml", "annotations": {"a": "b"}, "uid": "1"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.0.0.7", "ports": [{"port": 80}]}}
    assert _service_selector(full) == {"apiVersion": "v1", "kind": "Service",
                                       "metadata": {"name": "web", "namespace": "ml"},
                                       "spec": {"selector": {"app": "web"}}}
    bare = _service_selector({"apiVersion": "v1", "kind": "Service", "metadata": "broken", "spec": None})
    assert bare["spec"] == {} and bare["metadata"] == {}


def test_a_capacity_file_of_a_live_cluster_reads_back_with_its_namespaces_and_services():
    """Live discovery records Namespaces (namespaceSelector labels) and Services (default spreading) under
    `admission`; the capacity file must read back with them, and still refuses kinds nobody records."""
    import pytest

    from gpufleet.capacity.model import FORMAT, Capacity
    from gpufleet.errors import InputError

    admission = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "a"}}},
                 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ml"},
                  "spec": {"selector": {"app": "web"}}}]
    cap = Capacity.from_json({"format": FORMAT, "nodes": [], "pods": [], "admission": admission})
    assert cap.admission == admission
    with pytest.raises(InputError, match="admission: expected a list of"):
        Capacity.from_json({"format": FORMAT, "nodes": [], "pods": [], "admission": [{"kind": "Secret"}]})
