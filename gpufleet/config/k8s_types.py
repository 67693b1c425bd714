"""Config field types for values that become Kubernetes names, label keys and values, env var names,
port names, image references and CIDRs. Each is checked with the API server's own rule (gpufleet.k8s_names)
and reported with its wording; the JSON Schema keeps a pattern and length for editors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from gpufleet import k8s_names as kn
from gpufleet.exposure import parse_cidr


def _checked(what: str, rule: Callable[[str], list[str]]) -> AfterValidator:
    def check(value: str) -> str:
        problems = rule(value)
        if problems:
            raise PydanticCustomError("kubernetes_name", "not a valid {what}: {problems}",
                                      {"what": what, "problems": "; ".join(problems)})
        return value

    return AfterValidator(check)


def _annotation_key_errors(value: str) -> list[str]:
    return kn.qualified_name_errors(value.lower())


def _cidr_errors(value: str) -> list[str]:
    if parse_cidr(value) is None:
        return ["allowed: an IPv4 or IPv6 CIDR such as 10.0.0.0/8 or 2001:db8::/32 (address, '/', prefix length)"]
    return []


def _sharing_profile_name_errors(value: str) -> list[str]:
    """A profile name is a node label value (nvidia.com/device-plugin.config) and a ConfigMap key."""
    return kn.label_value_errors(value) or kn.config_map_key_errors(value) or (
        ["must be non-empty"] if not value else [])


def _geometry_name_errors(value: str) -> list[str]:
    """A geometry name is the value of the node label nvidia.com/mig.config."""
    return kn.label_value_errors(value) or (["must be non-empty"] if not value else [])


_LABEL = {"pattern": f"^{kn.DNS1123_LABEL_FMT}$", "maxLength": kn.DNS1123_LABEL_MAX}
_SUBDOMAIN = {"pattern": f"^{kn.DNS1123_SUBDOMAIN_FMT}$", "maxLength": kn.DNS1123_SUBDOMAIN_MAX}

#: Namespaces, workload and pool names: lowercase RFC 1123 label.
DnsLabel = Annotated[str, _checked("lowercase RFC 1123 label", kn.dns1123_label_errors),
                     Field(json_schema_extra=_LABEL)]
Namespace = Annotated[str, _checked("namespace name", kn.dns1123_label_errors), Field(json_schema_extra=_LABEL)]
#: Node, Secret and RuntimeClass names: lowercase RFC 1123 subdomain.
NodeName = Annotated[str, _checked("node name", kn.dns1123_subdomain_errors), Field(json_schema_extra=_SUBDOMAIN)]
SecretName = Annotated[str, _checked("Secret name", kn.dns1123_subdomain_errors), Field(json_schema_extra=_SUBDOMAIN)]
ObjectName = Annotated[str, _checked("object name", kn.dns1123_subdomain_errors), Field(json_schema_extra=_SUBDOMAIN)]
LabelKey = Annotated[str, _checked("label key", kn.qualified_name_errors)]
LabelValue = Annotated[str, _checked("label value", kn.label_value_errors),
                       Field(json_schema_extra={"maxLength": kn.LABEL_VALUE_MAX})]
TaintKey = Annotated[str, _checked("taint key", kn.qualified_name_errors)]
TaintValue = Annotated[str, _checked("taint value", kn.label_value_errors),
                       Field(json_schema_extra={"maxLength": kn.LABEL_VALUE_MAX})]
AnnotationKey = Annotated[str, _checked("annotation key", _annotation_key_errors)]
EnvName = Annotated[str, _checked("environment variable name", kn.env_var_name_errors),
                    Field(json_schema_extra={"pattern": f"^{kn.ENV_VAR_NAME_FMT}$"})]
PortName = Annotated[str, _checked("port name", kn.port_name_errors),
                     Field(json_schema_extra={"pattern": "^[-a-z0-9]+$", "maxLength": kn.PORT_NAME_MAX})]
ImageReference = Annotated[str, _checked("image reference", kn.image_reference_errors)]
Cidr = Annotated[str, _checked("CIDR", _cidr_errors)]
SharingProfileName = Annotated[str, _checked("sharing profile name", _sharing_profile_name_errors)]
GeometryName = Annotated[str, _checked("MIG geometry name", _geometry_name_errors)]
#: Whole numbers the API server stores as int32 (replicas, completions, parallelism, seconds).
Int32 = Annotated[int, Field(le=kn.INT32_MAX)]
