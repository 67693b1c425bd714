"""The llm stack: vLLM on H100 MIG 3g.40gb slices. One service starts; one starts but holds fewer full-length
requests than it asks for (an advisory warning with the KV tokens and concurrency); one would not start (a
mandatory violation in vLLM's words, with a maxModelLen the engine accepts)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet.capacity import memory_budget, stack_capacity
from gpufleet.capacity.model_fit import mig_instance
from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.config.model_serving import served_model
from gpufleet.nvidia.model_memory.verdict import assess
from gpufleet.nvidia.products import find_product

ROOT = Path(__file__).resolve().parents[2]
H100 = find_product("NVIDIA-H100-80GB-HBM3")


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, (pattern, text[-3000:])
    return float(match.group(1).replace(",", ""))


def test_plan_refuses_only_the_service_that_cannot_start_and_warns_about_the_others_concurrency():
    result = _cli("plan", "--stack", "llm")
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    text = " ".join(result.stdout.split())
    violations = text.split("Policy violations")[1]
    assert "[mandatory] model-fits-gpu kubernetes:apps/v1:Deployment llm-llm-llama-128k-deployment" in violations
    assert "[advisory] model-concurrency kubernetes:apps/v1:Deployment llm-llm-llama-long-deployment" in violations
    assert "llama-chat" not in violations and "gpu-capacity-fit" not in violations
    assert "Policies: 1 mandatory, 1 other violation(s)" in text
    # the refusal in vLLM's words: one 131,072-token request needs 2 x 32 x 8 x 128 x 2 B x 131,072 = 16 GiB
    assert ("To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
            "needed, which is larger than the available KV cache memory") in violations
    # the budget with the utilization the container passes (args: --gpu-memory-utilization 0.6), not just its name
    assert "(--gpu-memory-utilization 0.6 x 39.25 GiB)" in violations
    # the warning with the figures vLLM logs: 16 x 32k requests do not fit; about 5 do
    concurrency = _number(r"Maximum concurrency for 32,768 tokens per request: ([\d.]+)x", violations)
    tokens = _number(r"GPU KV cache size: ([\d,]+) tokens", violations)
    assert 3 < concurrency < 16 and tokens == pytest.approx(concurrency * 32768, rel=0.01)


def test_the_suggested_max_model_len_is_one_the_engine_accepts_near_the_largest():
    cfg = load_stack("llm", ROOT).config
    refused = cfg.workloads[2]
    slice_ = mig_instance(H100, "3g.40gb", 40192)
    served = served_model(refused.model, refused.image, refused.args)
    verdict = assess("", served, slice_)
    assert verdict.error and verdict.startup.refusal.kind == "one_sequence"
    suggested = int(_number(r"maxModelLen ([\d,]+) \(vLLM's estimate", verdict.error))
    largest = verdict.startup.largest_max_model_len
    assert assess("", served.with_args(max_model_len=suggested), slice_).error is None
    assert assess("", served.with_args(max_model_len=largest + 16), slice_).error is not None
    assert 0.85 * largest <= suggested <= largest
    util = _number(r"--gpu-memory-utilization ([\d.]+)", verdict.error.split("Fixes:")[1])
    assert assess("", served.with_args(gpu_memory_utilization=util), slice_).error is None


def test_check_of_the_rendered_manifests_makes_the_same_two_calls(tmp_path):
    out = tmp_path / "plan"
    planned = _cli("plan", "--stack", "llm", "--no-policies", "--out", str(out))
    assert planned.returncode == 0, planned.stderr
    deployment = yaml.safe_load((out / "manifests/llm/deployment-llama-chat.yaml").read_text())
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    facts = json.loads(annotations["gpufleet.io/model-memory"])
    assert facts["engine"] == "vllm" and facts["args"]["gpu_memory_utilization"] == 0.87  # from the container args
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(stack_capacity(load_stack("llm", ROOT).config).to_json()))
    check = _cli("check", "--nodes", str(nodes), "--json", str(out / "manifests/llm"))
    assert check.returncode == 1, check.stdout + check.stderr
    doc = json.loads(check.stdout)
    assert [(u["workload"], u["reason"]) for u in doc["unschedulable"]] == [("Deployment/llm/llama-128k", "memory")]
    model_warnings = [w for w in doc["warnings"] if w.get("reason") == "model"]
    assert [w["workload"] for w in model_warnings] == ["Deployment/llm/llama-long"]
    assert "Maximum concurrency for 32,768 tokens per request" in model_warnings[0]["message"]


def _cfg(pool: dict, gpu: dict, model: dict, dp: dict | None = None, args: list[str] | None = None):
    sections = {"nodePools": [{"name": "p", "nodes": ["n0"], **pool}], "devicePlugin": dp or {},
                "workloads": [{"kind": "inference", "name": "m", "image": "vllm/vllm-openai:v0.11.0",
                               "nodePool": "p", "gpu": gpu, "model": model, **({"args": args} if args else {})}]}
    return parse_sections(sections, "test", project_dir=ROOT)


LLAMA_1B = {"config": "tests/fixtures/checkpoints/meta-llama__Llama-3.2-1B-Instruct", "maxModelLen": 8192,
            "dtype": "fp16"}
MPS4 = {"sharingProfiles": {"mps4": {"strategy": "mps", "replicas": 4}}}
T4_MPS = {"gpu": {"product": "Tesla-T4"}, "sharing": "mps4"}


def test_vllm_default_utilization_on_an_mps_slice_reaches_past_its_pinned_limit():
    [problem] = memory_budget(_cfg(T4_MPS, {"shared": True}, LLAMA_1B, MPS4))
    assert problem.error
    assert "an MPS slice (1/4 of Tesla-T4, 3840 of 15360 MiB)" in problem.message
    assert "beyond the slice's pinned limit of 3840 MiB" in problem.message
    # the fix: a reservation inside the slice, and (1B fp16 weights + profile leave little) a shorter context
    util = _number(r"fixes: --gpu-memory-utilization ([\d.]+)", problem.message)
    length = int(_number(r"fixes: --gpu-memory-utilization [\d.]+ with maxModelLen ([\d,]+)", problem.message))
    assert util * 15360 <= 3840 and 0 < length < 8192
    fixed = memory_budget(_cfg(T4_MPS, {"shared": True}, {**LLAMA_1B, "maxModelLen": length}, MPS4,
                               ["--gpu-memory-utilization", str(util)]))
    assert [p for p in fixed if p.error] == []


def test_vllm_flags_must_say_what_the_model_block_says():
    from gpufleet.errors import ConfigError

    args = ["--max-model-len", "4096", "--max-num-seqs=8", "--tensor-parallel-size", "1"]
    with pytest.raises(ConfigError) as e:
        _cfg({"gpu": {"product": "NVIDIA-L4"}}, {"count": 1}, {**LLAMA_1B, "maxNumSeqs": 4}, args=args)
    lines = str(e.value).splitlines()
    assert any("gpufleet:workloads[0].args: --max-model-len 4096 disagrees with workloads[0].model.maxModelLen 8192"
               in line for line in lines), lines
    assert any("--max-num-seqs=8" not in line and "--max-num-seqs 8 disagrees with workloads[0].model.maxNumSeqs 4"
               in line for line in lines), lines
    assert not any("--tensor-parallel-size" in line for line in lines)


def test_a_model_too_big_for_its_mig_slice_names_the_smallest_profile_it_starts_on():
    geometry = {"mig": {"geometries": {"g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]}}}
    llama8b = {"config": "models/llama-3.1-8b/config.json", "maxModelLen": 8192}
    sections = {"mode": "standalone", "devicePlugin": {"migStrategy": "mixed"}, **geometry,
                "nodePools": [{"name": "p", "nodes": ["n0"], "gpu": {"product": "NVIDIA-H100-80GB-HBM3"},
                               "migGeometry": "g"}],
                "workloads": [{"kind": "inference", "name": "m", "image": "vllm/vllm-openai:v0.11.0", "nodePool": "p",
                               "gpu": {"profile": "1g.10gb"}, "model": llama8b}]}
    cfg = parse_sections(sections, "test", project_dir=ROOT)
    [problem] = memory_budget(cfg)
    assert problem.error and "a MIG 1g.10gb instance" in problem.message
    assert "CUDA out of memory while loading the model: its weights need 14.96 GiB" in problem.message
    profile, mib = re.search(r"a MIG (\S+) instance \((\d+) MiB\)\.", problem.message).groups()
    served = served_model(cfg.workloads[0].model, cfg.workloads[0].image)
    assert assess("", served, mig_instance(H100, profile, int(mib))).error is None


def test_time_sliced_vllm_co_tenants_each_reserve_their_utilization_of_the_whole_gpu():
    ts = {"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}}
    pool = {"gpu": {"product": "NVIDIA-L4"}, "sharing": "ts"}

    def cfg(util: str):
        sections = {"devicePlugin": ts, "nodePools": [{"name": "p", "nodes": ["n0"], **pool}],
                    "workloads": [{"kind": "inference", "name": f"m{i}", "image": "vllm/vllm-openai:v0.11.0",
                                   "nodePool": "p", "gpu": {"shared": True}, "model": LLAMA_1B,
                                   "args": ["--gpu-memory-utilization", util]} for i in range(2)]}
        return parse_sections(sections, "test", project_dir=ROOT)

    # two pods on one L4 (22.05 GiB as CUDA sees it): 2 x 0.22 of it fits
    assert [p for p in memory_budget(cfg("0.22")) if not p.advisory] == []
