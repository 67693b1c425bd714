"""The typed `config` input of GpuStack: the `gpufleet:` stack config sections as Pulumi schema types.

Built from the pydantic models' JSON Schema (`StackConfig.model_json_schema(by_alias=True)`, what
`gpufleet schema` prints), so the property names are the stack file's spelling and the descriptions are the
models' field descriptions. The mapping:

- an object model (a `$defs` entry) -> a `types` entry `gpufleet:index:<Name>`, its fields as properties;
- `type: array` -> an array of the item type; a map (`additionalProperties` / `patternProperties`) -> an
  object with `additionalProperties`; an object with neither -> a map of `pulumi.json#/Any`;
- enums, consts and literals -> their scalar type (string), the allowed values named in the description;
- `X | None` -> X; a union of object models (the workload kinds) -> one type holding every variant's
  properties (`kind` tells them apart); any other union -> `pulumi.json#/Any`, the most general.

Every property is plain: the config decides which resources GpuStack builds, so it must be known when the
component is constructed. Validation stays gpufleet's: Construct hands the object to the same loader as
`configYaml` (gpufleet.config.loading.parse_sections), so the messages are the ones the CLI gives.
"""

import json
from typing import Any

from gpufleet.config.mig import MigDeviceGroup
from gpufleet.config.stack import StackConfig

PACKAGE = "gpufleet"
ROOT_TYPE = "StackConfig"
ANY = {"$ref": "pulumi.json#/Any"}


#: mig-parted's hyphenated keys (`mig-enabled`, ...), which no SDK can name a property: camelCase in the
#: schema (`migEnabled`), put back by `stack_spelling` before the config is loaded.
HYPHENATED = {"".join(w[:1].upper() + w[1:] if i else w for i, w in enumerate(alias.split("-"))): alias
              for alias in (f.alias for f in MigDeviceGroup.model_fields.values()) if alias and "-" in alias}


def stack_spelling(sections: dict) -> dict:
    """The typed config's sections as the stack file spells them: a MIG device group's camelCase keys
    (`migEnabled`) back to mig-parted's (`mig-enabled`); either spelling is accepted."""
    geometries = sections.get("mig", {}).get("geometries") if isinstance(sections.get("mig"), dict) else None
    if isinstance(geometries, dict):
        for groups in geometries.values():
            for i, group in enumerate(groups if isinstance(groups, list) else []):
                if isinstance(group, dict):
                    groups[i] = {HYPHENATED.get(k, k): v for k, v in group.items()}
    return sections


def _text(description: str | None) -> str | None:
    return " ".join(description.split()) if description else None


def _token(name: str) -> str:
    return f"{PACKAGE}:index:{name}"


def _ref(name: str) -> dict:
    return {"$ref": f"#/types/{_token(name)}"}


class _Builder:
    def __init__(self, json_schema: dict):
        self.defs: dict[str, dict] = json_schema.get("$defs", {})
        self.types: dict[str, dict] = {}

    # --- types ------------------------------------------------------------------------------------------
    def object_type(self, name: str, node: dict) -> str:
        """The `types` entry for an object model (added once); returns its name."""
        if name not in self.types:
            self.types[name] = {}  # placeholder first: recursive models end here
            props, required = self.properties(node)
            entry: dict[str, Any] = {"type": "object", "properties": props}
            if _text(node.get("description")):
                entry["description"] = _text(node.get("description"))
            if required:
                entry["required"] = required
            self.types[name] = entry
        return name

    def properties(self, node: dict) -> tuple[dict, list[str]]:
        names = {original: camel for camel, original in HYPHENATED.items()}
        props = {}
        for key, value in node.get("properties", {}).items():
            props[names.get(key, key)] = prop = self.property(key, value)
            if key in names:
                prop["description"] = f"`{key}` in the stack file. {prop.get('description', '')}".strip()
        required = [names.get(key, key) for key in node.get("required", [])
                    if names.get(key, key) in props]
        return props, required

    def union_type(self, name: str, refs: list[str]) -> str:
        """One type holding the properties of every object model in a union (the workload kinds)."""
        if name not in self.types:
            self.types[name] = {}
            props: dict[str, dict] = {}
            required: list[str] | None = None
            consts: dict[str, list[str]] = {}
            for ref in refs:
                node = self.defs[ref]
                for key, value in node.get("properties", {}).items():
                    if "const" in value:
                        consts.setdefault(key, []).append(f"`{value['const']}` ({ref})")
                variant, req = self.properties(node)
                for key, prop in variant.items():
                    if key not in props:
                        props[key] = prop
                    elif _shape(props[key]) != _shape(prop):  # the same key typed differently by two kinds
                        props[key] = {**ANY, **({"description": props[key]["description"]}
                                                if "description" in props[key] else {}), "plain": True}
                required = req if required is None else [k for k in required if k in req]
            for key, values in consts.items():
                if len(values) > 1:
                    props[key]["description"] = "Which kind of workload: " + ", ".join(values) + "."
            names = ", ".join(f"`{r}`" for r in refs)
            entry = {"type": "object", "properties": props,
                     "description": f"One of {names}, told apart by `kind`; each kind's properties as "
                                    "described."}
            if required:
                entry["required"] = required
            self.types[name] = entry
        return name

    # --- properties ---------------------------------------------------------------------------------------
    def property(self, key: str, node: dict) -> dict:
        prop = self.type_of(key, node)
        description = _text(node.get("description"))
        target = node.get("items", node) if node.get("type") == "array" else node
        if description is None and "$ref" in target:
            description = _text(self.defs.get(target["$ref"].split("/")[-1], {}).get("description"))
        if description is None and "$ref" in prop.get("items", {}):
            description = self.types[prop["items"]["$ref"].split(":")[-1]].get("description")
        values = node.get("enum") or _enum_in(node)
        if values and description is not None:
            description += " One of: " + ", ".join(f"`{v}`" for v in values) + "."
        elif values:
            description = "One of: " + ", ".join(f"`{v}`" for v in values) + "."
        if description:
            prop["description"] = description
        return prop

    def type_of(self, key: str, node: dict) -> dict:
        """The Pulumi type of a JSON-Schema node (no description); every level plain."""
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            target = self.defs[name]
            if target.get("type") == "object" and "properties" in target:
                return {**_ref(self.object_type(name, target)), "plain": True}
            return self.type_of(key, target)
        for union in ("anyOf", "oneOf"):
            if union in node:
                variants = [v for v in node[union] if v.get("type") != "null"]
                if len(variants) == 1:
                    return self.type_of(key, variants[0])
                refs = [v["$ref"].split("/")[-1] for v in variants if "$ref" in v]
                if len(refs) == len(variants) and all("properties" in self.defs[r] for r in refs):
                    return {**_ref(self.union_type(_pascal(key), refs)), "plain": True}
                shapes = {_shape(self.type_of(key, v)) for v in variants}
                if len(shapes) == 1:
                    return self.type_of(key, variants[0])
                return {**ANY, "plain": True}
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.type_of(key, node["allOf"][0])
        typ = node.get("type")
        if typ is None and "const" in node:
            typ = _scalar(node["const"])
        if typ is None and node.get("enum"):
            typ = _scalar(node["enum"][0])
        if isinstance(typ, list):  # ["string", "null"], ...
            rest = [t for t in typ if t != "null"]
            typ = rest[0] if len(rest) == 1 else None
        if typ in ("string", "integer", "number", "boolean"):
            return {"type": typ, "plain": True}
        if typ == "array":
            items = node.get("items")
            return {"type": "array", "items": self.type_of(key, items) if items else {**ANY, "plain": True},
                    "plain": True}
        if typ == "object":
            if node.get("properties"):
                return {**_ref(self.object_type(_pascal(node.get("title") or key), node)), "plain": True}
            values = node.get("additionalProperties")
            patterns = list(node.get("patternProperties", {}).values())
            if isinstance(values, dict) and values:
                value_type = self.type_of(key, values)
            elif len(patterns) == 1:
                value_type = self.type_of(key, patterns[0])
            else:
                value_type = {**ANY, "plain": True}
            return {"type": "object", "additionalProperties": value_type, "plain": True}
        return {**ANY, "plain": True}


def _enum_in(node: dict) -> list | None:
    for union in ("anyOf", "oneOf"):
        for variant in node.get(union, []):
            if variant.get("enum"):
                return variant["enum"]
    return None


def _scalar(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number"}.get(type(value), "string")


def _pascal(key: str) -> str:
    """`workloads` -> `Workload`, `nodeSelector` -> `NodeSelector`: a type name from a property name."""
    name = "".join(part[:1].upper() + part[1:] for part in key.replace("-", "_").split("_"))
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _shape(prop: dict) -> str:
    """A property's type, for telling whether two are the same (descriptions aside)."""
    return json.dumps({k: v for k, v in prop.items() if k != "description"}, sort_keys=True)


def config_types(json_schema: dict | None = None) -> tuple[dict, dict[str, dict]]:
    """(the `config` input property, the `types` it references): the StackConfig model as schema types."""
    json_schema = json_schema or StackConfig.model_json_schema(by_alias=True)
    builder = _Builder(json_schema)
    root = dict(json_schema)
    root.setdefault("description", StackConfig.__doc__)
    builder.object_type(ROOT_TYPE, root)
    prop = {**_ref(ROOT_TYPE), "plain": True,
            "description": ("The stack config as a typed object: the `gpufleet:` section of a stack file, "
                            "one property per section (`mode`, `cluster`, `operator`, `devicePlugin`, "
                            "`nodePools`, `workloads`, ...), spelled and validated as in the stack file. "
                            "Give exactly one of `stackFile`, `configYaml` and `config`.")}
    return prop, {_token(name): entry for name, entry in builder.types.items()}


def with_typed_config(schema: dict, resource: str) -> dict:
    """The package schema with `resource`'s `config` input typed as the stack config (types added)."""
    prop, types = config_types()
    res = schema["resources"][resource]
    res["inputProperties"]["config"] = prop
    clash = set(types) & (set(schema.get("types", {})) | set(schema["resources"]))
    if clash:
        raise ValueError(f"config types clash with the package's own: {sorted(clash)}")
    schema.setdefault("types", {}).update(types)
    return schema
