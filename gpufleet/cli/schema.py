"""`gpufleet schema`: the stack config's JSON Schema, for editors that complete and check stack files."""

from __future__ import annotations

import json

import typer


def command(
    section_only: bool = typer.Option(False, "--config-only", help="Schema of the `gpufleet:` sections only."),
) -> None:
    """Print the JSON Schema of Pulumi.<stack>.yaml's `gpufleet:` config."""
    from gpufleet.config.schema import stack_file_schema

    print(json.dumps(stack_file_schema(config_only=section_only), indent=2, sort_keys=True))
