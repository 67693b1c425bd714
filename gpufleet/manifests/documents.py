"""Type checks of the manifests `check` reads, so that a bad field is a clear error and not a crash.

`document_errors` type-checks, in the kinds `check` checks, the fields it reads. Every error line names
the file, the object (Kind/namespace/name, or the document number when it has no name) and the field.
"""

from __future__ import annotations

from typing import Any

from gpufleet.capacity.dra import DRA_KINDS, dra_errors, pod_claim_errors
from gpufleet.capacity.shape import INT32, Shape, pod_spec
from gpufleet.manifests.reading import Document
from gpufleet.manifests.workloads import CHECKED_KINDS, EXPECTED_MEMORY_ANNOTATION, TEMPLATES, expected_mib


def document_errors(doc: Document) -> list[str]:
    """Type errors in the fields `check` reads, for the kinds it checks (other kinds: none)."""
    obj = doc.obj
    kind = obj.get("kind")
    if kind in DRA_KINDS:
        return [f"{doc.file}: {doc.label}: {e}" for e in dra_errors(obj)]
    if kind == "PriorityClass":
        return [f"{doc.file}: {doc.label}: {e}" for e in priority_class_errors(obj)]
    if not isinstance(kind, str) or kind not in CHECKED_KINDS:
        return []
    shape = Shape()
    meta = shape.mapping(obj.get("metadata"), "metadata")
    shape.string(meta.get("name"), "metadata.name")
    shape.string(meta.get("namespace"), "metadata.namespace")
    _annotations(shape, meta.get("annotations"), "metadata.annotations")
    if kind == "Pod":
        pod_spec(shape, obj.get("spec"), "spec")
        if isinstance(obj.get("spec"), dict):
            shape.errors += pod_claim_errors(obj["spec"], "spec")
    else:
        where, counts = TEMPLATES[kind]
        spec, path = obj, ""
        for part in where.split("."):
            path = f"{path}.{part}" if path else part
            spec = shape.mapping(spec.get(part), path)
        for name in counts:
            shape.integer(spec.get(name), f"{where}.{name}", INT32)
        template = shape.mapping(spec.get("template"), f"{where}.template")
        tmeta = shape.mapping(template.get("metadata"), f"{where}.template.metadata")
        _annotations(shape, tmeta.get("annotations"), f"{where}.template.metadata.annotations")
        pod_spec(shape, template.get("spec"), f"{where}.template.spec")
        if isinstance(template.get("spec"), dict):
            shape.errors += pod_claim_errors(template["spec"], f"{where}.template.spec")
    return [f"{doc.file}: {doc.label}: {e}" for e in shape.errors]


#: The classes whose names start with `system-`, with their values (the API server's own).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def priority_class_errors(obj: dict) -> list[str]:
    """What the API server's PriorityClass validation refuses (kubernetes v1.34
    pkg/apis/scheduling/validation): a name that is no DNS subdomain, a `system-` name other than the system
    classes, a value beyond int32 or above 1000000000, a preemptionPolicy other than PreemptLowerPriority or
    Never. Preemption reads these values: a class the API server refuses is not one to check against."""
    from gpufleet.k8s_names import dns1123_subdomain_errors

    shape = Shape()
    meta = shape.mapping(obj.get("metadata"), "metadata")
    name = shape.string(meta.get("name"), "metadata.name")
    if name is None and "name" not in meta:
        shape.fail("metadata.name", "missing; expected the class's name")
    shape.integer(obj.get("value"), "value", INT32)
    shape.boolean(obj.get("globalDefault"), "globalDefault")
    value = obj.get("value", 0)
    if name is not None:
        shape.errors += [f"metadata.name: {name!r}: {e}" for e in dns1123_subdomain_errors(name)]
        if name.startswith("system-"):
            if SYSTEM_PRIORITY_CLASSES.get(name) != value or obj.get("globalDefault") is True:
                shape.fail("metadata.name", f"{name!r}: names with the 'system-' prefix are reserved for the "
                           "system classes (" + ", ".join(f"{k} = {v}" for k, v in SYSTEM_PRIORITY_CLASSES.items())
                           + ", not global defaults)")
        elif isinstance(value, int) and not isinstance(value, bool) and value > HIGHEST_USER_PRIORITY:
            shape.fail("value", f"{value}: the most a user-defined priority may be is {HIGHEST_USER_PRIORITY}")
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        shape.fail("preemptionPolicy", f"{policy!r}; expected one of " + ", ".join(PREEMPTION_POLICIES))
    return shape.errors


#: Kinds that live outside namespaces: one object per kind and name, whatever namespace a manifest writes.
CLUSTER_SCOPED = frozenset({
    "APIService", "ClusterQueue", "ClusterRole", "ClusterRoleBinding", "Cohort", "CSIDriver",
    "CustomResourceDefinition", "DeviceClass", "DeviceTaintRule", "IngressClass", "MutatingWebhookConfiguration",
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "ResourceFlavor", "ResourceSlice", "RuntimeClass",
    "StorageClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "VolumeAttachment"})


def object_key(obj: dict) -> tuple[str, str, str, str] | None:
    """The identity the API server gives an object: (API group, kind, namespace, name); None for an object
    without a kind and name (a `generateName` makes a new object each time)."""
    kind, meta, version = obj.get("kind"), obj.get("metadata"), obj.get("apiVersion")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        return None
    group = version.rpartition("/")[0] if isinstance(version, str) else ""
    namespace = "" if kind in CLUSTER_SCOPED else (meta.get("namespace") or "default")
    return group, kind, str(namespace), name


def set_errors(docs: list[Document]) -> list[str]:
    """What the manifests break together, as the API server would refuse it when they are applied: the same
    object (group, kind, namespace, name) given twice, which a check would count twice while the cluster holds
    one; a second PriorityClass with `globalDefault: true` (the priority admission plugin refuses it)."""
    errors: list[str] = []
    first: dict[tuple[str, str, str, str], Document] = {}
    default: tuple[Document, str] | None = None
    for doc in docs:
        key = object_key(doc.obj)
        if key is None:
            continue
        seen = first.setdefault(key, doc)
        if seen is not doc:
            errors.append(f"{doc.file}: {doc.label} ({doc.where}): also in {seen.file} ({seen.where}); a cluster "
                          "holds one object per kind, namespace and name (kubectl apply keeps the last one given, "
                          "kubectl create refuses the second): give each object once")
            continue
        if key[1] == "PriorityClass" and doc.obj.get("globalDefault") is True:
            if default is None:
                default = doc, key[3]
            else:
                was, name = default
                errors.append(f"{doc.file}: {doc.label}: globalDefault: PriorityClass {name} ({was.file}, "
                              f"{was.where}) is already marked as default; only one default can exist (the "
                              "priority admission plugin refuses this one)")
    return errors


def _annotations(shape: Shape, value: Any, path: str) -> None:
    before = len(shape.errors)
    shape.strings(value, path)
    if len(shape.errors) == before and isinstance(value, dict) and EXPECTED_MEMORY_ANNOTATION in value:
        if expected_mib(value[EXPECTED_MEMORY_ANNOTATION]) is None:
            shape.fail(f"{path}[{EXPECTED_MEMORY_ANNOTATION}]",
                       f"{value[EXPECTED_MEMORY_ANNOTATION]!r} is not a number of MiB (e.g. \"20000\")")
