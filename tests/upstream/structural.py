"""Validate a custom resource against its CRD's structural openAPIV3Schema, strictly.

The API server rejects wrong types and enum violations and silently prunes fields the schema does not
declare. A pruned field is a setting that never takes effect, so here an undeclared field is an error too:
every object schema without `additionalProperties` (and without `x-kubernetes-preserve-unknown-fields`)
gets `additionalProperties: false`. `x-kubernetes-int-or-string` accepts an integer or a string,
`nullable` accepts null, and the root `metadata` is left to the API server's ObjectMeta validation.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    s = copy.deepcopy(schema)
    if s.get("x-kubernetes-int-or-string"):
        s.pop("type", None)
        s["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if s.get("nullable") and isinstance(s.get("type"), str):
        s["type"] = [s["type"], "null"]
    if isinstance(s.get("properties"), dict):
        s["properties"] = {k: strict(v) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        s["items"] = strict(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = strict(s["additionalProperties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            s[key] = [strict(x) for x in s[key]]
    is_object = s.get("type") == "object" or "properties" in s
    if is_object and "additionalProperties" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
        s["additionalProperties"] = False
    return s


def root_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    s = strict(openapi)
    s.setdefault("properties", {})["metadata"] = {"type": "object"}
    return s


def problems(openapi: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    """One line per violation: the field path and what is wrong with it."""
    validator = jsonschema.Draft7Validator(root_schema(openapi))
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(obj))
