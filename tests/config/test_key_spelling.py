"""One spelling of every key: what the loader accepts is exactly what `gpufleet schema` publishes."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel, ValidationError

from gpufleet.config.loading import SPELLING, parse_sections
from gpufleet.config.schema import stack_file_schema
from gpufleet.config.stack import StackConfig
from gpufleet.errors import ConfigError


def _models(annotation, found: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.__name__ not in found:
            found[annotation.__name__] = annotation
            for f in annotation.model_fields.values():
                _models(f.annotation, found)
        return found
    for arg in typing.get_args(annotation):
        _models(arg, found)
    return found


MODELS = _models(StackConfig, {})
SCHEMA = stack_file_schema(config_only=True)


def accepted_keys(model: type[BaseModel]) -> set[str]:
    """Keys the loader takes as fields of `model`: every spelling a field could have, tried one by one."""
    candidates = {n for n in model.model_fields} | {f.alias for f in model.model_fields.values() if f.alias}
    accepted = set()
    for key in candidates:
        try:
            model.model_validate({key: object()}, **SPELLING)
        except ValidationError as e:
            if not any(err["loc"][:1] == (key,) and err["type"] == "extra_forbidden" for err in e.errors()):
                accepted.add(key)
    return accepted


def test_the_walk_reaches_the_nested_models():
    assert {"StackConfig", "NodePool", "InferenceService", "MigDeviceGroup", "SecretEnv", "GpuPool"} <= set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_loader_accepts_exactly_the_keys_the_schema_lists(name):
    model = MODELS[name]
    schema = SCHEMA if name == "StackConfig" else SCHEMA["$defs"][name]
    assert accepted_keys(model) == set(schema["properties"])


def test_python_spelling_is_refused_with_the_yaml_one_suggested():
    with pytest.raises(ConfigError) as exc:
        parse_sections({"devicePlugin": {"mig_strategy": "single"}, "node_pools": []}, "Pulumi.t.yaml")
    lines = str(exc.value).splitlines()
    assert ("Pulumi.t.yaml: gpufleet:devicePlugin.mig_strategy: unknown key 'mig_strategy' (did you mean "
            "'migStrategy'?); allowed: migStrategy, sharingProfiles, defaultSharing, chartVersion, namespace, "
            "gfd, nfd") in lines
    assert any(line.startswith("Pulumi.t.yaml: gpufleet:node_pools: unknown key") for line in lines)
