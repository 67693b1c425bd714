"""`gpufleet plan --diff`: what a pull request changes, as reviewable Markdown."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.planning.diff import diff_markdown, markdown_cell

NEW_SERVICE = """\
    - kind: inference
      name: my-infer4
      namespace: myasetest1
      image: mcr.microsoft.com/azureml/onnxruntime:v1.6.0-cuda10.2-cudnn8
      nodePool: edge
      gpu: {shared: true, memoryMiB: 3000}
      ports:
        - {port: 5002, name: http}
      service:
        type: ClusterIP
"""


def project(tmp_path, name: str, stack_text: str):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", d / "Pulumi.yaml")
    (d / "Pulumi.dev.yaml").write_text(stack_text)
    return d


def head_stack() -> str:
    base = (ROOT / "Pulumi.dev.yaml").read_text()
    base = base.replace("      name: my-infer2\n", "      name: my-infer2\n      replicas: 3\n", 1)
    return base.replace("  gpufleet:workloads:\n", "  gpufleet:workloads:\n" + NEW_SERVICE, 1)


def test_plan_diff_shows_changed_replicas_and_new_service(cli, tmp_path):
    base = project(tmp_path, "base", (ROOT / "Pulumi.dev.yaml").read_text())
    head = project(tmp_path, "head", head_stack())
    assert cli("plan", "--stack", "dev", "--project-dir", base, "--out", tmp_path / "base-plan").code == 0
    # The head adds GPU workloads beyond the T4's four MPS shares: the policy pack would (rightly) fail the
    # plan; this test is about the diff, so it runs without the pack.
    result = cli("plan", "--stack", "dev", "--project-dir", head, "--diff", tmp_path / "base-plan", "--no-policies")
    assert result.code == 0, result.err
    md = result.out
    assert "**3 to add, 1 to change, 0 to remove**" in md
    added = md.split("#### Added")[1].split("####")[0]
    assert "`kubernetes:core/v1:Service` **dev-myasetest1-my-infer4-service** (my-infer4)" in added
    assert "`kubernetes:apps/v1:Deployment` **dev-myasetest1-my-infer4-deployment** (my-infer4)" in added
    changed = md.split("#### Changed")[1]
    assert "**dev-myasetest1-my-infer2-deployment** (my-infer2)" in changed
    assert "  | `spec.replicas` | `1` | `3` |" in changed
    assert "#### Removed" not in md


def test_plan_diff_of_identical_plans_says_no_changes(cli, tmp_path):
    assert cli("plan", "--stack", "dev", "--project-dir", ROOT, "--out", tmp_path / "p").code == 0
    result = cli("plan", "--stack", "dev", "--project-dir", ROOT, "--diff", tmp_path / "p")
    assert result.code == 0
    assert "No changes." in result.out


def test_plan_diff_without_base_plan_exits_2(cli, tmp_path):
    assert cli("plan", "--stack", "dev", "--project-dir", ROOT, "--diff", tmp_path / "nothing").code == 2


def res(name: str, inputs: dict, type_: str = "kubernetes:core/v1:Secret") -> dict:
    return {"type": type_, "name": name, "urn": f"urn:pulumi:dev::gpufleet::{type_}::{name}", "parent": None,
            "inputs": inputs}


def test_diff_lists_removed_resources_and_keeps_secrets_masked():
    old = {"stack": "dev", "resources": [res("tok", {"stringData": {"token": "[secret]"}, "type": "Opaque"}),
                                         res("gone", {"data": {"a": "1"}}, "kubernetes:core/v1:ConfigMap")]}
    new = {"stack": "dev",
           "resources": [res("tok", {"stringData": {"token": "[secret]"}, "type": "kubernetes.io/basic-auth"})]}
    md = diff_markdown(old, new)
    assert "#### Removed\n\n- `kubernetes:core/v1:ConfigMap` **gone**" in md
    assert '| `type` | `"Opaque"` | `"kubernetes.io/basic-auth"` |' in md
    assert "token" not in md


def test_diff_orders_resources_and_fields_stably():
    old = {"stack": "dev", "resources": []}
    new = {"stack": "dev", "resources": [res("b", {}), res("a", {}), res("c", {}, "kubernetes:apps/v1:Deployment")]}
    md = diff_markdown(old, new)
    assert md.index("**c**") < md.index("**a**") < md.index("**b**")
    assert diff_markdown(old, new) == diff_markdown(old, {**new, "resources": list(reversed(new["resources"]))})
    changed = diff_markdown({"resources": [res("x", {"z": 1, "a": {"m": 1}})]},
                            {"resources": [res("x", {"z": 2, "a": {"m": 2, "n": 3}})]})
    assert changed.index("`a.m`") < changed.index("`a.n`") < changed.index("`z`")
    assert "| `a.n` | _(absent)_ | `3` |" in changed


def test_plan_diff_shows_a_sharing_profile_change_as_a_line_diff_of_the_configmap_yaml(cli, tmp_path):
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    head_text = text.replace("        replicas: 4 ", "        replicas: 6 ", 1)
    assert head_text != text
    base, head = project(tmp_path, "base", text), project(tmp_path, "head", head_text)
    assert cli("plan", "--stack", "dev", "--project-dir", base, "--out", tmp_path / "base-plan",
               "--no-policies").code == 0
    result = cli("plan", "--stack", "dev", "--project-dir", head, "--diff", tmp_path / "base-plan",
                 "--no-policies")
    assert result.code == 0, result.err
    configmap = result.out.split("**dev-sharing-configmap**")[1].split("\n- ")[0]
    block = configmap.split("  ```diff\n")[1].split("  ```\n")[0]
    lines = block.splitlines()
    assert "  --- data.t4-mps (old)" in lines and "  +++ data.t4-mps (new)" in lines
    assert "  -      replicas: 4" in lines and "  +      replicas: 6" in lines
    assert "  | field | old | new |" not in configmap  # the YAML is not squeezed into a table cell too


def test_long_values_that_differ_only_at_the_end_are_shown_in_full():
    prefix = "registry.example.com/" + "team/" * 40
    old, new = prefix + "model:v1", prefix + "model:v2"
    md = diff_markdown({"resources": [res("x", {"image": old})]}, {"resources": [res("x", {"image": new})]})
    assert f'| `"{old}"` | `"{new}"` |' in md


def test_a_multi_line_value_added_or_removed_is_a_line_diff_against_nothing():
    yaml_text = "version: v1\nsharing:\n  replicas: 4\n"
    added = diff_markdown({"resources": [res("x", {})]}, {"resources": [res("x", {"config": yaml_text})]})
    assert "```diff\n  --- config (old)\n  +++ config (new)\n  @@ -0,0 +1,3 @@\n  +version: v1\n" in added
    removed = diff_markdown({"resources": [res("x", {"config": yaml_text})]}, {"resources": [res("x", {})]})
    assert "  -  replicas: 4\n" in removed


def parsed_row(markdown: str) -> list:
    """The inline tokens of the first body row of the Markdown table, as GitHub-flavoured Markdown parses it."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    body = tokens[[t.type for t in tokens].index("tbody_open"):]
    row = body[:[t.type for t in body].index("tr_close")]
    return [t for t in row if t.type == "inline"]


def shown(cell) -> str:
    """What a reader sees in a cell: its text, with <br> as a line break."""
    return "".join("\n" if c.type in ("html_inline", "softbreak") else c.content for c in cell.children)


@settings(max_examples=150, deadline=None)
@given(value=st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")) | st.just("\n"), max_size=40))
def test_table_cells_stay_one_cell_and_show_the_value_as_written(value):
    one_line = value.replace("\n", " ")  # multi-line strings are line diffs, not cells
    md = diff_markdown({"resources": [res("x", {"v": 1})]}, {"resources": [res("x", {"v": one_line})]})
    row = next(line for line in md.splitlines() if line.startswith("  | `v`"))
    cells = parsed_row("| a | b | c |\n|---|---|---|\n" + row.strip() + "\n")
    assert [shown(c) for c in cells] == ["v", "1", json.dumps(one_line)]
    (message,) = parsed_row(f"| m |\n|---|\n| {markdown_cell(value)} |\n")
    assert shown(message).split() == value.split()
