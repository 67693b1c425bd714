"""The AKS program under the mock engine: what `pulumi up` would create, asserted on recorded inputs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.config.loading import LoadedStack, load_stack
from gpufleet.planning.engine import SECRET_SIG, SIG_KEY, Plan, run_program
from gpufleet.planning.output import plan_document
from tests.aks.conftest import a100_mig_sections, base_sections, parse

AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def _plan(sections, stack: str = "test") -> Plan:
    return run_program(LoadedStack(stack, "Pulumi.test.yaml", parse(sections)))


@pytest.fixture(scope="module")
def t4_plan() -> Plan:
    return _plan(base_sections())


@pytest.fixture(scope="module")
def a100_plan() -> Plan:
    return _plan(a100_mig_sections())


def test_kubeconfig_reaches_the_provider_as_a_secret(t4_plan):
    [provider] = t4_plan.by_type(K8S_PROVIDER)
    kubeconfig = provider.inputs["kubeconfig"]
    assert isinstance(kubeconfig, dict) and kubeconfig[SIG_KEY] == SECRET_SIG
    assert "clusterUser" in kubeconfig["value"]  # decoded from the credentials API's base64
    shown = next(r for r in plan_document(t4_plan)["resources"] if r["type"] == K8S_PROVIDER)
    assert shown["inputs"]["kubeconfig"] == "[secret]"


def test_every_kubernetes_resource_uses_the_aks_provider(t4_plan):
    [provider] = t4_plan.by_type(K8S_PROVIDER)
    k8s = [r for r in t4_plan.resources if r.custom and r.type.startswith("kubernetes:")]
    assert {r.type for r in k8s} >= {"kubernetes:helm.sh/v3:Release", "kubernetes:apps/v1:Deployment",
                                     "kubernetes:core/v1:Namespace"}
    assert all(r.provider.startswith(provider.urn + "::") for r in k8s), [(r.name, r.provider) for r in k8s]


def test_provider_waits_for_the_gpu_pools_and_the_cluster(t4_plan):
    [provider] = t4_plan.by_type(K8S_PROVIDER)
    [pool] = t4_plan.by_type(AGENT_POOL)
    [cluster] = t4_plan.by_type(CLUSTER)
    assert {pool.urn, cluster.urn} <= set(provider.dependencies)


def test_t4_pool_is_created_for_the_operator_driver_with_taint_and_labels(t4_plan):
    [pool] = t4_plan.by_type(AGENT_POOL)
    i = pool.inputs
    assert (i["agentPoolName"], i["vmSize"], i["mode"], i["count"]) == ("t4", "Standard_NC4as_T4_v3", "User", 2)
    assert i["gpuProfile"] == {"driver": "None"}
    assert "gpuInstanceProfile" not in i
    assert i["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert i["nodeLabels"] == {"workload": "inference"}
    assert (i["resourceGroupName"], i["resourceName"]) == ("rg-gpu", "test-aks")


def test_a100_mig_pool_is_split_by_aks_which_also_installs_the_driver(a100_plan):
    [pool] = a100_plan.by_type(AGENT_POOL)
    i = pool.inputs
    assert (i["vmSize"], i["gpuInstanceProfile"], i["gpuProfile"]) == (
        "Standard_NC24ads_A100_v4", "MIG1g", {"driver": "Install"})
    assert (i["enableAutoScaling"], i["minCount"], i["maxCount"]) == (True, 0, 2)
    assert i["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert i["nodeLabels"] == {"nvidia.com/gpu.deploy.mig-manager": "false"}


def test_autoscaling_spelling_creates_the_same_autoscaled_agent_pool():
    sections = a100_mig_sections()
    pool = sections["cluster"]["aks"]["gpuPools"][0]
    del pool["autoscale"]
    pool["autoscaling"] = {"min": 1, "max": 3}
    [created] = _plan(sections).by_type(AGENT_POOL)
    i = created.inputs
    assert (i["enableAutoScaling"], i["count"], i["minCount"], i["maxCount"]) == (True, 1, 1, 3)


def test_existing_resource_group_is_looked_up_not_created(a100_plan, t4_plan):
    assert a100_plan.by_type("azure-native:resources:ResourceGroup") == []
    [rg] = t4_plan.by_type("azure-native:resources:ResourceGroup")
    assert rg.inputs == {"resourceGroupName": "rg-gpu", "location": "westeurope"}
    [cluster] = a100_plan.by_type(CLUSTER)
    assert cluster.inputs["resourceGroupName"] == "rg-gpu"


def test_cluster_has_a_managed_identity_and_only_the_system_pool_inline(t4_plan):
    [cluster] = t4_plan.by_type(CLUSTER)
    i = cluster.inputs
    assert i["identity"] == {"type": "SystemAssigned"}
    assert [p["name"] for p in i["agentPoolProfiles"]] == ["system"]
    assert i["agentPoolProfiles"][0]["mode"] == "System"


def test_operator_installs_the_driver_on_the_aks_cluster(t4_plan):
    [release] = t4_plan.by_type("kubernetes:helm.sh/v3:Release")
    assert release.inputs["values"]["driver"]["enabled"] is True


def test_workload_on_the_pool_selects_and_tolerates_it(t4_plan):
    [deployment] = t4_plan.by_type("kubernetes:apps/v1:Deployment")
    spec = deployment.inputs["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"kubernetes.azure.com/agentpool": "t4"}
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in spec["tolerations"]


def test_clusters_without_aks_plan_no_azure_resources():
    plan = run_program(load_stack("dev"))
    assert not [r for r in plan.resources if r.type.startswith("azure-native:")]


def test_shipped_aks_stack_plans_cluster_pool_provider_operator_and_workload(tmp_path):
    result = CliRunner().invoke(app, ["plan", "--stack", "aks", "--out", str(tmp_path / "plan")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "plan" / "plan.json").read_text())
    by_type = {}
    for r in doc["resources"]:
        by_type.setdefault(r["type"], []).append(r)
    assert len(by_type["azure-native:resources:ResourceGroup"]) == 1
    assert len(by_type[CLUSTER]) == 1
    [pool] = by_type[AGENT_POOL]
    assert pool["inputs"]["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert pool["inputs"]["gpuProfile"] == {"driver": "None"}
    [provider] = by_type[K8S_PROVIDER]
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert len(by_type["kubernetes:helm.sh/v3:Release"]) == 1
    assert by_type["kubernetes:apps/v1:Deployment"][0]["inputs"]["metadata"]["name"] == "onnx-infer"
