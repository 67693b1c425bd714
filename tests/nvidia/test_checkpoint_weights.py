"""Checkpoint weight bytes from config.json, and the share vLLM holds per GPU (gpufleet.nvidia.model_memory.checkpoint).

Fixtures: tests/fixtures/checkpoints/<org>__<model>/config.json (+ index-metadata.json); README there cites them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.nvidia.model_memory.checkpoint import (
    CheckpointConfigError,
    read_checkpoint,
    weights_per_gpu,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
GIB = 1 << 30


def config(slug: str) -> dict:
    return json.loads((FIXTURES / slug / "config.json").read_text())


def index(slug: str) -> dict:
    return json.loads((FIXTURES / slug / "index-metadata.json").read_text())


# Parameter counts published for each model (model card / the Hub's safetensors parameter count).
PUBLISHED_PARAMETERS = {
    "meta-llama__Llama-3.1-8B-Instruct": 8_030_261_248,       # safetensors: 8.03B
    "meta-llama__Llama-3.1-405B-Instruct": 405_853_388_800,   # safetensors: 406B
    "Qwen__Qwen2.5-7B-Instruct": 7_615_616_512,               # model card: 7.61B
    "mistralai__Mixtral-8x7B-v0.1": 46_702_792_704,           # safetensors: 46.7B
    "Qwen__Qwen3-30B-A3B": 30_532_122_624,                    # model card: 30.5B
    "deepseek-ai__DeepSeek-V2-Lite": 15_700_000_000,          # model card: 15.7B total
    "deepseek-ai__DeepSeek-V3": 671_000_000_000,              # model card: 671B main model (+14B MTP)
    "openai__gpt-oss-20b": 20_914_757_184,                    # keras-hub preset of gpt_oss_20b_en: 20,914,757,184
    "openai__gpt-oss-120b": 116_830_000_000,                  # model card: 116.83B total
    "google__gemma-2-9b-it": 9_241_705_984,                   # safetensors: 9.24B
    "google__gemma-3-4b-it": 4_300_000_000,                   # model card: 4.3B (text, SigLIP tower, projector)
    "microsoft__Phi-3-mini-4k-instruct": 3_821_079_552,       # model card: 3.8B
    "Qwen__Qwen2.5-14B-Instruct": 14_700_000_000,             # model card: 14.7B
    "Qwen__Qwen2.5-32B-Instruct": 32_500_000_000,             # model card: 32.5B (the count gives 32.76B)
    "Qwen__Qwen2.5-72B-Instruct": 72_706_203_648,             # tensor count of the checkpoint in a public model report
    "Qwen__Qwen3-8B": 8_200_000_000,                          # model card: 8.2B
    "Qwen__Qwen3-14B": 14_768_307_200,                        # tensor count of the checkpoint in a public model report
    "Qwen__Qwen3-32B": 32_800_000_000,                        # model card: 32.8B
    "Qwen__Qwen3-235B-A22B-FP8": 235_000_000_000,             # model card: 235B total, 22B activated
    "deepseek-ai__DeepSeek-R1-Distill-Qwen-7B": 7_620_000_000,    # safetensors: 7.62B
    "deepseek-ai__DeepSeek-R1-Distill-Qwen-14B": 14_800_000_000,  # safetensors: 14.8B
    "deepseek-ai__DeepSeek-R1-Distill-Qwen-32B": 32_800_000_000,  # safetensors: 32.8B
    "deepseek-ai__DeepSeek-R1-Distill-Llama-8B": 8_030_000_000,   # safetensors: 8.03B
    "meta-llama__Llama-3.1-70B-Instruct": 70_553_706_496,     # safetensors: 70.6B (index total_size / 2)
    "meta-llama__Llama-3.3-70B-Instruct": 70_553_706_496,     # safetensors: 70.6B
    "meta-llama__Meta-Llama-3-8B-Instruct": 8_030_261_248,    # tensor count of the checkpoint in a public model report
    "meta-llama__Llama-3.2-1B-Instruct": 1_235_814_400,       # safetensors: 1.24B
    "meta-llama__Llama-3.2-3B-Instruct": 3_212_749_824,       # tensor count of the checkpoint in a public model report
    "mistralai__Mistral-7B-Instruct-v0.3": 7_248_023_552,     # safetensors: 7.25B (index total_size / 2)
    "microsoft__phi-4": 14_700_000_000,                       # safetensors: 14.7B (the card's "14B" is nominal)
}


@pytest.mark.parametrize("slug", sorted(PUBLISHED_PARAMETERS))
def test_parameter_count_matches_the_published_count_within_one_percent(slug):
    counted = read_checkpoint(config(slug)).parameters
    assert counted == pytest.approx(PUBLISHED_PARAMETERS[slug], rel=0.01)


INDEXED = sorted(p.parent.name for p in FIXTURES.glob("*/index-metadata.json"))


@pytest.mark.parametrize("slug", INDEXED)
def test_stored_bytes_from_config_alone_match_the_index_total_size_within_two_percent(slug):
    ckpt = read_checkpoint(config(slug))
    assert ckpt.source == "config.json"
    assert ckpt.total_bytes + ckpt.not_loaded == pytest.approx(index(slug)["metadata"]["total_size"], rel=0.02)


@pytest.mark.parametrize("slug", INDEXED)
def test_the_index_total_size_is_the_stored_total_when_given(slug):
    ckpt = read_checkpoint(config(slug), index(slug))
    assert ckpt.source == "safetensors index total_size"
    assert abs(ckpt.total_bytes + ckpt.not_loaded - index(slug)["metadata"]["total_size"]) <= 8


def test_index_total_rescales_every_group_proportionally():
    cfg = config("meta-llama__Llama-3.1-8B-Instruct")
    plain = read_checkpoint(cfg)
    doubled = read_checkpoint(cfg, {"metadata": {"total_size": 2 * plain.total_bytes}})
    assert doubled.groups.attention == 2 * plain.groups.attention
    assert doubled.groups.embedding == 2 * plain.groups.embedding


def test_gpt_oss_20b_and_llama_8b_index_totals_are_matched_exactly_by_the_tensor_count():
    # The rules reproduce these two indexes byte for byte (MXFP4 blocks + scales + bf16 rest; plain bf16).
    assert read_checkpoint(config("openai__gpt-oss-20b")).total_bytes == 13_761_264_768
    assert read_checkpoint(config("meta-llama__Llama-3.1-8B-Instruct")).total_bytes == 16_060_522_496


def test_deepseek_v3_fp8_checkpoint_bytes_match_the_repository_weight_files_and_skip_mtp():
    ckpt = read_checkpoint(config("deepseek-ai__DeepSeek-V3"))
    assert ckpt.quantization == "fp8"
    # 688,586,727,753 bytes of safetensors files in the DeepSeek-V3(.1) repository (headers included).
    assert ckpt.total_bytes + ckpt.not_loaded == pytest.approx(688_586_727_753, rel=0.02)
    # the MTP layer (~14B parameters, fp8) is stored but vLLM's main model does not load it
    assert 12e9 < ckpt.not_loaded < 17e9
    assert weights_per_gpu(ckpt, 8) < (ckpt.total_bytes / 8) * 1.05


def test_qwen3_moe_fp8_block_checkpoint_stores_about_one_byte_per_parameter():
    # Qwen3-235B-A22B-FP8: e4m3 weights with [128, 128] block scales; embeddings, lm_head, norms and the
    # routers (modules_to_not_convert) stay bf16, so the stored bytes sit just above one per parameter.
    ckpt = read_checkpoint(config("Qwen__Qwen3-235B-A22B-FP8"))
    assert ckpt.quantization == "fp8"
    assert ckpt.experts == 128 and all(ckpt.moe_layers)
    assert ckpt.groups.embedding == ckpt.groups.lm_head == 151936 * 4096 * 2
    assert 1.0 < ckpt.total_bytes / ckpt.parameters < 1.02


def test_tied_llama_3_2_has_no_lm_head_and_an_untied_70b_has_one():
    small = read_checkpoint(config("meta-llama__Llama-3.2-1B-Instruct"))
    big = read_checkpoint(config("meta-llama__Llama-3.3-70B-Instruct"))
    assert small.tied and small.groups.lm_head == 0
    assert not big.tied and big.groups.lm_head == 128256 * 8192 * 2


# vLLM "Model loading took X GiB" for gpt-oss (tests/fixtures/vllm-logs/records.json, Marlin MXFP4 backend).
@pytest.mark.parametrize("slug, logged_gib", [("openai__gpt-oss-20b", 13.72), ("openai__gpt-oss-120b", 65.9651)])
def test_gpt_oss_loads_more_than_its_checkpoint_because_marlin_pads_the_experts(slug, logged_gib):
    ckpt = read_checkpoint(config(slug))
    on_gpu = weights_per_gpu(ckpt, mxfp4_backend="marlin")
    assert on_gpu > ckpt.total_bytes
    assert on_gpu / GIB == pytest.approx(logged_gib, rel=0.01)


def test_gpt_oss_keeps_attention_router_and_embeddings_in_bf16():
    ckpt = read_checkpoint(config("openai__gpt-oss-20b"))
    assert ckpt.quantization == "mxfp4"
    assert ckpt.groups.embedding == 201088 * 2880 * 2
    assert ckpt.groups.lm_head == 201088 * 2880 * 2
    # experts: 4.25 bits per weight plus bf16 biases
    expert_weights = 24 * 32 * 3 * 2880 * 2880
    assert ckpt.groups.experts == pytest.approx(expert_weights * 4.25 / 8, rel=0.01)


LLAMA_8B_LINEAR = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096),  # q, k, v, o
                   (14336, 4096), (14336, 4096), (4096, 14336)]              # gate, up, down
LLAMA_8B_UNQUANTIZED = 2 * (2 * 128256 * 4096 + 32 * 2 * 4096 + 4096)      # embed, lm_head, norms in bf16


def test_fp8_per_tensor_checkpoint_stores_one_byte_per_linear_weight_and_keeps_lm_head():
    ckpt = read_checkpoint(config("neuralmagic__Meta-Llama-3.1-8B-Instruct-FP8"))
    assert ckpt.quantization == "compressed-tensors"
    linear = sum(r * c + 2 for r, c in LLAMA_8B_LINEAR) * 32  # fp8 weight + one bf16 scale per matrix
    assert ckpt.total_bytes == LLAMA_8B_UNQUANTIZED + linear
    assert ckpt.groups.lm_head == 128256 * 4096 * 2  # "ignore": ["lm_head"]
    assert 9.0e9 < ckpt.total_bytes < 9.2e9


def test_awq_and_gptq_int4_store_about_a_third_of_the_bf16_checkpoint():
    bf16 = read_checkpoint(config("Qwen__Qwen2.5-7B-Instruct")).total_bytes
    awq = read_checkpoint(config("Qwen__Qwen2.5-7B-Instruct-AWQ"))
    gptq = read_checkpoint(config("Qwen__Qwen2.5-7B-Instruct-GPTQ-Int4"))
    assert (awq.quantization, gptq.quantization) == ("awq", "gptq")
    # AWQ down_proj [3584 x 18944], group 128: qweight int32 [18944, 448], qzeros [148, 448], scales fp16 [148, 3584]
    down = 18944 * 448 * 4 + 148 * 448 * 4 + 148 * 3584 * 2
    attention = awq.groups.attention + awq.groups.kv_projection
    assert awq.groups.dense_mlp == 28 * (3 * down)
    assert attention > 0
    # GPTQ additionally stores g_idx (int32 per input column)
    assert gptq.groups.dense_mlp - awq.groups.dense_mlp == 28 * 4 * (3584 + 3584 + 18944)
    for q in (awq, gptq):
        assert 0.3 < q.total_bytes / bf16 < 0.4
        assert q.groups.embedding == 152064 * 3584 * 2


def test_bitsandbytes_nf4_with_double_quant_and_w4a16_store_about_5_7_gb_for_llama_8b():
    bnb = read_checkpoint(config("unsloth__Meta-Llama-3.1-8B-Instruct-bnb-4bit"))
    w4a16 = read_checkpoint(config("neuralmagic__Meta-Llama-3.1-8B-Instruct-quantized.w4a16"))
    assert (bnb.quantization, w4a16.quantization) == ("bitsandbytes", "compressed-tensors")
    linear = sum(r * c for r, c in LLAMA_8B_LINEAR) * 32
    assert bnb.total_bytes == pytest.approx(LLAMA_8B_UNQUANTIZED + linear * (0.5 + 1 / 64), rel=0.001)
    # pack-quantized int4, group 128, bf16 scales, symmetric (no zero points)
    assert w4a16.total_bytes == pytest.approx(LLAMA_8B_UNQUANTIZED + linear * (0.5 + 2 / 128), rel=0.001)


def test_fp32_checkpoint_loads_in_16_bits():
    ckpt = read_checkpoint(config("google__gemma-2-9b-it"))
    assert ckpt.total_bytes == 4 * ckpt.parameters
    assert ckpt.tied and ckpt.groups.lm_head == 0
    assert weights_per_gpu(ckpt) == pytest.approx(2 * ckpt.parameters, rel=0.001)
    assert read_checkpoint(config("google__gemma-2-9b-it"), dtype="float32").gpu.total == ckpt.total_bytes


def test_gemma3_multimodal_counts_the_vision_tower():
    ckpt = read_checkpoint(config("google__gemma-3-4b-it"))
    assert 0.4e9 * 2 < ckpt.groups.vision < 0.45e9 * 2  # SigLIP-400M in bf16
    assert ckpt.tied


def test_mla_attention_keeps_its_latent_projections_whole_on_every_rank():
    ckpt = read_checkpoint(config("deepseek-ai__DeepSeek-V2-Lite"))
    assert ckpt.kv_heads == 0 and ckpt.groups.kv_projection == 0
    # kv_a_proj_with_mqa [576 x 2048] is replicated in each of the 27 layers
    assert ckpt.groups.replicated >= 27 * 576 * 2048 * 2
    assert ckpt.moe_layers[0] is False and all(ckpt.moe_layers[1:])


def test_tensor_parallel_splits_weights_and_replicates_kv_heads_beyond_their_count():
    ckpt = read_checkpoint(config("meta-llama__Llama-3.1-8B-Instruct"))
    one = weights_per_gpu(ckpt)
    assert weights_per_gpu(ckpt, 2) == pytest.approx(one / 2, rel=0.001)
    # 8 KV heads: at TP 16 every rank still keeps one whole KV head (1/8 of k/v, not 1/16)
    kv, norms = ckpt.gpu.kv_projection, ckpt.gpu.replicated
    naive16 = (one - norms) / 16 + norms
    assert weights_per_gpu(ckpt, 16) == pytest.approx(naive16 + kv / 8 - kv / 16, rel=0.001)
    assert weights_per_gpu(ckpt, 16) > naive16 + kv / 32


def test_vocab_is_padded_to_a_multiple_of_64_per_rank():
    cfg = dict(config("microsoft__Phi-3-mini-4k-instruct"))  # vocab 32064 = 501 x 64
    cfg["vocab_size"] = 32001
    ckpt = read_checkpoint(cfg)
    padded = read_checkpoint(dict(cfg, vocab_size=32064))
    assert weights_per_gpu(ckpt) == weights_per_gpu(padded)


def test_pipeline_stages_follow_vllm_get_pp_indices_and_the_heaviest_stage_is_returned():
    ckpt = read_checkpoint(config("meta-llama__Llama-3.1-8B-Instruct"))
    per_layer = sum(d for _g, d, _m in ckpt.layer_bytes)
    embed = ckpt.gpu.embedding  # 128256 is already a multiple of 64
    # 32 layers over 3 stages -> 10, 11, 11 (the extra layers go to the stages before the last)
    first, middle, last = 10 * per_layer + embed, 11 * per_layer, 11 * per_layer + ckpt.gpu.lm_head
    assert weights_per_gpu(ckpt, 1, 3) == pytest.approx(max(first, middle, last), rel=0.001)


def test_tied_embeddings_get_their_own_lm_head_copy_on_the_last_pipeline_stage():
    ckpt = read_checkpoint(config("google__gemma-2-9b-it"))
    assert ckpt.tied
    total_pp2 = weights_per_gpu(ckpt, 1, 2)
    assert total_pp2 > weights_per_gpu(ckpt) / 2 + ckpt.gpu.embedding * 0.4


def test_expert_parallel_gives_whole_experts_to_each_rank_and_keeps_attention_split_by_tp():
    ckpt = read_checkpoint(config("Qwen__Qwen3-30B-A3B"))
    tp2 = weights_per_gpu(ckpt, 2)
    ep = weights_per_gpu(ckpt, 2, expert_parallel=True)
    assert ep == pytest.approx(tp2, rel=0.001)  # 128 experts split evenly over 2 ranks either way
    dp4_ep = weights_per_gpu(ckpt, 1, 1, 4, expert_parallel=True)
    # each DP rank holds all attention but only a quarter of the experts
    assert dp4_ep == pytest.approx(ckpt.gpu.total - ckpt.gpu.experts * 3 / 4, rel=0.001)


def test_unknown_architecture_is_counted_generically_and_flagged_approximate():
    cfg = dict(config("meta-llama__Llama-3.1-8B-Instruct"), model_type="somenewllm",
               architectures=["SomeNewLLMForCausalLM"])
    ckpt = read_checkpoint(cfg)
    assert ckpt.approximate
    assert ckpt.parameters == 8_030_261_248


# Bad input
@pytest.mark.parametrize("mutate, field", [
    (lambda c: c.pop("hidden_size"), "hidden_size"),
    (lambda c: c.update(num_hidden_layers="32"), "num_hidden_layers"),
    (lambda c: c.update(vocab_size=10**12), "vocab_size"),
    (lambda c: c.update(num_attention_heads=True), "num_attention_heads"),
    (lambda c: c.update(tie_word_embeddings="no"), "tie_word_embeddings"),
    (lambda c: c.update(torch_dtype="int3"), "torch_dtype"),
    (lambda c: c.update(quantization_config={"quant_method": "awq", "bits": "4"}), "bits"),
    (lambda c: c.update(quantization_config={"quant_method": "magic"}), "quant_method"),
    (lambda c: c.update(quantization_config={"quant_method": "compressed-tensors"}), "config_groups"),
])
def test_bad_config_raises_an_error_naming_the_field(mutate, field):
    cfg = config("meta-llama__Llama-3.1-8B-Instruct")
    mutate(cfg)
    with pytest.raises(CheckpointConfigError, match=field):
        read_checkpoint(cfg)


@pytest.mark.parametrize("bad", [{}, [], None, "config"])
def test_empty_or_non_object_config_is_refused(bad):
    with pytest.raises(CheckpointConfigError):
        read_checkpoint(bad)


def test_bad_index_and_bad_parallelism_are_refused():
    ckpt_cfg = config("meta-llama__Llama-3.1-8B-Instruct")
    with pytest.raises(CheckpointConfigError, match="total_size"):
        read_checkpoint(ckpt_cfg, {"metadata": {"total_size": "16GB"}})
    ckpt = read_checkpoint(ckpt_cfg)
    with pytest.raises(CheckpointConfigError, match="tensor_parallel"):
        weights_per_gpu(ckpt, 0)
    with pytest.raises(CheckpointConfigError, match="pipeline_parallel"):
        weights_per_gpu(ckpt, 1, 64)


_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                    st.text(max_size=5), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_FIELDS = ["hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "num_key_value_heads",
           "intermediate_size", "head_dim", "tie_word_embeddings", "torch_dtype", "num_local_experts",
           "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "first_k_dense_replace", "mlp_only_layers",
           "quantization_config", "text_config", "vision_config", "n_shared_experts", "decoder_sparse_step"]


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(["meta-llama__Llama-3.1-8B-Instruct", "deepseek-ai__DeepSeek-V2-Lite",
                             "openai__gpt-oss-20b", "Qwen__Qwen3-30B-A3B", "google__gemma-3-4b-it"]),
       changes=st.dictionaries(st.sampled_from(_FIELDS), _values, min_size=1, max_size=4),
       drop=st.lists(st.sampled_from(_FIELDS), max_size=3))
def test_any_malformed_config_gives_a_result_or_the_module_error_never_a_crash(base, changes, drop):
    cfg = config(base)
    cfg.update(changes)
    for key in drop:
        cfg.pop(key, None)
    try:
        ckpt = read_checkpoint(cfg)
    except CheckpointConfigError as err:
        assert str(err)
        return
    assert ckpt.total_bytes >= 0 and ckpt.parameters >= 0
    weights_per_gpu(ckpt, 2, 2)


def test_an_ignore_list_naming_single_layers_keeps_only_those_layers_in_16_bits():
    """Meta's Llama-3.1-405B-Instruct-FP8 (fbgemm_fp8) keeps every layer's attention and layers 0 and 125
    whole in bf16: the MLPs of the other 124 layers are FP8."""
    base = json.loads((FIXTURES / "meta-llama__Llama-3.1-405B-Instruct" / "config.json").read_text())
    h, inter, layers = base["hidden_size"], base["intermediate_size"], base["num_hidden_layers"]
    attn = [f"model.layers.{i}.self_attn.{m}" for i in range(layers) for m in ("q_proj", "k_proj", "v_proj", "o_proj")]
    whole = [f"model.layers.{i}.mlp.{m}" for i in (0, layers - 1) for m in ("gate_proj", "up_proj", "down_proj")]

    def size(ignore: list[str]) -> int:
        q = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ignore}
        return read_checkpoint({**base, "quantization_config": q}).total_bytes

    mlp_fp8, mlp_bf16 = 3 * h * inter, 3 * h * inter * 2  # per layer, scales aside
    assert size([*attn, *whole, "lm_head"]) - size([*attn, "lm_head"]) == pytest.approx(2 * (mlp_bf16 - mlp_fp8),
                                                                                        rel=1e-3)
    # per GPU at TP8: (attention 71.8 B x 2 B + 2 whole layers' MLPs x 2 B + 124 MLPs x 1 B + embeddings and
    # lm_head 4.2 B x 2 B) / 8 = about 453 GiB / 8
    ckpt = read_checkpoint({**base, "quantization_config": {"quant_method": "fbgemm_fp8",
                                                            "modules_to_not_convert": [*attn, *whole, "lm_head"]}})
    assert 55 < weights_per_gpu(ckpt, 8) / 2**30 < 58
