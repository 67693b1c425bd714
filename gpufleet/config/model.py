"""`workloads[].model`: the model an inference server serves, for the GPU memory the engine will take
(docs/model-memory.md).

Either `config:`, the path (relative to the project directory) of the model's Hugging Face config.json or of
the checkpoint folder holding it, kept in the repository and read offline (never downloaded); the
`model.safetensors.index.json` beside it, or the one `safetensorsIndex:` names, gives the exact stored bytes.
Or the facts by hand (`parameters`, `layers`, `kvHeads`, `headDim` or `hiddenSize` + `attentionHeads`).
Facts written beside `config:` win over the file's.

The serving fields are the engine's flags (`engine: vllm`, the arithmetic of vLLM's V1 engine >= 0.8). For a
vLLM image the container's flags are read too: a field left out takes the flag's value, and a field that
disagrees with its flag is an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from gpufleet.config._base import Model
from gpufleet.nvidia.model_memory.hf_config import HfConfigError, hf_config_facts
from gpufleet.nvidia.model_memory.quantization import METHODS

Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp32"]
KvDtype = Literal["auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp32"]
Quantization = Literal[METHODS]  # type: ignore[valid-type]  # the one list of formats gpufleet sizes
INDEX_NAME = "model.safetensors.index.json"
#: config.json fact -> the field that overrides it.
_FACT_FIELDS = {"layers": "layers", "kv_heads": "kv_heads", "head_dim": "head_dim", "hidden_size": "hidden_size",
                "attention_heads": "attention_heads", "architecture": "architecture", "dtype": "dtype",
                "max_position_embeddings": "max_position_embeddings", "moe": "moe"}


def _read_json(path: str, project_dir: Path, what: str) -> tuple[Any, Path]:
    where = Path(path) if Path(path).is_absolute() else project_dir / path
    shown = f"'{path}'" + ("" if str(where) == path else f" ({where})")
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{what} {shown} does not exist; expected the path of a Hugging Face {what} kept in "
                         "the project (it is never downloaded)") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {shown} is a folder; expected a file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {shown} cannot be read: {e.__class__.__name__}") from None
    try:
        return json.loads(text), where
    except (json.JSONDecodeError, RecursionError) as e:
        where_ = f": {e.msg} at line {e.lineno}" if isinstance(e, json.JSONDecodeError) else ": nested too deep"
        raise ValueError(f"{what} {shown} is not JSON{where_}") from None


def read_model_files(config: str, index: str | None, project_dir: Path) -> tuple[dict, dict | None]:
    """(config.json, safetensors index or None) for `config:` (a file or a checkpoint folder); ValueError
    naming the path and the problem."""
    where = Path(config) if Path(config).is_absolute() else project_dir / config
    path = str(Path(config) / "config.json") if where.is_dir() else config
    doc, found = _read_json(path, project_dir, "config.json")
    if not isinstance(doc, dict):
        raise ValueError(f"config.json '{path}' is not a JSON object")
    try:
        hf_config_facts(doc)
    except HfConfigError as e:
        raise ValueError(f"config.json '{path}' {e}") from None
    index_doc = None
    if index is not None:
        index_doc, _ = _read_json(index, project_dir, "safetensors index")
    elif (found.parent / INDEX_NAME).is_file():
        index_doc, _ = _read_json(str(found.parent / INDEX_NAME), project_dir, "safetensors index")
    if index_doc is not None:
        size = (index_doc.get("metadata") or {}).get("total_size") if isinstance(index_doc, dict) else None
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"safetensors index of '{path}' has metadata.total_size={size!r}; expected the "
                             "checkpoint's size in bytes (a positive integer)")
    return doc, index_doc


def _project_dir(info: ValidationInfo) -> Path:
    return Path((info.context or {}).get("project_dir") or ".")


class ModelSpec(Model):
    """The served model and how the engine serves it."""

    name: str | None = None
    """A label for messages, e.g. meta-llama/Llama-3.1-8B-Instruct."""
    safetensors_index: str | None = None
    """Path of model.safetensors.index.json (exact stored bytes); default: the one beside config.json."""
    config: str | None = None
    """Path of the model's Hugging Face config.json, or of the checkpoint folder holding it (read offline)."""
    engine: Literal["vllm"] = "vllm"
    """The serving engine whose arithmetic is followed: vLLM's V1 engine (>= 0.8)."""
    engine_version: str | None = Field(default=None, pattern=r"^v?\d+\.\d+(\.\d+)?$")
    """e.g. 0.11.0; default: the image tag's version (CUDA graphs count in the budget from 0.21)."""
    parameters: int | None = Field(default=None, ge=1)
    """Total parameters, every expert (e.g. 8030261248); by hand only, counted from config.json otherwise."""
    layers: int | None = Field(default=None, ge=1)
    """num_hidden_layers."""
    kv_heads: int | None = Field(default=None, ge=1)
    """num_key_value_heads (GQA); the attention heads for MHA models."""
    head_dim: int | None = Field(default=None, ge=1)
    """head_dim; default hiddenSize / attentionHeads."""
    hidden_size: int | None = Field(default=None, ge=1)
    attention_heads: int | None = Field(default=None, ge=1)
    """num_attention_heads."""
    intermediate_size: int | None = Field(default=None, ge=1)
    """MLP width (by hand; for the profiled activation)."""
    vocab_size: int | None = Field(default=None, ge=1)
    """Vocabulary (by hand; for the sampler's share of the activation)."""
    architecture: str | None = None
    """architectures[0] of config.json, e.g. LlamaForCausalLM."""
    moe: bool = False
    """Mixture of experts (by hand: llm-d's larger activation constant when widths are not given)."""
    max_position_embeddings: int | None = Field(default=None, ge=1)
    """The model's longest context; maxModelLen may not exceed it."""
    dtype: Dtype | None = None
    """Weight dtype of facts by hand (bf16, fp16, fp8, int8, int4, fp32); default config.json's, else bf16."""
    quantization: Quantization | None = None
    """The checkpoint's format when config.json has no quantization_config (vLLM --quantization)."""
    kv_cache_dtype: KvDtype = "auto"
    """KV cache dtype (vLLM --kv-cache-dtype); auto is the compute dtype (16-bit for quantized weights)."""
    max_model_len: int | None = Field(default=None, ge=1)
    """Longest request (prompt + output) served (--max-model-len); default maxPositionEmbeddings."""
    max_num_seqs: int | None = Field(default=None, ge=1)
    """Requests served at once (--max-num-seqs). When set, a KV cache holding fewer full-length sequences is a
    warning; default the engine's (256, or 1024 on a GPU of 70 GiB or more), without that warning."""
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    """Tokens per scheduler step (--max-num-batched-tokens); sizes the profiled activation."""
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    """Fraction of the CUDA-visible total the engine reserves (--gpu-memory-utilization, default 0.9)."""
    kv_cache_memory_mib: int | None = Field(default=None, ge=1, alias="kvCacheMemoryMiB")
    """KV cache per GPU (--kv-cache-memory); replaces the utilization's budget."""
    tensor_parallel: int = Field(default=1, ge=1)
    """GPUs each layer is split over (--tensor-parallel-size)."""
    pipeline_parallel: int = Field(default=1, ge=1)
    """Stages the layers are split over (--pipeline-parallel-size)."""
    data_parallel: int = Field(default=1, ge=1)
    """Replicas in one server (--data-parallel-size); tensorParallel x pipelineParallel x dataParallel GPUs."""
    expert_parallel: bool = False
    """Experts spread over the ranks instead of split (--enable-expert-parallel)."""
    enforce_eager: bool = False
    """No CUDA graphs (--enforce-eager)."""
    activation_mib: int | None = Field(default=None, ge=0, alias="activationMiB")
    """Measured peak activation in MiB (vLLM's 'torch peak memory increase'); default computed."""

    @field_validator("config")
    @classmethod
    def _check_config(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            try:
                read_model_files(value, info.data.get("safetensors_index"), _project_dir(info))
            except ValueError as e:
                raise PydanticCustomError("config_json", str(e).replace("{", "{{").replace("}", "}}")) from None
        return value

    def model_post_init(self, context: Any) -> None:
        docs: tuple[dict | None, dict | None] = (None, None)
        if self.config is not None:
            project = Path((context or {}).get("project_dir") or ".") if isinstance(context, dict) else Path(".")
            try:
                docs = read_model_files(self.config, self.safetensors_index, project)
            except ValueError:
                pass  # reported by _check_config
        object.__setattr__(self, "_docs", docs)

    @property
    def hf_config(self) -> dict | None:
        return getattr(self, "_docs", (None, None))[0]

    @property
    def index(self) -> dict | None:
        return getattr(self, "_docs", (None, None))[1]

    def fact(self, name: str):
        """A fact written here, else config.json's."""
        value = getattr(self, name)
        if value is not None and (name != "moe" or value):
            return value
        doc = self.hf_config
        if doc is None:
            return value
        try:
            return hf_config_facts(doc).get(name, value)
        except HfConfigError:
            return value

    @property
    def label(self) -> str:
        return self.name or self.config or ""


from gpufleet.config.model_serving import (  # noqa: E402
    check_model,
    check_vllm_flags,
    memory_conflicts,
    model_issues,
    served_model,
)

__all__ = ["ModelSpec", "check_model", "check_vllm_flags", "memory_conflicts", "model_issues",
           "read_model_files", "served_model"]
