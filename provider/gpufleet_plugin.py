"""GpuStack as a multi-language component: typed args, the stack config behind them, gpufleet's errors.

No `from __future__ import annotations` here: the SDK's analyzer reads these annotations at runtime to
infer the package schema (inputs from `GpuStackArgs`, outputs from the class annotations of `GpuStack`),
and the descriptions from the attribute docstrings.
"""

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pulumi
import yaml
from config_schema import stack_spelling, with_typed_config
from pulumi.errors import InputPropertiesError
from pulumi.output import Unknown
from pulumi.provider import main as provider_main
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError

from components import device_plugin as core_dp
from components import gpu_operator as core_op
from components import gpu_stack as core
from components import mig_geometry as core_mig
from components import sharing_config as core_sharing
from gpufleet.capacity.stack import advertised_resources, node_names
from gpufleet.config.loading import NAMESPACE, STACK_NAME, load_stack, parse_sections
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigError, ConfigIssue, GpufleetError, InputError
from gpufleet.render import gpu_stack as render
from gpufleet.render.gpu_stack import stack_namespace
from gpufleet.render.mig_manager import mig_manager_objects
from gpufleet.render.tolerations import MIG_MANAGER, with_pool_taints

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpufleet"
CONFIG_YAML_SOURCE = "configYaml"
CONFIG_SOURCE = "config"


def version() -> str:
    """The package version: pyproject's `project.version`."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


class GpuStackArgs(TypedDict):
    stack_file: str | None
    ("Path to a gpufleet stack file (`Pulumi.<stack>.yaml`) whose `gpufleet:` config declares the stack, "
     "e.g. `/src/gpufleet/Pulumi.dev.yaml`; a relative path is read from the plugin's working directory, so "
     "prefer an absolute one. Give exactly one config input: `stackFile` or `configYaml` (or, on GpuStack, "
     "the typed `config`).")
    config_yaml: str | None
    ("The stack config as YAML text: the `gpufleet:` section of a stack file, one key per section "
     "(`mode`, `cluster`, `operator`, `devicePlugin`, `nodePools`, `workloads`, ...; `gpufleet schema` lists "
     "them), with or without the `gpufleet:` prefix. Give exactly one config input: `stackFile` or "
     "`configYaml` (or, on GpuStack, the typed `config`).")
    config: Any | None
    "The stack config as a typed object (its schema type is set by GpufleetProvider from the config models)."
    secrets: pulumi.Input[dict[str, pulumi.Input[str]]] | None
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
     "(e.g. `nvidia.com/gpu`, MIG slices, shared replicas), as `gpufleet plan` and `check` count them; none in a "
     "DRA stack, whose GPUs are ResourceSlice devices.")

    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None):
        cfg = stack_config(args)
        secret = secret_lookup(args.get("secrets"))

        super().__init__(name, core.GpuStackArgs(cfg, secret=secret), opts)
        stack_ns = [stack_namespace(cfg)] if cfg.mode != "platform-managed" else []
        self.namespaces = pulumi.Output.from_input(
            stack_ns + [n for n in cfg.namespace_names() if n not in stack_ns])
        releases = {key: getattr(self, attr).release.name
                    for key, attr in (("gpuOperator", "operator"), ("devicePlugin", "device_plugin"),
                                      ("draDriver", "dra_driver")) if hasattr(self, attr)}
        self.release_names = pulumi.Output.from_input(releases)
        self.endpoints = pulumi.Output.from_input(self.endpoints)
        self.capacity = pulumi.Output.from_input(capacity_summary(cfg))


# The two config inputs repeat GpuStackArgs' word for word: the SDK's analyzer reads a field's description from
# the class's own source, so a TypedDict that inherits them would serve them undocumented (tried: the schema test
# catches it).
class StackConfigArgs(TypedDict):
    stack_file: str | None
    ("Path to a gpufleet stack file (`Pulumi.<stack>.yaml`) whose `gpufleet:` config declares the stack, "
     "e.g. `/src/gpufleet/Pulumi.dev.yaml`; a relative path is read from the plugin's working directory, so "
     "prefer an absolute one. Give exactly one config input: `stackFile` or `configYaml` (or, on GpuStack, "
     "the typed `config`).")
    config_yaml: str | None
    ("The stack config as YAML text: the `gpufleet:` section of a stack file, one key per section "
     "(`mode`, `cluster`, `operator`, `devicePlugin`, `nodePools`, `workloads`, ...; `gpufleet schema` lists "
     "them), with or without the `gpufleet:` prefix. Give exactly one config input: `stackFile` or "
     "`configYaml` (or, on GpuStack, the typed `config`).")


def _not_for(source: str, path: str, message: str) -> ConfigError:
    """A component that does not apply to the config: gpufleet's one-line error, at the config path."""
    return ConfigError(source, [ConfigIssue(path, message)])


def _gpu_stack_config(args, component: str, modes: tuple[str, ...]) -> tuple[str, StackConfig]:
    """The loaded config, when its `mode` is one of `modes` (those in which GpuStack builds `component`)."""
    source, cfg = _loaded_config(args, component)
    if cfg.mode not in modes:
        allowed = " or ".join(modes)
        why = ("platform-managed deploys no GPU stack" if cfg.mode == "platform-managed"
               else "the gpu-operator runs its own device plugin" if cfg.mode == "operator"
               else "standalone mode runs the device plugin (or DRA driver) instead")
        raise _not_for(source, f"{NAMESPACE}:mode",
                       f"{component} needs mode {allowed} ({why}); got \"{cfg.mode}\"")
    return source, cfg


class GpuOperator(core_op.GpuOperator):
    ("NVIDIA's gpu-operator Helm release alone (driver, toolkit, device plugin, GFD, MIG manager, DCGM), "
     "with the chart values GpuStack gives it for the same stack config; the config's `mode` must be "
     "`operator`. "
     "The release's namespace must exist (GpuStack creates it), and the sharing and MIG ConfigMaps the "
     "values name come from SharingConfig and MigGeometry.")

    release_name: pulumi.Output[str]
    """The Helm release name (`gpu-operator`)."""
    namespace: pulumi.Output[str]
    """The namespace of the release (`gpufleet:operator.namespace`)."""

    def __init__(self, name: str, args: StackConfigArgs, opts: pulumi.ResourceOptions | None = None):
        _, cfg = _gpu_stack_config(args, "GpuOperator", ("operator",))
        ns = stack_namespace(cfg)
        super().__init__(name, core_op.GpuOperatorArgs(
            ns, render.operator_values(cfg), cfg.operator.chart_version, cfg.operator.timeout_seconds,
            core.GpuStack._provider_from_config(name, cfg)), opts)
        self.release_name = self.release.name
        self.namespace = pulumi.Output.from_input(ns)


class DevicePlugin(core_dp.DevicePlugin):
    ("The standalone nvidia-device-plugin Helm release alone (with GPU feature discovery and NFD), with the "
     "chart values GpuStack gives it for the same stack config; the config's `mode` must be `standalone` and "
     "its `gpuAllocation` `devicePlugin`. The release's namespace must exist (GpuStack creates it).")

    release_name: pulumi.Output[str]
    """The Helm release name (`nvidia-device-plugin`)."""
    namespace: pulumi.Output[str]
    """The namespace of the release (`gpufleet:devicePlugin.namespace`)."""

    def __init__(self, name: str, args: StackConfigArgs, opts: pulumi.ResourceOptions | None = None):
        source, cfg = _gpu_stack_config(args, "DevicePlugin", ("standalone",))
        if cfg.uses_dra():
            raise _not_for(source, f"{NAMESPACE}:gpuAllocation",
                           "DevicePlugin needs gpuAllocation devicePlugin (a DRA stack runs NVIDIA's DRA "
                           "driver instead); got \"dra\"")
        ns = stack_namespace(cfg)
        super().__init__(name, core_dp.DevicePluginArgs(
            ns, render.device_plugin_values(cfg), cfg.device_plugin.chart_version,
            provider=core.GpuStack._provider_from_config(name, cfg)), opts)
        self.release_name = self.release.name
        self.namespace = pulumi.Output.from_input(ns)


class SharingConfig(core_sharing.SharingConfig):
    ("The device plugin's named sharing configs (time-slicing / MPS) alone: the ConfigMap GpuStack creates "
     "for the same stack config, one key per `gpufleet:devicePlugin.sharingProfiles` entry. Needs mode "
     "`operator` or `standalone` and at least one sharing profile; the namespace must exist.")

    config_map_name: pulumi.Output[str]
    """The ConfigMap's name (nodes pick a profile with the `nvidia.com/device-plugin.config` label)."""
    namespace: pulumi.Output[str]
    """The ConfigMap's namespace: the GPU stack's (the operator's or the device plugin's)."""
    profiles: pulumi.Output[list[str]]
    """The ConfigMap's keys: the sharing profile names (sorted)."""

    def __init__(self, name: str, args: StackConfigArgs, opts: pulumi.ResourceOptions | None = None):
        source, cfg = _gpu_stack_config(args, "SharingConfig", ("operator", "standalone"))
        manifest = render.sharing_configmap(cfg)
        if manifest is None:
            raise _not_for(source, f"{NAMESPACE}:devicePlugin.sharingProfiles",
                           "SharingConfig needs at least one sharing profile (time-slicing or MPS); "
                           "none declared")
        super().__init__(name, core_sharing.SharingConfigArgs(
            manifest, core.GpuStack._provider_from_config(name, cfg)), opts)
        self.config_map_name = self.config_map.metadata.name
        self.namespace = pulumi.Output.from_input(manifest["metadata"]["namespace"])
        self.profiles = pulumi.Output.from_input(self.profiles)


class MigGeometry(core_mig.MigGeometry):
    ("Named MIG geometries alone: the mig-parted ConfigMap GpuStack creates for the same stack config (and, "
     "in `standalone` mode, the mig-manager that applies it). Needs mode `operator` or `standalone` and a "
     "MIG geometry in use; the namespace must exist.")

    config_map_name: pulumi.Output[str]
    """The ConfigMap's name (nodes pick a geometry with the `nvidia.com/mig.config` label)."""
    namespace: pulumi.Output[str]
    """The namespace of the ConfigMap (and of mig-manager in standalone mode): the GPU stack's."""

    def __init__(self, name: str, args: StackConfigArgs, opts: pulumi.ResourceOptions | None = None):
        source, cfg = _gpu_stack_config(args, "MigGeometry", ("operator", "standalone"))
        manifest = render.mig_configmap(cfg)
        if manifest is None:
            raise _not_for(source, f"{NAMESPACE}:mig.geometries",
                           "MigGeometry needs a MIG geometry (here or a node pool's migGeometry); "
                           "none declared")
        ns = stack_namespace(cfg)
        extra = (mig_manager_objects(ns, tolerations=with_pool_taints(MIG_MANAGER, cfg))
                 if cfg.mode == "standalone" else [])
        super().__init__(name, core_mig.MigGeometryArgs(
            manifest, extra, core.GpuStack._provider_from_config(name, cfg)), opts)
        self.config_map_name = self.config_map.metadata.name
        self.namespace = pulumi.Output.from_input(ns)


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
        out[pool.name] = {res: n * nodes for res, n in sorted(advertised_resources(cfg, pool).items())}
    return out


def stack_config(args, component: str = "GpuStack") -> StackConfig:
    """The validated StackConfig the args name (GpuStack's: stackFile, configYaml or the typed config).
    Raises ConfigError or InputError (gpufleet's messages)."""
    return _loaded_config(args, component, typed=True)[1]


def _loaded_config(args, component: str, typed: bool = False) -> tuple[str, StackConfig]:
    """(source, config): the name gpufleet's errors give the config (the stack file's name, configYaml or
    config) and the validated StackConfig. `typed`: the component takes the typed `config` input too."""
    stack_file, text, given = args.get("stack_file"), args.get("config_yaml"), args.get("config")
    if typed:  # GpuStack: three ways to give the config
        if sum(v is not None for v in (stack_file, text, given)) != 1:
            raise InputError(f"{component}: give exactly one of stackFile (a Pulumi.<stack>.yaml path), "
                             "configYaml (the gpufleet: section as YAML text) and config (the gpufleet: "
                             "section as a typed object)")
    elif (stack_file is None) == (text is None):
        raise InputError(f"{component}: give exactly one of stackFile (a Pulumi.<stack>.yaml path) and "
                         "configYaml (the gpufleet: section as YAML text)")
    if given is not None:
        return CONFIG_SOURCE, parse_sections(typed_sections(given), CONFIG_SOURCE, project_dir=Path.cwd())
    if stack_file is not None:
        path = Path(stack_file)
        stack = path.name[len("Pulumi."):-len(".yaml")] if path.name.startswith("Pulumi.") else ""
        if not path.name.endswith(".yaml") or not STACK_NAME.fullmatch(stack):
            raise InputError(f"{stack_file}: stackFile must name a stack file, Pulumi.<stack>.yaml")
        loaded = load_stack(stack, path.parent)
        return loaded.source, loaded.config
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
    return CONFIG_YAML_SOURCE, parse_sections(sections, CONFIG_YAML_SOURCE, project_dir=Path.cwd())


def typed_sections(given) -> dict[str, Any]:
    """The `config` input as the `gpufleet:` sections a stack file holds: plain data, as YAML would load it
    (the wire's numbers are all floats: whole ones become ints), keys with or without `gpufleet:`."""
    def plain(value, where: str):
        if isinstance(value, (pulumi.Output, Unknown)):
            raise ConfigError(CONFIG_SOURCE, [ConfigIssue(
                where, "must be a plain value known when GpuStack is constructed, not an Output (the config "
                "decides which resources the stack holds)")])
        if isinstance(value, dict):
            return {str(k): plain(v, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    if isinstance(given, (pulumi.Output, Unknown)):
        raise ConfigError(CONFIG_SOURCE, [ConfigIssue(
            "config", "must be a plain object known when GpuStack is constructed, not an Output (no secret "
                      "or unknown value in it; pass secrets through `secrets`)")])
    if not isinstance(given, dict):
        raise ConfigError(CONFIG_SOURCE, [ConfigIssue(
            "config", f"must be a mapping of gpufleet config sections, got {type(given).__name__}")])
    sections = {str(k).removeprefix(f"{NAMESPACE}:"): v for k, v in given.items()}
    return stack_spelling({k: plain(v, f"{NAMESPACE}:{k}") for k, v in sections.items()})


class GpufleetProvider(ComponentProvider):
    """The SDK's component provider, reporting gpufleet's own errors as they are: the config error's lines
    (file, YAML path, problem), with no Python traceback appended. GpuStack's `config` input is typed in the
    schema as the stack config models (config_schema), which the analyzer cannot infer from pydantic."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.schema = json.dumps(with_typed_config(json.loads(self.schema), f"{PACKAGE}:index:GpuStack"))

    def construct(self, name, resource_type, inputs, options=None):
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as e:
            if isinstance(e.inner, GpufleetError):
                # An empty (not None) list: the SDK then sends the status with its (empty) error details,
                # and the engine shows the message as it is, one line per problem.
                raise InputPropertiesError(str(e.inner), []) from None
            raise


COMPONENTS = [GpuStack, GpuOperator, DevicePlugin, SharingConfig, MigGeometry]


def serve(args: list[str]) -> None:
    """Host the components: what `component_provider_host` does, with GpufleetProvider's error reporting."""
    provider_main(GpufleetProvider(COMPONENTS, PACKAGE, None, version()), args)
