"""Model memory: what a model server takes on each GPU, and whether the engine starts (docs/model-memory.md).

The one home of the arithmetic, module by module:
- `hf_config`: the facts of a config.json the stack file may override (layers, heads, context);
- `checkpoint` (+ `quantization`): the weights each GPU loads, from config.json's modules and
  quantization_config, or the safetensors index's exact size; tensor, pipeline, data and expert parallelism;
- `attention`: the KV cache per token and layer (full, sliding-window, multi-head latent attention);
- `vllm`: the engine's start-up arithmetic (vLLM V1 >= 0.8): its budget, activation, runtime and CUDA
  graphs, the KV capacity it logs, and its refusals in its own words;
- `flags`: the `vllm serve` flags it depends on, read from a container's command line;
- `served`: one server's facts except the device (what the manifest annotation carries);
- `verdict`: the two verdicts on a device (refused: an error; fewer full-length requests than maxNumSeqs: a
  warning) with fixes that the engine accepts.

Where the device comes from (a node pool, a node's GFD labels, a DRA device) is gpufleet.capacity.model_fit's.
Everything here is pure: no I/O.
"""

from gpufleet.nvidia.model_memory.served import ServedModel
from gpufleet.nvidia.model_memory.verdict import Assessment, Device, assess
from gpufleet.nvidia.model_memory.vllm import GIB, MIB, Startup, VllmArgs, gib

__all__ = ["GIB", "MIB", "Assessment", "Device", "ServedModel", "Startup", "VllmArgs", "assess", "gib"]
