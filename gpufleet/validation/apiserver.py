"""The API server's own validation, beyond the JSON schema, for the kinds gpufleet writes and checks.

The schema says a field is a string; the API server also says it must be a DNS name, unique, in range,
present. `object_errors` applies those rules (`ValidateObjectMeta`, `ValidatePodSpec`,
`ValidateDeploymentSpec`, `ValidateService`, ...) after the API server's defaulting, and returns field
errors in its words. Fields of the wrong JSON type are skipped here: the schema reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpufleet.validation import names
from gpufleet.validation.fields import FieldError, duplicate, each, invalid, not_supported, required
from gpufleet.validation.resources import resource_errors, with_defaulted_requests

#: metadata.name format per kind (ValidateObjectMeta's name function); kinds not listed are not checked.
_SUBDOMAIN_KINDS = {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "ConfigMap",
                    "Secret", "ServiceAccount", "PersistentVolumeClaim", "PersistentVolume", "Node", "RuntimeClass",
                    "PriorityClass", "StorageClass", "PodDisruptionBudget", "NetworkPolicy", "Ingress", "IngressClass",
                    "LimitRange", "ResourceQuota", "PodTemplate", "ReplicationController", "Endpoints",
                    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
_PATH_SEGMENT_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "HorizontalPodAutoscaler"}
NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    **{k: names.dns1123_subdomain for k in _SUBDOMAIN_KINDS},
    "Service": names.dns1035_label, "Namespace": names.dns1123_label,
}
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
PROTOCOLS = ["TCP", "UDP", "SCTP"]
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"]


def _d(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _path_segment(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def meta_errors(kind: str, meta: Any, path: str = "metadata", *, is_template: bool = False) -> list[FieldError]:
    """`ValidateObjectMeta`: name (per kind), namespace, label keys and values, annotation keys."""
    meta = _d(meta)
    errors: list[FieldError] = []
    if not is_template:
        name = meta.get("name")
        if not name and not meta.get("generateName"):
            errors.append(required(f"{path}.name", "name or generateName is required"))
        elif isinstance(name, str) and name:
            rule = NAME_RULES.get(kind) or (_path_segment if kind in _PATH_SEGMENT_KINDS else None)
            if rule is not None:
                errors += each(f"{path}.name", name, rule(name))
            if kind == "CronJob" and len(name) > 52:  # Job names get a timestamp suffix
                errors.append(invalid(f"{path}.name", name, names.max_len(52)))
        namespace = meta.get("namespace")
        if isinstance(namespace, str) and namespace:
            errors += each(f"{path}.namespace", namespace, names.dns1123_label(namespace))
    errors += label_errors(meta.get("labels"), f"{path}.labels")
    for key in _d(meta.get("annotations")):
        if isinstance(key, str):
            errors += each(f"{path}.annotations", key, names.qualified_name(key.lower()))
    return errors


def label_errors(labels: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key, value in _d(labels).items():
        if isinstance(key, str):
            errors += each(path, key, names.qualified_name(key))
        if isinstance(value, str):
            errors += each(path, value, names.label_value(value))
    return errors


def selector_errors(selector: Any, path: str) -> list[FieldError]:
    """`ValidateLabelSelector`: matchLabels as labels, matchExpressions with known operators."""
    selector = _d(selector)
    errors = label_errors(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_l(selector.get("matchExpressions"))):
        expr, epath = _d(expr), f"{path}.matchExpressions[{i}]"
        op, values = expr.get("operator"), _l(expr.get("values"))
        if isinstance(op, str) and op not in SELECTOR_OPERATORS:
            errors.append(not_supported(f"{epath}.operator", op, SELECTOR_OPERATORS))
        elif op in ("In", "NotIn") and not values:
            errors.append(required(f"{epath}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append(FieldError(f"{epath}.values", "Forbidden: may not be specified when `operator` is "
                                                        "'Exists' or 'DoesNotExist'"))
        if isinstance(expr.get("key"), str):
            errors += each(f"{epath}.key", expr["key"], names.qualified_name(expr["key"]))
    return errors


def selector_matches(selector: dict, labels: dict) -> bool:
    """`metav1.LabelSelectorAsSelector(selector).Matches(labels)`."""
    if any(labels.get(k) != v for k, v in _d(selector.get("matchLabels")).items()):
        return False
    for expr in _l(selector.get("matchExpressions")):
        expr = _d(expr)
        key, op, values = expr.get("key"), expr.get("operator"), _l(expr.get("values"))
        present = key in labels
        ok = {"In": present and labels.get(key) in values, "NotIn": not present or labels.get(key) not in values,
              "Exists": present, "DoesNotExist": not present}.get(op, False) if isinstance(op, str) else False
        if not ok:
            return False
    return True


def container_errors(containers: list, path: str, seen: dict[str, str]) -> list[FieldError]:
    """Names (DNS label, unique across all containers of the pod), image, ports, resources."""
    errors: list[FieldError] = []
    for i, c in enumerate(containers):
        c, cpath = _d(c), f"{path}[{i}]"
        name = c.get("name")
        if not name:
            errors.append(required(f"{cpath}.name", ""))
        elif isinstance(name, str):
            errors += each(f"{cpath}.name", name, names.dns1123_label(name))
            if name in seen:
                errors.append(duplicate(f"{cpath}.name", name))
            seen.setdefault(name, cpath)
        if not c.get("image"):
            errors.append(required(f"{cpath}.image", ""))
        port_names: set[str] = set()
        for j, port in enumerate(_l(c.get("ports"))):
            port, ppath = _d(port), f"{cpath}.ports[{j}]"
            pname = port.get("name")
            if isinstance(pname, str) and pname:
                errors += each(f"{ppath}.name", pname, names.port_name(pname))
                if pname in port_names:
                    errors.append(duplicate(f"{ppath}.name", pname))
                port_names.add(pname)
            number = _int(port.get("containerPort"))
            if number is not None and not 1 <= number <= 65535:
                errors.append(invalid(f"{ppath}.containerPort", number, "must be between 1 and 65535, inclusive"))
            protocol = port.get("protocol")
            if isinstance(protocol, str) and protocol not in PROTOCOLS:
                errors.append(not_supported(f"{ppath}.protocol", protocol, PROTOCOLS))
        errors += resource_errors(c.get("resources"), f"{cpath}.resources")
    return errors


def pod_spec_errors(spec: Any, path: str, *, is_pod: bool) -> list[FieldError]:
    """`ValidatePodSpec` (the parts that matter to gpufleet's users), after `SetDefaults_Pod` for Pods."""
    spec = _d(spec)
    if is_pod:
        spec = with_defaulted_requests(spec)
    errors: list[FieldError] = []
    containers = _l(spec.get("containers"))
    if not containers:
        errors.append(required(f"{path}.containers", ""))
    seen: dict[str, str] = {}
    errors += container_errors(containers, f"{path}.containers", seen)
    errors += container_errors(_l(spec.get("initContainers")), f"{path}.initContainers", seen)
    policy = spec.get("restartPolicy")
    if isinstance(policy, str) and policy not in RESTART_POLICIES:
        errors.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    return errors


def _nonnegative(spec: dict, names_: tuple[str, ...], path: str) -> list[FieldError]:
    return [invalid(f"{path}.{n}", spec[n], "must be greater than or equal to 0")
            for n in names_ if _int(spec.get(n)) is not None and spec[n] < 0]


def controller_errors(kind: str, spec: Any, path: str = "spec") -> list[FieldError]:
    """Deployment, ReplicaSet, StatefulSet, DaemonSet: selector required and matching the template's labels."""
    spec = _d(spec)
    errors = _nonnegative(spec, ("replicas", "minReadySeconds", "revisionHistoryLimit"), path)
    selector = spec.get("selector")
    template = _d(spec.get("template"))
    tmeta = _d(template.get("metadata"))
    if selector is None:
        errors.append(required(f"{path}.selector", ""))
    elif isinstance(selector, dict):
        errors += selector_errors(selector, f"{path}.selector")
        if not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
            detail = "empty selector is not valid for statefulset." if kind == "StatefulSet" else \
                f"empty selector is invalid for {kind.lower()}"
            errors.append(invalid(f"{path}.selector", selector, detail))
    if selector is None or (isinstance(selector, dict) and not selector_matches(selector, _d(tmeta.get("labels")))):
        errors.append(invalid(f"{path}.template.metadata.labels", tmeta.get("labels"),
                              "`selector` does not match template `labels`"))
    errors += meta_errors(kind, tmeta, f"{path}.template.metadata", is_template=True)
    tspec = _d(template.get("spec"))
    errors += pod_spec_errors(tspec, f"{path}.template.spec", is_pod=False)
    policy = tspec.get("restartPolicy")
    if isinstance(policy, str) and policy != "Always":
        errors.append(not_supported(f"{path}.template.spec.restartPolicy", policy, ["Always"]))
    return errors


def job_errors(spec: Any, path: str = "spec") -> list[FieldError]:
    spec = _d(spec)
    errors = _nonnegative(spec, ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"), path)
    template = _d(spec.get("template"))
    tmeta = _d(template.get("metadata"))
    errors += meta_errors("Job", tmeta, f"{path}.template.metadata", is_template=True)
    tspec = _d(template.get("spec"))
    errors += pod_spec_errors(tspec, f"{path}.template.spec", is_pod=False)
    if tspec.get("restartPolicy") not in ("OnFailure", "Never"):
        errors.append(required(f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    return errors


def cronjob_errors(spec: Any) -> list[FieldError]:
    spec = _d(spec)
    errors = [] if spec.get("schedule") else [required("spec.schedule", "")]
    return errors + job_errors(_d(spec.get("jobTemplate")).get("spec"), "spec.jobTemplate.spec")


def service_errors(spec: Any) -> list[FieldError]:
    """`ValidateService`: type, ports (required unless headless or ExternalName; names and port+protocol unique)."""
    spec = _d(spec)
    errors: list[FieldError] = []
    kind = spec.get("type", "ClusterIP")
    if isinstance(kind, str) and kind not in SERVICE_TYPES:
        errors.append(not_supported("spec.type", kind, SERVICE_TYPES))
    ports = _l(spec.get("ports"))
    if not ports and spec.get("clusterIP") != "None" and kind != "ExternalName":
        errors.append(required("spec.ports", ""))
    port_names: set[str] = set()
    keys: set[tuple] = set()
    for i, port in enumerate(ports):
        port, ppath = _d(port), f"spec.ports[{i}]"
        name = port.get("name")
        if len(ports) > 1 and not name:
            errors.append(required(f"{ppath}.name", ""))
        elif isinstance(name, str) and name:
            errors += each(f"{ppath}.name", name, names.dns1123_label(name))
            if name in port_names:
                errors.append(duplicate(f"{ppath}.name", name))
            port_names.add(name)
        number = _int(port.get("port"))
        if number is not None and not 1 <= number <= 65535:
            errors.append(invalid(f"{ppath}.port", number, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol", "TCP")
        if isinstance(protocol, str) and protocol not in PROTOCOLS:
            errors.append(not_supported(f"{ppath}.protocol", protocol, PROTOCOLS))
        target = port.get("targetPort")
        if (target_number := _int(target)) is not None and not 1 <= target_number <= 65535:
            errors.append(invalid(f"{ppath}.targetPort", target, "must be between 1 and 65535, inclusive"))
        elif isinstance(target, str) and target and not target.isdigit():
            errors += each(f"{ppath}.targetPort", target, names.port_name(target))
        if number is not None and isinstance(protocol, str):
            key = (number, protocol)
            if key in keys:
                errors.append(duplicate(ppath, {"port": number, "protocol": protocol}))
            keys.add(key)
    return errors


def data_errors(doc: dict, sections: tuple[str, ...]) -> list[FieldError]:
    """ConfigMap and Secret keys: config-key format, and no key in two sections."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for section in sections:
        for key in _d(doc.get(section)):
            if not isinstance(key, str):
                continue
            errors += each(f"{section}[{key}]", key, names.config_key(key))
            if key in seen and section == "binaryData":
                errors.append(invalid(f"{section}[{key}]", key, "duplicate of key present in data"))
            seen.add(key)
    return errors


def object_errors(doc: dict) -> list[FieldError]:
    """Every API-server rule `doc` breaks (empty when none, or for kinds without rules here)."""
    kind = doc.get("kind")
    if not isinstance(kind, str):
        return []
    errors = meta_errors(kind, doc.get("metadata"))
    spec = doc.get("spec")
    if kind == "Pod":
        errors += pod_spec_errors(spec, "spec", is_pod=True)
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        errors += controller_errors(kind, spec)
    elif kind == "Job":
        errors += job_errors(spec)
    elif kind == "CronJob":
        errors += cronjob_errors(spec)
    elif kind == "Service":
        errors += service_errors(spec)
    elif kind == "ConfigMap":
        errors += data_errors(doc, ("data", "binaryData"))
    elif kind == "Secret":
        errors += data_errors(doc, ("data", "stringData"))
    elif kind == "PodTemplate":
        template = _d(doc.get("template"))
        errors += meta_errors(kind, template.get("metadata"), "template.metadata", is_template=True)
        errors += pod_spec_errors(template.get("spec"), "template.spec", is_pod=False)
    return errors
