"""pinned-versions: Helm charts and container images name an exact version."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from policies._common import RELEASE_TYPE, containers, describe, pod_spec

#: Helm/semver range syntax: not one version.
_RANGE = re.compile(r"[\^~*<>=|, ]|(^|\.)[xX](\.|$)")


def image_problem(image: Any) -> str | None:
    if not isinstance(image, str) or not image:
        return None
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if tag is None:
        return f"image '{image}' has no tag"
    if tag == "latest":
        return f"image '{image}' uses the moving tag latest"
    return None


def _value_tags(values: Any, path: str = "values") -> Iterator[tuple[str, Any]]:
    """(path, value) of every `tag` / `version` / `image` string in chart values (operand images are
    split into repository/image/version there, so only a literal latest is judged)."""
    if isinstance(values, Mapping):
        for k, v in values.items():
            if isinstance(v, (Mapping, Sequence)) and not isinstance(v, str):
                yield from _value_tags(v, f"{path}.{k}")
            elif k in ("tag", "version", "image") and isinstance(v, str):
                yield f"{path}.{k}", v
    elif isinstance(values, Sequence) and not isinstance(values, str):
        for i, v in enumerate(values):
            yield from _value_tags(v, f"{path}[{i}]")


def validate(args: ResourceValidationArgs, report_violation) -> None:
    props = args.props
    if args.resource_type == RELEASE_TYPE:
        chart = props.get("chart")
        version = props.get("version")
        version = "" if version is None else str(version)
        if not version or version == "latest" or _RANGE.search(version):
            report_violation(f"Helm release '{props.get('name') or args.name}' (chart {chart}) has version "
                             f"'{version or '(none)'}'; expected an exact chart version such as v26.7.0.")
        for path, value in _value_tags(props.get("values") or {}):
            if value == "latest" or value.endswith(":latest"):
                report_violation(f"Helm release '{props.get('name') or args.name}' sets {path} to '{value}'; "
                                 "expected a pinned version.")
        return
    spec = pod_spec(args.resource_type, props)
    if spec is None:
        return
    for c in containers(spec):
        problem = image_problem(c.get("image"))
        if problem:
            report_violation(f"{describe(args.resource_type, props, args.name)} container '{c.get('name')}': "
                             f"{problem}; expected a version tag (not latest) or an @sha256 digest.")


POLICY = ResourceValidationPolicy(
    name="pinned-versions",
    description="Helm charts and container images are pinned to an exact version, never latest or a range.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={}),
    validate=validate,
)
