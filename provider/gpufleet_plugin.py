"""GpuStack as a multi-language component: typed args, the stack config behind them, gpufleet's errors.

No `from __future__ import annotations` here: the SDK's analyzer reads these annotations at runtime to
infer the package schema (inputs from `GpuStackArgs`, outputs from the class annotations of `GpuStack`),
and the descriptions from the attribute docstrings.
"""

import tomllib
from pathlib import Path
from typing import Callable, Optional, TypedDict

import pulumi
import yaml
from pulumi.errors import InputPropertiesError
from pulumi.provider import main as provider_main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

from components import gpu_stack as core
from gpufleet.capacity.stack import node_names, planned_resources
from gpufleet.config.loading import NAMESPACE, STACK_NAME, load_stack, parse_sections
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigError, ConfigIssue, GpufleetError, InputError
from gpufleet.render.gpu_stack import stack_namespace

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpufleet"
CONFIG_YAML_SOURCE = "configYaml"


def version() -> str:
    """The package version: pyproject's `project.version`."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


class GpuStackArgs(TypedDict):
    stack_file: Optional[str]
    ("Path to a gpufleet stack file (`Pulumi.<stack>.yaml`) whose `gpufleet:` config declares the stack, "
     "e.g. `/src/gpufleet/Pulumi.dev.yaml`; a relative path is read from the plugin's working directory, so "
     "prefer an absolute one. Give exactly one of `stackFile` and `configYaml`.")
    config_yaml: Optional[str]
    ("The stack config as YAML text: the `gpufleet:` section of a stack file, one key per section "
     "(`mode`, `cluster`, `operator`, `devicePlugin`, `nodePools`, `workloads`, ...; `gpufleet schema` lists "
     "them), with or without the `gpufleet:` prefix. Give exactly one of `stackFile` and `configYaml`.")
    secrets: Optional[pulumi.Input[dict[str, pulumi.Input[str]]]]
    ("Values of the secret config keys the config names (a notebook's `tokenConfigKey`, an env var's "
     "`secretConfigKey`), by key; they reach the cluster only as Pulumi secrets. A key not given here "
     "is read from the calling stack's `gpufleet:<key>` secret config.")


class GpuStack(core.GpuStack):
    ("The NVIDIA GPU stack and its GPU workloads on Kubernetes, from one gpufleet stack config: the "
     "gpu-operator (or the standalone device plugin, or NVIDIA's DRA driver), its sharing and MIG "
     "ConfigMaps, node labels, namespaces, named claims and the workloads. The config is validated first; "
     "a bad config fails with every problem listed, one per line.")

    namespaces: pulumi.Output[list[str]]
    """Every namespace the stack creates or uses: the GPU stack's own, then the workloads' (sorted)."""
    release_names: pulumi.Output[dict[str, str]]
    ("Helm release names by component (`gpuOperator`, `devicePlugin` or `draDriver`); empty in "
     "`platform-managed` mode.")
    endpoints: pulumi.Output[dict[str, str]]
    """Service address (IP or hostname) of each workload exposed through a LoadBalancer, by workload name."""
    capacity: pulumi.Output[dict[str, dict[str, int]]]
    ("The planned capacity summary: per node pool, the extended resources its nodes advertise in total "
     "(e.g. `nvidia.com/gpu`, MIG slices, shared replicas), as `gpufleet plan` and `check` count them.")

    def __init__(self, name: str, args: GpuStackArgs, opts: Optional[pulumi.ResourceOptions] = None):
        cfg = stack_config(args)
        secret = secret_lookup(args.get("secrets"))

        super().__init__(name, core.GpuStackArgs(cfg, secret=secret), opts)
        stack_ns = [stack_namespace(cfg)] if cfg.mode != "platform-managed" else []
        self.namespaces = pulumi.Output.from_input(
            stack_ns + [n for n in cfg.namespaces() if n not in stack_ns])
        releases = {key: getattr(self, attr).release.name
                    for key, attr in (("gpuOperator", "operator"), ("devicePlugin", "device_plugin"),
                                      ("draDriver", "dra_driver")) if hasattr(self, attr)}
        self.release_names = pulumi.Output.from_input(releases)
        self.endpoints = pulumi.Output.from_input(self.endpoints)
        self.capacity = pulumi.Output.from_input(capacity_summary(cfg))


def secret_lookup(given) -> Callable[[str], pulumi.Output[str]]:
    """Secret config key -> its value as a Pulumi secret: from the `secrets` input, else the caller's stack
    config. A map that arrives as one Output (it holds a secret or an unknown) is looked into when known."""
    fallback = pulumi.Config(NAMESPACE)
    if isinstance(given, pulumi.Output):
        return lambda key: pulumi.Output.secret(given.apply(lambda values: (values or {})[key]))
    values = dict(given or {})
    return lambda key: pulumi.Output.secret(values[key]) if key in values else fallback.require_secret(key)


def capacity_summary(cfg: StackConfig) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for pool in cfg.node_pools:
        nodes = len(node_names(pool))
        out[pool.name] = {res: n * nodes for res, n in sorted(planned_resources(cfg, pool).items())}
    return out


def stack_config(args: GpuStackArgs) -> StackConfig:
    """The validated StackConfig the args name. Raises ConfigError or InputError (gpufleet's messages)."""
    stack_file, text = args.get("stack_file"), args.get("config_yaml")
    if (stack_file is None) == (text is None):
        raise InputError("GpuStack: give exactly one of stackFile (a Pulumi.<stack>.yaml path) and "
                         "configYaml (the gpufleet: section as YAML text)")
    if stack_file is not None:
        path = Path(stack_file)
        stack = path.name[len("Pulumi."):-len(".yaml")] if path.name.startswith("Pulumi.") else ""
        if not path.name.endswith(".yaml") or not STACK_NAME.fullmatch(stack):
            raise InputError(f"{stack_file}: stackFile must name a stack file, Pulumi.<stack>.yaml")
        return load_stack(stack, path.parent).config
    try:
        doc = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "config"
        problem = getattr(e, "problem", None) or e
        raise ConfigError(CONFIG_YAML_SOURCE, [ConfigIssue(where, f"not valid YAML: {problem}")]) from None
    if isinstance(doc, dict) and set(doc) == {NAMESPACE} and isinstance(doc[NAMESPACE], dict):
        doc = doc[NAMESPACE]
    if not isinstance(doc, dict):
        raise ConfigError(CONFIG_YAML_SOURCE, [ConfigIssue(
            "config", f"must be a mapping of gpufleet config sections, got {type(doc).__name__}")])
    sections = {str(k).removeprefix(f"{NAMESPACE}:"): v for k, v in doc.items()}
    return parse_sections(sections, CONFIG_YAML_SOURCE, project_dir=Path.cwd())


class GpufleetProvider(ComponentProvider):
    """The SDK's component provider, reporting gpufleet's own errors as they are: the config error's lines
    (file, YAML path, problem), with no Python traceback appended."""

    def construct(self, name, resource_type, inputs, options=None):
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as e:
            if isinstance(e.inner, GpufleetError):
                # An empty (not None) list: the SDK then sends the status with its (empty) error details,
                # and the engine shows the message as it is, one line per problem.
                raise InputPropertiesError(str(e.inner), []) from None
            raise


COMPONENTS = [GpuStack]


def serve(args: list[str]) -> None:
    """Host the components: what `component_provider_host` does, with GpufleetProvider's error reporting."""
    provider_main(GpufleetProvider(COMPONENTS, PACKAGE, None, version()), args)
