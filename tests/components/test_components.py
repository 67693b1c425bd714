"""Each component under Pulumi mocks, in preview and update modes: its children, their inputs and labels.

Assertions on Outputs are collected into `seen` inside `.apply` and checked afterwards, so a test fails
if the apply never ran (which is what happens to unknown outputs in preview mode).
"""

from __future__ import annotations

import pulumi
import pytest

from components.batch_job import BatchJob, BatchJobArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.inference_service import InferenceService, InferenceServiceArgs
from components.mig_geometry import MigGeometry, MigGeometryArgs
from components.node_pool_labels import NodePoolLabels, NodePoolLabelsArgs
from components.notebook import Notebook, NotebookArgs
from components.sharing_config import SharingConfig, SharingConfigArgs
from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import SECRET_SIG, SIG_KEY, run_program
from gpufleet.render import gpu_stack as r
from gpufleet.render.mig_manager import mig_manager_objects
from gpufleet.render.workloads import workload_objects
from tests.conftest import ROOT

MODES = [pytest.param(True, id="preview"), pytest.param(False, id="update")]


@pytest.fixture(scope="module")
def dev():
    return load_stack("dev", ROOT)


@pytest.fixture(scope="module")
def mig():
    return load_stack("mig", ROOT)


def children_of(plan, component_type: str):
    (comp,) = plan.by_type(component_type)
    return comp, [x for x in plan.resources if x.parent == comp.urn]


@pytest.mark.parametrize("preview", MODES)
def test_gpu_operator_is_a_pinned_release_with_rendered_values(dev, preview):
    values = r.operator_values(dev.config)
    plan = run_program(dev, lambda: GpuOperator("op", GpuOperatorArgs("gpu-operator", values)), preview=preview)
    comp, (release,) = children_of(plan, "gpufleet:index:GpuOperator")
    assert release.type == "kubernetes:helm.sh/v3:Release" and release.name == "op-release"
    i = release.inputs
    assert (i["chart"], i["version"], i["name"], i["namespace"]) == ("gpu-operator", "v26.7.0", "gpu-operator",
                                                                     "gpu-operator")
    assert i["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert i["timeout"] == 900
    assert i["values"]["mig"] == {"strategy": "none"}


@pytest.mark.parametrize("preview", MODES)
def test_sharing_config_is_one_configmap_key_per_profile(dev, preview):
    cm = r.sharing_configmap(dev.config)
    plan = run_program(dev, lambda: SharingConfig("share", SharingConfigArgs(cm)), preview=preview)
    _, (configmap,) = children_of(plan, "gpufleet:index:SharingConfig")
    assert configmap.inputs["metadata"]["name"] == "gpufleet-device-plugin-config"
    assert configmap.inputs["metadata"]["namespace"] == "gpu-operator"
    assert set(configmap.inputs["data"]) == {"t4-mps"}
    assert configmap.inputs["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gpufleet"


@pytest.mark.parametrize("preview", MODES)
def test_mig_geometry_in_standalone_mode_runs_its_own_mig_manager(mig, preview):
    cm = r.mig_configmap(mig.config)
    plan = run_program(mig, lambda: MigGeometry("g", MigGeometryArgs(cm, mig_manager_objects("nvidia-device-plugin"))),
                       preview=preview)
    _, kids = children_of(plan, "gpufleet:index:MigGeometry")
    kinds = sorted(k.inputs["kind"] for k in kids)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "ConfigMap", "DaemonSet", "Role", "RoleBinding",
                     "ServiceAccount"]
    ds = next(k for k in kids if k.inputs["kind"] == "DaemonSet").inputs
    container = ds["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
    assert {"name": "CONFIG_FILE", "value": "/mig-parted-config/config.yaml"} in container["env"]


@pytest.mark.parametrize("preview", MODES)
def test_node_pool_labels_patch_only_the_selection_labels(dev, preview):
    labels = r.node_labels(dev.config)
    plan = run_program(dev, lambda: NodePoolLabels("edge", NodePoolLabelsArgs(labels)), preview=preview)
    _, (patch,) = children_of(plan, "gpufleet:index:NodePoolLabels")
    assert patch.type == "kubernetes:core/v1:NodePatch"
    assert patch.inputs["metadata"] == {"name": "ase-node-0", "labels": {"nvidia.com/device-plugin.config": "t4-mps"}}


@pytest.mark.parametrize("preview", MODES)
def test_inference_service_is_deployment_and_restricted_load_balancer(dev, preview):
    w = dev.config.workloads[0]
    seen = []

    def program():
        svc = InferenceService("inf", InferenceServiceArgs(workload_objects(dev.config, w)))
        svc.deployment.metadata.apply(lambda m: seen.append(m.name))

    plan = run_program(dev, program, preview=preview)
    _, kids = children_of(plan, "gpufleet:index:InferenceService")
    by_kind = {k.inputs["kind"]: k.inputs for k in kids}
    assert set(by_kind) == {"Deployment", "Service"}
    assert by_kind["Service"]["spec"]["loadBalancerSourceRanges"] == ["10.128.0.0/16"]
    assert by_kind["Deployment"]["spec"]["selector"]["matchLabels"] == by_kind["Service"]["spec"]["selector"]
    template = by_kind["Deployment"]["spec"]["template"]
    assert template["metadata"]["annotations"] == {"gpufleet.io/expected-gpu-memory-mib": "3000"}
    assert seen == ["my-infer2"]  # the apply ran (mock outputs echo inputs, in both modes)


@pytest.mark.parametrize("preview", MODES)
def test_notebook_token_is_a_pulumi_secret_end_to_end(dev, preview):
    w = dev.config.workloads[2]
    seen = []

    def program():
        nb = Notebook("nb", NotebookArgs(workload_objects(dev.config, w), token="s3cret"))
        pulumi.Output.all(nb.token, nb.secret.metadata).apply(lambda a: seen.append(a[1]["name"]))

    plan = run_program(dev, program, preview=preview)
    _, kids = children_of(plan, "gpufleet:index:Notebook")
    secret = next(k for k in kids if k.inputs["kind"] == "Secret").inputs
    assert secret["stringData"].get(SIG_KEY) == SECRET_SIG  # wrapped as a secret on the wire
    deployment = next(k for k in kids if k.inputs["kind"] == "Deployment").inputs
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "JUPYTER_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "tf-notebook-token", "key": "token"}}} in env
    assert seen == ["tf-notebook-token"]


@pytest.mark.parametrize("preview", MODES)
def test_batch_job_never_restarts_and_requests_its_gpu(mig, preview):
    w = mig.config.workloads[0]
    plan = run_program(mig, lambda: BatchJob("job", BatchJobArgs(workload_objects(mig.config, w))), preview=preview)
    _, (job,) = children_of(plan, "gpufleet:index:BatchJob")
    spec = job.inputs["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_update_mode_resolves_stack_outputs_that_preview_leaves_unknown(dev):
    """In preview, an output the mocks do not return stays unknown and its apply never runs."""
    ran = {True: [], False: []}
    for preview in (True, False):
        def program(preview=preview):
            op = GpuOperator("op", GpuOperatorArgs("gpu-operator", {}))
            op.release.status.apply(lambda s: ran[preview].append("status"))
        run_program(dev, program, preview=preview)
    assert ran == {True: [], False: ["status"]}
