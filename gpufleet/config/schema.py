"""JSON Schema of the stack config, shaped like a Pulumi.<stack>.yaml file (`config:` with `gpufleet:` keys)."""

from __future__ import annotations

from typing import Any

from gpufleet.config.stack import SECTION_KEYS, StackConfig


def stack_file_schema(config_only: bool = False) -> dict[str, Any]:
    """The schema of the `gpufleet:` sections, or of a whole stack file with them under `config:`."""
    schema = StackConfig.model_json_schema(by_alias=True, mode="validation")
    defs = schema.pop("$defs", {})
    props = schema["properties"]
    if config_only:
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "$defs": defs}
    config_props: dict[str, Any] = {f"gpufleet:{k}": v for k, v in props.items()}
    secret = {"type": "object", "properties": {"secure": {"type": "string"}}, "required": ["secure"],
              "additionalProperties": False}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Pulumi.<stack>.yaml for gpufleet",
        "type": "object",
        "properties": {
            "encryptionsalt": {"type": "string"},
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "config": {
                "type": "object",
                "properties": config_props,
                # Secrets (`pulumi config set --secret`) and other providers' keys (kubernetes:context).
                "patternProperties": {f"^gpufleet:(?!({'|'.join(SECTION_KEYS)})$)": secret, "^(?!gpufleet:)[^:]+:": {}},
                "additionalProperties": False,
            },
        },
        "$defs": defs,
    }
