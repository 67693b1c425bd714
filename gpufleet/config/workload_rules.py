"""Checks of one workload against what the API server and the platform accept: the Service name, ports
and the names derived from them, the image reference, who can reach the LoadBalancer, and env values
that must be secrets."""

from __future__ import annotations

from typing import TypeGuard

from gpufleet.config._paths import yaml_path as _p
from gpufleet.config.model import check_model, check_vllm_flags
from gpufleet.config.stack import SECTION_KEYS
from gpufleet.config.workloads import BatchJob, InferenceService, Notebook
from gpufleet.errors import ConfigIssue
from gpufleet.exposure import (
    SOURCE_RANGES_ANNOTATION,
    covers_everything,
    effective_source_ranges,
    literal_needs_secret,
    parse_cidr,
    split_annotation_ranges,
)
from gpufleet.k8s_names import dns1035_label_errors, parse_image_reference


def default_port_name(port: int) -> str:
    """The name gpufleet gives an unnamed port (the rendered manifests use the same)."""
    return f"port-{port}"


def check_workload(i: int, w: InferenceService | Notebook | BatchJob) -> list[ConfigIssue]:
    issues = _check_image(i, w.image)
    issues += _check_env(i, w)
    if w.model is not None:
        issues += check_model(i, w)
    else:
        issues += check_vllm_flags(i, w)
    if isinstance(w, InferenceService):
        issues += _check_ports(i, w)
    if has_service(w):
        problems = dns1035_label_errors(w.name)
        if problems:
            issues.append(ConfigIssue(_p("workloads", i, "name"), f"'{w.name}' also names the workload's Service, "
                                      f"which must be a DNS-1035 label: {'; '.join(problems)}"))
        issues += _check_exposure(i, w)
    return issues


def has_service(w) -> TypeGuard[InferenceService | Notebook]:
    return isinstance(w, Notebook) or (isinstance(w, InferenceService) and bool(w.ports))


def _check_image(i: int, image: str) -> list[ConfigIssue]:
    """The reference grammar is a field check; here: pinned to a version tag or a digest."""
    parsed = parse_image_reference(image)
    if parsed is None:
        return []
    _, tag, digest = parsed
    if digest is None and (tag is None or tag == "latest"):
        return [ConfigIssue(_p("workloads", i, "image"),
                            f"'{image}' is not pinned; allowed: an image with a version tag (not latest) or a digest "
                            "(@sha256:<64 hex digits>)")]
    return []


def _check_ports(i: int, w: InferenceService) -> list[ConfigIssue]:
    """Service ports, container ports and port names each unique (the API server refuses duplicates)."""
    issues = []
    seen_service: dict[tuple[int, str], int] = {}
    seen_container: dict[tuple[int, str], int] = {}
    seen_names: dict[str, int] = {}
    for j, port in enumerate(w.ports):
        target = port.target_port or port.port
        name = port.name or default_port_name(port.port)
        for seen, key, what, field in ((seen_service, (port.port, port.protocol), "service port", "port"),
                                       (seen_container, (target, port.protocol), "container port",
                                        "targetPort" if port.target_port else "port")):
            if key in seen:
                issues.append(ConfigIssue(_p("workloads", i, "ports", j, field),
                                          f"{what} {key[0]}/{key[1]} is already used by ports[{seen[key]}]; "
                                          f"allowed: each {what} and protocol once per workload"))
            seen.setdefault(key, j)
        if name in seen_names:
            shown = "" if port.name else f" (the default name of port {port.port})"
            issues.append(ConfigIssue(_p("workloads", i, "ports", j, "name"),
                                      f"'{name}'{shown} is already the name of ports[{seen_names[name]}]; "
                                      "allowed: a unique name per port"))
        seen_names.setdefault(name, j)
    return issues


def _check_exposure(i: int, w: InferenceService | Notebook) -> list[ConfigIssue]:
    svc = w.service
    annotation = svc.annotations.get(SOURCE_RANGES_ANNOTATION)
    issues = []
    if annotation is not None:
        parts = split_annotation_ranges(annotation)
        bad = [r for r in parts if parse_cidr(r) is None]
        if bad or not parts:
            what = f"holds {', '.join(repr(r) for r in bad)}, not CIDRs" if bad else "holds no CIDR"
            issues.append(ConfigIssue(_p("workloads", i, "service", "annotations", SOURCE_RANGES_ANNOTATION),
                                      f"'{annotation}' {what}; allowed: comma-separated CIDRs such as "
                                      "10.0.0.0/8,192.168.0.0/16"))
    if svc.type != "LoadBalancer" or svc.public:
        return issues
    ranges = effective_source_ranges(svc.source_ranges, annotation)
    if not ranges:
        issues.append(ConfigIssue(_p("workloads", i, "service"),
                                  "a LoadBalancer without sourceRanges is reachable from anywhere; set "
                                  "sourceRanges (CIDRs), or public: true to allow it, or type: ClusterIP"))
    elif covers_everything(ranges):
        where = "sourceRanges" if svc.source_ranges else f"annotations.{SOURCE_RANGES_ANNOTATION}"
        issues.append(ConfigIssue(_p("workloads", i, "service", where),
                                  f"{ranges} together cover every address of an IP family, so the LoadBalancer is "
                                  "reachable from anywhere; narrow the ranges, or set public: true to allow it"))
    return issues


def _check_env(i: int, w) -> list[ConfigIssue]:
    issues = []
    for name, value in w.env.items():
        if isinstance(value, str) and literal_needs_secret(name, value):
            key = _suggested_key(name)
            issues.append(ConfigIssue(
                _p("workloads", i, "env", name),
                f"{name} looks like a credential, and a literal value would sit in plain text in the stack file, "
                f"the plan and the manifests; allowed: {name}: {{secretConfigKey: {key}}} with "
                f"`pulumi config set --secret {key} <value>`"))
    for name, key in w.secret_env().items():
        if key in SECTION_KEYS:
            issues.append(ConfigIssue(_p("workloads", i, "env", name, "secretConfigKey"),
                                      f"'{key}' is a gpufleet config section; allowed: another key name"))
    if isinstance(w, Notebook) and w.token_config_key in SECTION_KEYS:
        issues.append(ConfigIssue(_p("workloads", i, "tokenConfigKey"),
                                  f"'{w.token_config_key}' is a gpufleet config section; allowed: another key name"))
    return issues


def _suggested_key(env_name: str) -> str:
    """HF_TOKEN -> hfToken: a config key name in the style of notebookToken."""
    words = [w for w in env_name.replace("-", "_").replace(".", "_").lower().split("_") if w]
    return (words[0] + "".join(w.capitalize() for w in words[1:])) if words else "secretValue"
