"""`gpufleet report`: what it writes, what it refuses, and what the page and the summary say."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from gpufleet.capacity.model import Node
from gpufleet.cli import app
from gpufleet.config.loading import load_stack
from gpufleet.report import render_html, report_of, stack_report, summary_markdown
from tests.report.fleet import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
runner = CliRunner()


def gpufleet(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "srcset", "action")]


def test_page_is_self_contained_no_script_no_link_no_remote_reference(tmp_path):
    page = tmp_path / "r.html"
    r = runner.invoke(app, ["report", "--stack", "greed", "--project-dir", str(ROOT), "--out", str(page)])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    parser = _Refs()
    parser.feed(html)
    assert not {"script", "link", "img", "iframe", "object"} & parser.tags
    refs = parser.refs + re.findall(r"url\(\s*['\"]?([^)'\"]*)", html) + re.findall(r"@import\s+['\"]?([^'\";]+)", html)
    assert [ref for ref in refs if re.match(r"(?i)\s*(https?:|//|ftp:|data:)", ref)] == []
    assert "//" not in "".join(refs)


def test_stack_report_writes_page_and_summary_and_exits_0_even_with_pending_workloads(tmp_path):
    r = gpufleet("report", "--stack", "greed", "--project-dir", str(ROOT), "--out", "out/r.html",
                 "--summary", "out/s.md", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1 not running" in r.stdout
    assert "0/1 nodes are available: 1 Insufficient nvidia.com/gpu." in (tmp_path / "out" / "r.html").read_text()
    summary = (tmp_path / "out" / "s.md").read_text()
    assert "| edge | 1 | 1 | 0 | 0 | 0 | 3 | 1 | `Deployment/greed/greedy-trainer` |" in summary
    assert "`Deployment/greed/greedy-trainer` pending, 0 of 1 pod(s) placed: 0/1 nodes are available" in summary
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.html", "s.md"]  # no temporary files left


def test_nodes_and_manifests_report_includes_running_pods_and_the_pending_pod(tmp_path):
    page = tmp_path / "r.html"
    r = runner.invoke(app, ["report", "--nodes", str(FIXTURES / "nodes-mixed-cluster.json"), "--pods",
                            str(FIXTURES / "pods-mixed-cluster.json"), str(FIXTURES / "manifests" / "too-big.yaml"),
                            "--out", str(page)])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "Pod/default/greedy" in html and "pods already running" in html
    assert "0/4 nodes are available:" in html
    # why it pends and what to do, as `check` says it
    assert "<b>why:</b> one pod asks for nvidia.com/gpu 101; the largest node it may use has nvidia.com/gpu" in html
    assert "<b>fix:</b> ask for at most nvidia.com/gpu" in html


def test_someone_elses_file_is_refused_unless_forced_and_our_own_page_is_replaced(tmp_path):
    page, summary = tmp_path / "r.html", tmp_path / "s.md"
    page.write_text("mine")
    r = gpufleet("report", "--stack", "mig", "--project-dir", str(ROOT), "--out", str(page), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"{page}: already exists and is not a report page gpufleet wrote; choose another "
                                "name, move it away, or pass --force to replace it")
    assert page.read_text() == "mine"
    r = gpufleet("report", "--stack", "mig", "--project-dir", str(ROOT), "--out", str(page), "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")
    # a page (and summary) gpufleet wrote is replaced without --force: re-running is the normal case
    r = gpufleet("report", "--stack", "dev", "--project-dir", str(ROOT), "--out", str(page), "--summary",
                 str(summary), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = gpufleet("report", "--stack", "mig", "--project-dir", str(ROOT), "--out", str(page), "--summary",
                 str(summary), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stack mig" in page.read_text() and "stack mig" in summary.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "s.md"]  # no temporary files left


def test_someone_elses_summary_stops_the_run_before_the_page_is_written(tmp_path):
    summary = tmp_path / "s.md"
    summary.write_text("notes")
    r = gpufleet("report", "--stack", "mig", "--project-dir", str(ROOT), "--out", "r.html", "--summary",
                 str(summary), cwd=tmp_path)
    assert r.returncode == 2 and "is not a report summary gpufleet wrote" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.md"] and summary.read_text() == "notes"


def test_directory_as_output_is_refused(tmp_path):
    r = gpufleet("report", "--stack", "mig", "--project-dir", str(ROOT), "--out", str(tmp_path), "--force",
                 cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"{tmp_path}: is a directory")


def test_bad_input_exits_2_naming_the_file_and_writes_nothing(tmp_path):
    bad = tmp_path / "nodes.json"
    bad.write_text("{not json")
    r = gpufleet("report", "--nodes", str(bad), "--out", "r.html", "--summary", "s.md", cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and str(bad) in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.json"]


def test_stack_and_nodes_together_are_refused(tmp_path):
    r = gpufleet("report", "--stack", "dev", "--project-dir", str(ROOT), "--nodes",
                 str(FIXTURES / "nodes-one-h100x8.json"), "--out", "r.html", cwd=tmp_path)
    assert r.returncode == 2
    assert "--stack" in r.stderr and "--nodes" in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_names_from_the_input_are_escaped_on_the_page():
    hostile = '<img src=x onerror="alert(1)">'
    node = Node(name=hostile, labels={"nvidia.com/gpu.product": "Tesla-T4", "agentpool": "</style><b>"}, taints=(),
                allocatable={"pods": 110, "nvidia.com/gpu": 1}, capacity={"pods": 110, "nvidia.com/gpu": 1},
                unknown=frozenset({"cpu", "memory", "ephemeral-storage"}))
    html = render_html(report_of("<t>", [node], [], []))
    assert "<img" not in html and "</style><b>" not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html


def test_summary_counts_mig_slices_per_pool():
    summary = summary_markdown(stack_report("mig", load_stack("mig", ROOT).config))
    assert "| a100 | 1 | 1 | 0 | 2 | 5 | 0 | 0 | none |" in summary
    assert "Every workload is placed." in summary


def test_model_that_cannot_start_is_listed_as_not_running_and_the_bars_show_kv_tokens_and_concurrency():
    report = stack_report("llm", load_stack("llm", ROOT).config)
    out = {w.key: w for w in report.not_running}
    assert list(out) == ["Deployment/llm/llama-128k"]
    assert out["Deployment/llm/llama-128k"].verdict == "memory"
    page = render_html(report)
    section = page.split('id="not-running"')[1].split("</section>")[0]
    assert "llama-128k" in section and "llama-chat" not in section and "llama-long" not in section
    assert "1 workload(s) will not run" in summary_markdown(report)
    views = {w.key: w for w in report.workloads}
    long = views["Deployment/llm/llama-long"].model
    assert long is not None and long.starts and long.max_num_seqs == 16 and 3 < long.concurrency < 16
    assert long.weights_mib + long.overhead_mib + long.kv_mib <= long.reserved_mib <= long.visible_mib
    workloads = page.split('id="workloads"')[1].split("</section>")[0]
    row = workloads.split("llm/llama-long", 1)[1].split("</tr>")[0]
    assert f"KV cache {long.kv_tokens:,} tokens; {long.concurrency:.2f}× at 32,768 tokens (maxNumSeqs 16)" in row
    assert "fewer at once" in row
    assert "fewer at once" not in workloads.split("llm/llama-chat", 1)[1].split("</tr>")[0]


def test_mig_instances_fill_the_height_of_the_memory_slices_they_own():
    page = render_html(stack_report("mig", load_stack("mig", ROOT).config))
    heights = {float(h) for h in re.findall(r'<rect class="unit [^"]*" x="[^"]*" y="[^"]*" width="[^"]*" '
                                            r'height="([^"]*)"', page)}
    from gpufleet.report.html import GPU_H

    # all seven 1g.5gb instances fill the box's height (less the 1 px border each side): empty width is free memory
    assert heights == {GPU_H - 2}


def test_dra_stack_report_allocates_the_claims_on_the_planned_slices_and_draws_the_claimed_gpus():
    report = stack_report("dra", load_stack("dra", ROOT).config)
    assert report.not_running == []
    views = {w.key: w for w in report.workloads}
    assert {k: (w.verdict, w.gpu_request) for k, w in views.items()} == {
        "Deployment/serving/llm": ("placed", (("DRA-claimed GPU", 1),)),
        "Job/research/train": ("placed", (("DRA-claimed GPU", 2),)),
        "Deployment/research/explore": ("placed", (("DRA-claimed GPU", 1),)),
        "Deployment/research/embed": ("placed", (("DRA-claimed GPU", 1),)),  # the shared claim's GPU
    }
    # 1 (llm) + 2 x 2 (train, one PCIe root's pair per pod) + 1 time-shared by explore and embed
    assert "| h100 | 2 | 6 | 10 |" in summary_markdown(report)


def test_every_workload_in_the_dra_legend_has_a_shape_on_the_map_a_shared_gpu_split_between_them():
    report = stack_report("dra", load_stack("dra", ROOT).config)
    page = render_html(report)
    drawn = {int(i) for i in re.findall(r'<rect class="unit w(\d+) ', page)}
    assert {w.index for w in report.workloads if w.gpu_request} <= drawn
    # the GPU that explore and embed share through one named claim is split into one stripe each
    shared = re.findall(r"<title>(GPU \d+: [^<]*research/explore, Deployment/research/embed[^<]*)</title>", page)
    assert shared and all(t.endswith("(shared: one claim)") for t in shared)


def _headroom(rows) -> dict[tuple[str, bool], int]:
    return {(shape, tolerates): instances for shape, tolerates, instances, *_ in rows}


def test_dra_stack_headroom_counts_claims_on_free_devices_not_gpu_extended_resources():
    # No device plugin runs in a DRA stack: no nvidia.com/gpu shape. 16 H100s, 6 claimed by the workloads.
    table = _headroom(stack_report("dra", load_stack("dra", ROOT).config).headroom)
    assert {s for s, _ in table} == {f"{n}x NVIDIA H100 80GB HBM3 (gpu.nvidia.com)" for n in (1, 2, 4, 8)}
    assert table[("1x NVIDIA H100 80GB HBM3 (gpu.nvidia.com)", True)] == 10
    assert table[("1x NVIDIA H100 80GB HBM3 (gpu.nvidia.com)", False)] == 10
    # 6 devices in use on two 8-GPU nodes: no node keeps 8 free
    assert table[("8x NVIDIA H100 80GB HBM3 (gpu.nvidia.com)", True)] == 0


def test_dra_headroom_is_the_same_from_the_stack_and_from_files_holding_the_same_fleet(tmp_path):
    import json

    import yaml

    from gpufleet.capacity.model import Capacity
    from gpufleet.report.sources import stack_inputs
    from tests.cli.run_inprocess import run

    cfg = load_stack("dra", ROOT).config
    nodes, manifests = stack_inputs(cfg)
    capacity, objects = tmp_path / "capacity.json", tmp_path / "fleet.yaml"
    capacity.write_text(json.dumps(Capacity("stack", nodes).to_json()))
    objects.write_text(yaml.safe_dump_all(manifests))
    done = run("headroom", "--shapes", "--json", "--nodes", capacity, objects)
    assert done.code == 0, done.err
    from_files = {(r["shape"], r["tolerates"]): r["instances"] for r in json.loads(done.out)}
    assert from_files == _headroom(stack_report("dra", cfg).headroom)


def test_report_of_dra_cluster_files_draws_the_sliced_gpus_and_the_claimed_ones_in_use(tmp_path):
    dra = FIXTURES / "dra"
    out = tmp_path / "r.html"
    summary = tmp_path / "r.md"
    done = runner.invoke(app, ["report", "--out", str(out), "--summary", str(summary), "--nodes",
                               str(dra / "nodes.json"), str(dra / "deviceclasses.yaml"),
                               str(dra / "resourceslices.json"), str(dra / "resourceclaims.json")])
    assert done.exit_code == 0, done.output
    # two nodes of 8 H100s in ResourceSlices (no nvidia.com/gpu); an existing claim holds 6 of node a's
    assert "16 GPU(s), 6 in use" in out.read_text()
    assert "| 2 | 6 | 10 |" in summary.read_text()


def test_a_stack_claim_for_a_product_its_nodes_lack_names_the_shorthand_and_the_products_they_carry():
    import yaml

    from gpufleet.config.loading import parse_sections

    raw = yaml.safe_load((ROOT / "Pulumi.dra.yaml").read_text())["config"]
    sections = {k.removeprefix("gpufleet:"): v for k, v in raw.items()}
    llm = next(w for w in sections["workloads"] if w["name"] == "llm")
    llm["gpu"]["claim"]["product"] = "NVIDIA A100-SXM4-80GB"  # the pool's GPUs are H100s, all 16 free
    report = stack_report("t", parse_sections(sections, "Pulumi.t.yaml"))
    (pending,) = report.not_running
    assert pending.key == "Deployment/serving/llm"
    assert pending.held_by.startswith("request gpu of ResourceClaimTemplate serving/llm-gpu matches no device "
                                      "on the 2 nodes it may use: its selector #0 ")
    assert "(a stack config's `product: NVIDIA A100-SXM4-80GB`)" in pending.held_by
    assert pending.held_by.endswith("they carry productName: NVIDIA H100 80GB HBM3")
    assert "add nodes it may use" not in pending.fix
