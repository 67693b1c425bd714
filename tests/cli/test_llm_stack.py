"""The llm stack: vLLM on H100 MIG 3g.40gb slices; plan and check refuse the model that does not fit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet.capacity import memory_budget, stack_capacity
from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.scheduling import check_workloads
from gpufleet.scheduling.manifests import load_manifests

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_plan_refuses_the_model_that_does_not_fit_and_says_what_would(tmp_path):
    result = _cli("plan", "--stack", "llm")
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    text = " ".join(result.stdout.split())
    assert "[mandatory] model-fits-gpu kubernetes:apps/v1:Deployment llm-llm-llama-long-deployment" in text
    assert "llama-chat" not in text.split("Policy violations")[1]
    assert "needs 83.91 GiB per GPU" in text and "KV cache 64.00 GiB for 16 x 32768 tokens" in text
    assert "a MIG 3g.40gb instance of NVIDIA-H100-80GB-HBM3 (40192 MiB)" in text
    assert "maxModelLen 7888 (at maxNumSeqs 16) with --gpu-memory-utilization 0.9" in text
    assert "maxNumSeqs 3 (at maxModelLen 32768)" in text
    assert "no MIG profile, nor a whole NVIDIA-H100-80GB-HBM3, holds it" in text
    assert "gpu-capacity-fit" not in text  # the slices are there: only the memory is short

    # the rendered manifests carry the need, and `gpufleet check` makes the same call (exit 1, reason memory)
    out = tmp_path / "plan"
    planned = _cli("plan", "--stack", "llm", "--no-policies", "--out", str(out))
    assert planned.returncode == 0, planned.stderr
    deployment = yaml.safe_load((out / "manifests/llm/deployment-llama-chat.yaml").read_text())
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["gpufleet.io/expected-gpu-memory-mib"] == "34722"
    cfg = load_stack("llm", ROOT).config
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(stack_capacity(cfg).to_json()))
    check = _cli("check", "--nodes", str(nodes), "--json", str(out / "manifests/llm"))
    assert check.returncode == 1, check.stdout + check.stderr
    doc = json.loads(check.stdout)
    assert [(u["workload"], u["reason"]) for u in doc["unschedulable"]] == [("Deployment/llm/llama-long", "memory")]
    assert doc["memoryBudget"][0]["error"] is True and doc["memoryBudget"][0]["availableMiB"] == 36172


def test_the_fitting_service_uses_the_utilization_its_need_asks_for():
    from gpufleet.nvidia.model_budget import gpu_memory_utilization, mig_budget
    from gpufleet.nvidia.model_memory import need_per_gpu
    from gpufleet.nvidia.products import find_product

    cfg = load_stack("llm", ROOT).config
    assert [p.workload for p in memory_budget(cfg)] == ["workloads[1] 'llama-long'"]
    chat = cfg.workloads[0]
    need = need_per_gpu(chat.model.shape(), chat.model.serving())
    slice_ = mig_budget(find_product("NVIDIA-H100-80GB-HBM3"), "3g.40gb", 40192)
    util = chat.args[chat.args.index("--gpu-memory-utilization") + 1]
    assert float(util) == gpu_memory_utilization(need.total, slice_) == 0.87  # 34722 of 40192 MiB, rounded up


def _cfg(pool: dict, gpu: dict, model: dict, dp: dict | None = None, args: list[str] | None = None):
    sections = {"nodePools": [{"name": "p", "nodes": ["n0"], **pool}], "devicePlugin": dp or {},
                "workloads": [{"kind": "inference", "name": "m", "image": "vllm/vllm-openai:v0.11.0",
                               "nodePool": "p", "gpu": gpu, "model": model, **({"args": args} if args else {})}]}
    return parse_sections(sections, "test")


# Llama-3.2-1B at fp16 on a T4: 2.30 GiB of weights; 32 KiB of KV per token; llm-d's dense activation 5.5 GiB
SMALL = {"parameters": 1_235_814_400, "layers": 16, "kvHeads": 8, "headDim": 64, "dtype": "fp16",
         "maxModelLen": 8192, "activationMiB": 512}


def test_an_mps_slice_budget_is_the_pinned_limit_and_the_fix_is_fewer_replicas():
    mps = {"sharingProfiles": {"mps4": {"strategy": "mps", "replicas": 4}}}
    util = ["--gpu-memory-utilization", "0.24"]  # 0.24 x 15360 = 3686 MiB, inside the slice
    cfg = _cfg({"gpu": {"product": "Tesla-T4"}, "sharing": "mps4"}, {"shared": True}, SMALL, mps, util)
    assert memory_budget(cfg) == []  # 2.30 + 0.25 + 0.5 + 0.15 GiB < 3840 MiB
    cfg = _cfg({"gpu": {"product": "Tesla-T4"}, "sharing": "mps4"}, {"shared": True}, {**SMALL, "maxNumSeqs": 8}, mps,
               util)
    [problem] = memory_budget(cfg)
    assert problem.error and problem.available_mib == 3840
    assert "an MPS slice (1/4 of Tesla-T4, 3840 of 15360 MiB)" in problem.message
    # 5071 MiB needed: 15360 / 3 = 5120 MiB holds it; (3840 - 2357 - 512 - 154) MiB / 256 MiB per sequence = 3
    assert "an MPS slice of 1/3 (replicas: 3) or larger" in problem.message
    assert "maxNumSeqs 3 (at maxModelLen 8192)" in problem.message


def test_vllm_default_utilization_on_an_mps_slice_reaches_past_it():
    mps = {"sharingProfiles": {"mps4": {"strategy": "mps", "replicas": 4}}}
    [problem] = memory_budget(_cfg({"gpu": {"product": "Tesla-T4"}, "sharing": "mps4"}, {"shared": True}, SMALL, mps))
    assert problem.error
    assert ("vLLM's default --gpu-memory-utilization 0.9 reserves 13824 MiB of the 15360 MiB it sees, beyond an MPS "
            "slice (1/4 of Tesla-T4, 3840 of 15360 MiB); use --gpu-memory-utilization 0.22") in problem.message
    # 3279 MiB needed / 15360 MiB seen = 0.2135 -> 0.22


def test_vllm_flags_must_say_what_the_model_block_says():
    from gpufleet.errors import ConfigError

    args = ["--max-model-len", "4096", "--max-num-seqs=8", "--tensor-parallel-size", "1"]
    with pytest.raises(ConfigError) as e:
        _cfg({"gpu": {"product": "NVIDIA-L4"}}, {"count": 1}, SMALL, args=args)
    lines = str(e.value).splitlines()
    assert any("gpufleet:workloads[0].args: --max-model-len 4096 disagrees with workloads[0].model.maxModelLen 8192"
               in line for line in lines), lines
    assert any("--max-num-seqs 8 disagrees with workloads[0].model.maxNumSeqs 1" in line for line in lines), lines
    assert not any("--tensor-parallel-size" in line for line in lines)


def test_a_whole_gpu_and_a_mig_instance_are_budgets_too():
    big = {**SMALL, "dtype": "bf16", "parameters": 8_030_261_248, "layers": 32, "headDim": 128, "maxNumSeqs": 64}
    [whole] = memory_budget(_cfg({"gpu": {"product": "NVIDIA-L4"}}, {"count": 1}, big))
    assert "a whole NVIDIA-L4 (23034 MiB)" in whole.message and whole.available_mib == int(23034 * 0.9)
    geometry = {"mig": {"geometries": {"g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]}}}
    sections = {"mode": "standalone", "devicePlugin": {"migStrategy": "mixed"}, **geometry,
                "nodePools": [{"name": "p", "nodes": ["n0"], "gpu": {"product": "NVIDIA-H100-80GB-HBM3"},
                               "migGeometry": "g"}],
                "workloads": [{"kind": "inference", "name": "m", "image": "vllm/vllm-openai:v0.11.0", "nodePool": "p",
                               "gpu": {"profile": "1g.10gb"}, "model": {**big, "maxNumSeqs": 1}}]}
    [mig] = memory_budget(parse_sections(sections, "test"))
    assert "a MIG 1g.10gb instance" in mig.message and "a MIG 1g.20gb instance (19968 MiB) or larger" in mig.message  # 17007 MiB <= 90% of 19968


def test_time_sliced_co_tenants_are_summed_with_their_model_needs():
    ts = {"sharingProfiles": {"ts": {"strategy": "timeSlicing", "replicas": 4}}}
    pool = {"gpu": {"product": "Tesla-T4"}, "sharing": "ts"}
    sections = {"devicePlugin": ts, "nodePools": [{"name": "p", "nodes": ["n0"], **pool}],
                "workloads": [{"kind": "inference", "name": f"m{i}", "image": "vllm/vllm-openai:v0.11.0",
                               "nodePool": "p", "gpu": {"shared": True}, "model": {**SMALL, "maxNumSeqs": 4}}
                              for i in range(4)]}
    # each alone fits (4047 MiB); the four together (16188 MiB) do not fit the T4's 15360 MiB
    problems = memory_budget(parse_sections(sections, "test"))
    assert len(problems) == 1 and not problems[0].error
    assert problems[0].expected_mib == 4 * 4047 and "together expect 16188 MiB" in problems[0].message
