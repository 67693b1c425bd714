"""`pulumi up` for real: the Pulumi CLI, gpufleet's program and pulumi-kubernetes' provider (built from pinned
Go modules by scripts/build-pulumi-tools) against the real control plane, with a local `file://` backend and
a passphrase secrets provider, as a user deploys a stack:

- `pulumi preview` lists exactly the resources `gpufleet plan` lists;
- `pulumi up` creates them, and every object in the cluster holds what the plan's manifest says (server
  defaults aside); each Helm release runs with the values the plan shows;
- a change of the stack's config shows in `pulumi preview --diff` as it does in `gpufleet plan --diff`, and
  the second `up` applies it;
- `pulumi destroy` leaves nothing gpufleet created;
- a token set with `pulumi config set --secret` is in plain text nowhere: not in the state, the outputs, the
  preview or the update's output;
- `pulumi preview --policy-pack policies` refuses the `greed` stack with the policy's own message, and the
  same policy set to advisory is printed as a warning and refuses nothing;
- the pull-request workflow's preview step (scripts/stack-preview) shows a reviewer the change through the
  real `pulumi preview --diff` where the CLI is on PATH, through the offline plan diff where it is not.
- README.md's "Deploying for real" commands, typed as written in a terminal by a new user (fresh clone,
  local backend), deploy the dev stack: `up` asks first, and after "yes" the cluster holds the plan.

The Helm charts come from the pinned upstream archives (tests/upstream_files.py; skipped when absent), served
as a Helm repository on loopback through GPUFLEET_CHART_MIRROR.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from gpufleet.capacity.model import Node
from gpufleet.capacity.stack import stack_capacity
from gpufleet.config.loading import load_stack
from policies import PACK_NAME
from tests.e2e.cluster import ROOT
from tests.e2e.conftest import kubectl_runner
from tests.e2e.dra_driver import driver_device_classes, publish_driver_devices
from tests.e2e.kwok_nodes import create_nodes, wait_nodes_ready
from tests.e2e.pulumi_engine import (
    LOAD_BALANCER_IP,
    ChartMirror,
    CloudEmulator,
    Engine,
    contains,
    linked_checkout,
    pulumi_bin,
    wait_until,
)
from tests.e2e.workloads import gpufleet, plan_documents

#: Stacks whose full life (preview, up, change, up, destroy) runs here. For dra the test publishes what
#: NVIDIA's DRA driver would (no driver runs on KWOK nodes), so that its claims allocate and its pods start.
UP_STACKS = ["dev", "mig", "k3s", "multi", "dra", "llm"]
#: Labels every kubelet sets on its node, which the stacks' nodes as KWOK makes them lack.
KUBELET_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
#: The limit the issue sets for a warm `pulumi up` of the dev stack on the test cluster.
WARM_UP_LIMIT_S = 60


def secret_value(stack: str, key: str) -> str:
    return f"e2e-{stack}-{key}-7f3a9c"


def type_and_name(urn: str) -> tuple[str, str]:
    """(type, name) of a URN: the real engine's URNs carry the whole parent type chain, the plan's only the
    parent's type, so resources are compared by type and name."""
    _, _, types, name = urn.split("::", 3)
    return types.split("$")[-1], name


def planned_resources(plan_dir: Path) -> set[tuple[str, str]]:
    return {(r["type"], r["name"]) for r in json.loads((plan_dir / "plan.json").read_text())["resources"]}


def previewed(preview: dict, op: str) -> set[tuple[str, str]]:
    """The resources a preview plans to `op`, less the default providers the engine adds by itself."""
    return {type_and_name(s["urn"]) for s in preview.get("steps") or ()
            if s.get("op") == op and "::default_" not in s["urn"]}


def chart_mirror(docs: list[dict], folder: Path) -> ChartMirror:
    """The pinned archives of the plan's Helm releases, served as a repository (skips when one is absent)."""
    from upstream_files import chart_archive

    releases = [d for d in docs if d.get("kind") == "HelmRelease"]
    return ChartMirror([chart_archive(r["chart"], r["version"]) for r in releases], folder)


def create_cluster_nodes(api, config, work: Path) -> None:
    """The config's planned nodes, and a plain node for the system pods (the operator's controller and NFD
    master tolerate no GPU taint), as any cluster has, each with the labels a kubelet sets; for a DRA stack,
    the driver's DeviceClasses and the slices it publishes for these nodes."""
    planned = [*stack_capacity(config).nodes, Node(name="e2e-system-0")]
    create_nodes(api, planned)
    wait_nodes_ready(api, [n.name for n in planned])
    for node in planned:  # charts select on the kubelet's labels
        api.ok("PATCH", f"/api/v1/nodes/{node.name}", {"metadata": {"labels": KUBELET_LABELS}},
               content_type="application/merge-patch+json")
    if config.uses_dra():
        publish_driver_devices(api, driver_device_classes(work / "dra-driver"), config)


def prepare(stack: str, tmp_path: Path, cluster,
            init: bool = True) -> tuple[Engine, list[dict], ChartMirror, CloudEmulator]:
    """The cluster's nodes (for a DRA stack with the driver's devices), the chart mirror, the cloud emulator
    and an engine with the stack initialised (with `init` False: only its stack file there, as in a clone)."""
    docs = plan_documents(stack, tmp_path / "plan")
    loaded = load_stack(stack, ROOT)
    mirror = chart_mirror(docs, tmp_path / "mirror")
    bins = pulumi_bin()
    create_cluster_nodes(cluster.api(), loaded.config, tmp_path)
    emulator = CloudEmulator(cluster)
    engine = Engine(bins, tmp_path / "pulumi", cluster, mirror.url)
    engine.use_context(loaded.config.cluster.context)
    if init:
        engine.init(stack, {k: secret_value(stack, k) for k in loaded.config.secret_config_keys()})
    else:
        engine.add_stack_file(stack)
    return engine, docs, mirror, emulator


def live(kubectl, doc: dict) -> dict | None:
    got = kubectl("get", "-f", "-", "-o", "json", input=yaml.safe_dump(doc))
    if got.returncode != 0:
        assert "NotFound" in got.stderr or "not found" in got.stderr, got.stderr
        return None
    obj = json.loads(got.stdout)
    if obj.get("kind") == "List":  # kubectl answers a file with a list, even of one object
        return obj["items"][0] if obj["items"] else None
    return obj


def helm_values(cluster, tmp_path: Path, release: dict) -> dict | None:
    from tests.e2e.test_rendered_accepted import helm

    got = helm(cluster, tmp_path, "get", "values", release["name"], "--namespace", release["namespace"],
               "--output", "json")
    if got.returncode != 0:
        return None
    return json.loads(got.stdout) or {}


def assert_cluster_holds(cluster, kubectl, tmp_path: Path, docs: list[dict], secrets: dict[str, str]) -> None:
    for doc in docs:
        if doc.get("kind") == "HelmRelease":
            assert helm_values(cluster, tmp_path, doc) == (doc.get("values") or {}), doc["name"]
            continue
        planned = {k: v for k, v in doc.items() if k != "stringData"}
        obj = live(kubectl, planned)
        assert obj is not None, f"{doc['kind']}/{doc['metadata']['name']} was not created"
        assert contains(obj, planned), (doc, obj)
        if doc.get("kind") == "Secret":
            values = {base64.b64decode(v).decode() for v in (obj.get("data") or {}).values()}
            assert values & set(secrets.values()), "the secret's value is not the token set with --secret"


def assert_claims_allocated(cluster, docs: list[dict]) -> None:
    """The plan's Deployments that claim GPUs have every replica ready, and each running pod that claims
    GPUs has its claims allocated (the scheduler found the devices the driver publishes)."""
    api = cluster.api()
    for d in docs:
        if d.get("kind") == "Deployment" and d["spec"]["template"]["spec"].get("resourceClaims"):
            meta = d["metadata"]
            path = f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments/{meta['name']}"
            status = api.ok("GET", path)["status"]
            assert status.get("readyReplicas") == d["spec"].get("replicas", 1), (meta["name"], status)
    claims = api.ok("GET", "/apis/resource.k8s.io/v1/resourceclaims")["items"]
    allocated = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in claims
                 if c.get("status", {}).get("allocation")}
    running = [p for p in api.ok("GET", "/api/v1/pods")["items"]
               if p["spec"].get("resourceClaims") and p.get("status", {}).get("phase") == "Running"]
    assert running, "no pod that claims GPUs runs: the test would prove nothing"
    for pod in running:
        names = [st["resourceClaimName"] for st in pod.get("status", {}).get("resourceClaimStatuses") or ()]
        names += [c["resourceClaimName"] for c in pod["spec"]["resourceClaims"] if c.get("resourceClaimName")]
        assert names and all((pod["metadata"]["namespace"], n) in allocated for n in names), pod["metadata"]


def assert_nothing_left(cluster, kubectl, tmp_path: Path, docs: list[dict]) -> None:
    """After `destroy`: no release, no object of the plan, and on the cluster's nodes none of its labels."""
    for doc in docs:
        if doc.get("kind") == "HelmRelease":
            assert helm_values(cluster, tmp_path, doc) is None, doc["name"]
        elif doc.get("kind") == "Node":  # the node is the cluster's: only the labels gpufleet wrote go
            node = live(kubectl, doc)
            labels = (node or {}).get("metadata", {}).get("labels") or {}
            planned = doc["metadata"].get("labels") or {}
            assert not any(labels.get(k) == v for k, v in planned.items()
                           if not k.startswith(("kubernetes.io/", "node.kubernetes.io/"))), labels
        else:
            wait_until(lambda d=doc: live(kubectl, {k: v for k, v in d.items() if k != "stringData"}) is None,
                       120, f"{doc['kind']}/{doc['metadata']['name']} gone")


def bump_first_image(stack_file: Path) -> tuple[str, str]:
    """Change the image tag of the stack's first workload; return (workload name, new image)."""
    doc = yaml.safe_load(stack_file.read_text())
    workload = doc["config"]["gpufleet:workloads"][0]
    image = workload["image"].rsplit(":", 1)[0] + ":e2e-changed"
    workload["image"] = image
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return workload["name"], image


@pytest.mark.parametrize("stack", UP_STACKS)
def test_pulumi_up_creates_the_plan_applies_a_change_and_destroy_leaves_nothing(stack, new_cluster, tmp_path):
    cluster = new_cluster()
    engine, docs, mirror, emulator = prepare(stack, tmp_path, cluster)
    kubectl = kubectl_runner(cluster)
    secrets = {k: secret_value(stack, k) for k in load_stack(stack, ROOT).config.secret_config_keys()}
    try:
        preview = engine.preview_json(stack)
        assert previewed(preview, "create") == planned_resources(tmp_path / "plan")

        started = time.monotonic()
        up = engine("up", "--yes", "--skip-preview", "--stack", stack)
        first_up_s = time.monotonic() - started
        assert_cluster_holds(cluster, kubectl, tmp_path, docs, secrets)
        if load_stack(stack, ROOT).config.uses_dra():
            assert_claims_allocated(cluster, docs)

        # Nothing secret in plain text: the state, the outputs, what preview and up printed.
        state_text = "".join(p.read_text(errors="replace") for p in engine.state.rglob("*") if p.is_file())
        outputs = engine("stack", "output", "--json", "--stack", stack).stdout
        shown = json.dumps(preview) + up.stdout + up.stderr + outputs + state_text
        for value in secrets.values():
            assert value not in shown

        # A change of config: plan --diff and preview --diff both show it; the second up applies it.
        name, image = bump_first_image(engine.stack_file(stack))
        changed = gpufleet("plan", "--stack", str(engine.stack_file(stack)), "--no-policies",
                           "--out", str(tmp_path / "plan2"), "--diff", str(tmp_path / "plan"))
        assert changed.returncode == 0, changed.stderr
        assert image in changed.stdout
        diff = engine("preview", "--diff", "--stack", stack)
        assert image in diff.stdout
        changed_urns = {s["urn"] for s in engine.preview_json(stack)["steps"] if s["op"] != "same"}
        assert changed_urns and all(f"-{name}-" in urn for urn in changed_urns), changed_urns
        started = time.monotonic()
        engine("up", "--yes", "--skip-preview", "--stack", stack)
        second_up_s = time.monotonic() - started
        new_docs = plan_documents_in(tmp_path / "plan2")
        assert_cluster_holds(cluster, kubectl, tmp_path, new_docs, secrets)
        if stack == "dev":
            assert second_up_s <= WARM_UP_LIMIT_S, (first_up_s, second_up_s)

        engine("destroy", "--yes", "--skip-preview", "--stack", stack)
        assert_nothing_left(cluster, kubectl, tmp_path, new_docs)
    finally:
        emulator.stop()
        mirror.stop()


def plan_documents_in(plan_dir: Path) -> list[dict]:
    docs = []
    for path in sorted((plan_dir / "manifests").rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_policy_pack_refuses_greed_in_the_real_engine_and_advisory_prints_a_warning(new_cluster, tmp_path):
    stack = "greed"
    cluster = new_cluster()
    engine, _, mirror, emulator = prepare(stack, tmp_path, cluster)
    try:
        planned = gpufleet("plan", "--stack", stack)
        assert planned.returncode == 1
        message = next(line.strip() for line in planned.stdout.splitlines()
                       if "Deployment/greed/greedy-trainer" in line)

        refused = engine("preview", "--stack", stack, "--policy-pack", "policies", check=False)
        out = refused.stdout + refused.stderr
        assert refused.returncode != 0, out
        assert "gpu-capacity-fit" in out and "mandatory" in out
        assert message[:120] in " ".join(out.split()), out[-4000:]

        advisory = tmp_path / "advisory.json"
        advisory.write_text(json.dumps({"gpu-capacity-fit": {"enforcementLevel": "advisory"}}))
        warned = engine("preview", "--stack", stack, "--policy-pack", "policies",
                        "--policy-pack-config", str(advisory))
        out = warned.stdout + warned.stderr
        assert "gpu-capacity-fit" in out and "advisory" in out
        assert message[:120] in " ".join(out.split()), out[-4000:]
    finally:
        emulator.stop()
        mirror.stop()


#: What the tests' engine sets that a new user's terminal has not: a backend (the user logs in), and no
#: confirmations (the user is asked).
USER_UNSET = {"PULUMI_BACKEND_URL", "PULUMI_SKIP_CONFIRMATIONS"}
#: The question `pulumi up` asks in a terminal (yes, no, details; "no" is selected) and what a person types
#: to go on: the arrow up to "yes", then Enter.
CONFIRM_UPDATE = {"Do you want to perform this update?": b"\x1b[A\r"}


def readme_deploy_steps():
    """The commands of README.md's "Deploying for real" block, each with its trailing comment."""
    from doc_examples import block_containing, examples_of

    return examples_of(block_containing(ROOT / "README.md", "pulumi preview --policy-pack policies"))


def test_readme_deploying_for_real_steps_run_as_written_deploy_the_dev_stack(new_cluster, tmp_path):
    """A new user in a terminal, in a clone with the Pulumi CLI logged in to a local backend and a kubeconfig,
    types the README's commands as they stand (`<token>` being their token): each succeeds, the preview runs
    the policy pack, `up` asks before it changes anything, and after "yes" the cluster holds the plan."""
    from doc_examples import run_in_terminal

    stack, token = "dev", secret_value("dev", "notebookToken")
    cluster = new_cluster()
    engine, docs, mirror, emulator = prepare(stack, tmp_path, cluster, init=False)
    kubectl = kubectl_runner(cluster)
    # The user's terminal: no backend chosen yet, questions asked (not skipped, not a CI run, whose
    # variables this test may inherit).
    env = {**{k: v for k, v in engine.env.items() if k not in USER_UNSET},
           "TERM": "xterm-256color", "PULUMI_DISABLE_CI_DETECTION": "1"}
    planned = len(planned_resources(tmp_path / "plan"))

    def typed(command: str):
        return run_in_terminal(command, engine.project, env, timeout=900, answers=CONFIRM_UPDATE)

    try:
        login = typed(f"pulumi login file://{engine.state}")
        assert login.code == 0, login.output
        shown: dict[str, str] = {}
        for step in readme_deploy_steps():
            command = step.command.replace("<token>", token)
            done = typed(command)
            if done.code != 0 and step.comment.startswith("or: "):
                # A new user has no stack yet: `select` says so, and the line's alternative makes one.
                assert f"no stack named '{stack}' found" in done.output, done.output
                command = step.comment.removeprefix("or: ")
                done = typed(command)
            assert done.code == 0, f"{step.where}: `{command}` exited {done.code}:\n{done.output[-4000:]}"
            shown[command] = done.output

        assert any(c.startswith("pulumi stack init dev") for c in shown), shown.keys()
        stack_doc = yaml.safe_load(engine.stack_file(stack).read_text())
        assert "secure" in stack_doc["config"]["gpufleet:notebookToken"], stack_doc["config"]
        preview = shown["pulumi preview --policy-pack policies"]
        ran_pack = rf"Policies:\s+✅ {re.escape(PACK_NAME)}@v\S+ \(local: policies\)"
        assert re.search(ran_pack, preview), preview[-4000:]
        assert f"+ {planned} to create" in preview, preview[-4000:]
        up = shown["pulumi up"]
        assert "Do you want to perform this update?" in up, up[-4000:]
        assert f"+ {planned} created" in up, up[-4000:]
        assert f'"{LOAD_BALANCER_IP}"' in up.split("Outputs:", 1)[-1], up[-4000:]  # the services' endpoints
        assert_cluster_holds(cluster, kubectl, tmp_path, docs, {"notebookToken": token})
        state_text = "".join(p.read_text(errors="replace") for p in engine.state.rglob("*") if p.is_file())
        for text in (*shown.values(), state_text, engine.stack_file(stack).read_text()):
            assert token not in text
    finally:
        emulator.stop()
        mirror.stop()


def stack_preview(engine: Engine, base: Path, stack: str, out: Path, path: str) -> tuple[int, str, str]:
    """scripts/stack-preview as the workflow's step runs it, with `path` as PATH; (exit, comment, stderr)."""
    import subprocess
    import sys

    env = {**engine.env, "PATH": path}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "stack-preview"), "--stack", stack,
                           "--base", str(base), "--head", str(engine.project), "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, out.read_text() if out.exists() else "", done.stderr


def test_pr_preview_step_shows_the_change_through_pulumi_with_the_cli_and_offline_without(new_cluster,
                                                                                           tmp_path):
    stack = "dev"
    cluster = new_cluster()
    engine, _, mirror, emulator = prepare(stack, tmp_path, cluster)
    secrets = {k: secret_value(stack, k) for k in load_stack(stack, ROOT).config.secret_config_keys()}
    assert secrets, "the dev stack has a secret to keep out of both previews"
    try:
        engine("up", "--yes", "--skip-preview", "--stack", stack)
        base = linked_checkout(tmp_path / "base")  # the pull request's base: the stack as deployed
        (base / f"Pulumi.{stack}.yaml").write_text(engine.stack_file(stack).read_text())
        deployed = yaml.safe_load(engine.stack_file(stack).read_text())
        before = deployed["config"]["gpufleet:workloads"][0]["image"]
        name, image = bump_first_image(engine.stack_file(stack))  # the head changes one workload's image
        with_cli = f"{engine.bins}{os.pathsep}{os.environ.get('PATH', '')}"
        without_cli = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                      if d and not (Path(d) / "pulumi").exists())

        code, real, err = stack_preview(engine, base, stack, tmp_path / "real.md", with_cli)
        assert code == 0, real + err
        assert f"`pulumi preview --diff` of stack `{stack}`" in real and "Offline" not in real
        # The resource, the field, the old and the new value; the one change counted.
        assert f"-{name}-deployment" in real and f'~ image: "{before}" => "{image}"' in real, real
        assert "~ 1 to update" in real, real

        code, offline, err = stack_preview(engine, base, stack, tmp_path / "offline.md", without_cli)
        assert code == 0, offline + err
        assert "Offline plan diff" in offline and "no Pulumi CLI on PATH" in offline
        assert f"-{name}-deployment" in offline, offline
        row = f'| `spec.template.spec.containers[0].image` | `"{before}"` | `"{image}"` |'
        assert row in offline, offline

        for value in secrets.values():
            assert value not in real and value not in offline
    finally:
        emulator.stop()
        mirror.stop()


#: What `pulumi package add provider/` answers in a YAML project with the YAML host built here: the CLI
#: generates the package's YAML SDK from the schema the plugin serves, then asks the language host to link it,
#: and pulumi-yaml v1.25.0 (the newest the module proxy serves) has no Link method.
PACKAGE_ADD_REFUSED = "error: linking package: method Link not implemented"


def readme_yaml_program() -> dict:
    """The README's YAML program (resources and outputs of a Pulumi.yaml) that declares a GpuStack."""
    from doc_examples import fenced_blocks

    (block,) = [b for b in fenced_blocks(ROOT / "README.md")
                if b.lang == "yaml" and "type: gpufleet:index:GpuStack" in b.text]
    return yaml.safe_load(block.text)


def test_readme_yaml_program_declares_a_gpu_stack_that_goes_up_and_comes_down(new_cluster, tmp_path):
    program = readme_yaml_program()
    sections = yaml.safe_load(program["resources"]["gpus"]["properties"]["configYaml"])
    checkout = linked_checkout(tmp_path / "checkout")
    stack_file = checkout / "Pulumi.readme.yaml"  # the same config as a stack file, for gpufleet plan
    stack_file.write_text(yaml.safe_dump({"config": {f"gpufleet:{k}": v for k, v in sections.items()}}))
    docs = plan_documents(str(stack_file), tmp_path / "plan")
    mirror = chart_mirror(docs, tmp_path / "mirror")
    bins = pulumi_bin()
    cluster = new_cluster()
    create_cluster_nodes(cluster.api(), load_stack("readme", checkout).config, tmp_path)
    project = tmp_path / "yaml-project"
    project.mkdir()
    pulumi_yaml = project / "Pulumi.yaml"
    pulumi_yaml.write_text(yaml.safe_dump({"name": "gpufleet-yaml", "runtime": "yaml", **program},
                                          sort_keys=False))
    emulator = CloudEmulator(cluster)
    engine = Engine(bins, tmp_path / "pulumi", cluster, mirror.url, project=project)
    kubectl = kubectl_runner(cluster)
    try:
        # The plugin as linked into the temp checkout: the YAML host caches the schema beside the plugin's
        # folder (schema-gpufleet.json), which must not land in the repository.
        provider = checkout / "provider"
        added = engine("package", "add", str(provider), check=False)
        said = added.stdout + added.stderr
        assert added.returncode != 0 and PACKAGE_ADD_REFUSED in said, (
            "`pulumi package add` answered otherwise than README.md documents; update it and this test:\n"
            + said)
        assert "Successfully generated an SDK for the gpufleet package" in said, said  # the schema was served
        # The entry `package add` writes once the host has linked the package: the plugin's folder.
        project_doc = yaml.safe_load(pulumi_yaml.read_text())
        assert "packages" not in project_doc
        project_doc["packages"] = {"gpufleet": str(provider)}
        pulumi_yaml.write_text(yaml.safe_dump(project_doc, sort_keys=False))

        engine("stack", "init", "readme", "--secrets-provider", "passphrase")
        # What gpufleet plans for the stack `readme` is what the program creates under its GpuStack `gpus`.
        planned = {(t, "gpus" + n[len("readme"):] if n.startswith("readme") else n)
                   for t, n in planned_resources(tmp_path / "plan") if not t.startswith("pulumi:")}
        preview = engine.preview_json("readme")
        created = {r for r in previewed(preview, "create") if not r[0].startswith("pulumi:")}
        assert created == planned, (created, planned)
        engine("up", "--yes", "--skip-preview", "--stack", "readme")
        assert_cluster_holds(cluster, kubectl, tmp_path, docs, {})
        outputs = json.loads(engine("stack", "output", "--json", "--stack", "readme").stdout)
        releases = sorted(d["name"] for d in docs if d.get("kind") == "HelmRelease")
        assert sorted(outputs["releases"].values()) == releases, outputs
        gpus = {pool["name"]: {"nvidia.com/gpu": pool["gpu"]["count"] * len(pool["nodes"])}
                for pool in sections["nodePools"]}
        assert outputs["capacity"] == gpus, outputs  # per pool, the GPUs its nodes advertise

        engine("destroy", "--yes", "--skip-preview", "--stack", "readme")
        assert_nothing_left(cluster, kubectl, tmp_path, docs)
    finally:
        emulator.stop()
        mirror.stop()
