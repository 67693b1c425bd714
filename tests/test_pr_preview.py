"""scripts/pr-preview on real checkouts: a git repository of the project's files, the base commit and a
head commit per kind of pull request, each checked out with `git worktree add`."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT
from doc_examples import block_containing, copy_working_tree

SCRIPT = Path("scripts") / "pr-preview"
SENTINEL = "v1:AAABAPRSENTINELsecretvalue0123456789"
GIT = ["git", "-c", "user.name=gpufleet tests", "-c", "user.email=tests@gpufleet.invalid",
       "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
GREEDY = """\
    - kind: inference
      name: greedy-trainer
      namespace: greed
      image: nvcr.io/nvidia/pytorch:25.08-py3
      gpu: {count: 101}
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The project's files (tracked and new, as in this working tree) committed as `main`: the base."""
    root = copy_working_tree(tmp_path_factory.mktemp("pr") / "base")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def pull_request(repo: Path, name: str, edit=None) -> Path:
    """A head checkout: a branch off main with `edit(checkout)` committed, checked out in its own worktree."""
    head = repo.parent / name
    git(repo, "worktree", "add", "-q", "-b", name, str(head), "main")
    if edit is not None:
        edit(head)
        git(head, "add", "-A")
        git(head, "commit", "-q", "-m", name)
    return head


def edit_dev(fn):
    def edit(checkout: Path) -> None:
        path = checkout / "Pulumi.dev.yaml"
        path.write_text(fn(path.read_text()))
    return edit


@dataclass
class Preview:
    code: int
    markdown: str
    err: str

    def section(self, stack: str) -> str:
        return self.markdown.split(f"### Stack `{stack}`")[1].split("\n### Stack ")[0]


def pr_preview(base: Path, head: Path, *args: str) -> Preview:
    """Run the head's copy of the script, as the workflow does (no PYTHONPATH: it finds the code itself)."""
    out = head.parent / f"{head.name}-comment.md"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, str(head / SCRIPT), "--base", str(base), "--head", str(head),
                             "--out", str(out), *args], capture_output=True, text=True, env=env, timeout=300)
    markdown = out.read_text() if out.exists() else ""
    return Preview(result.returncode, markdown, result.stderr)


def more_replicas(text: str) -> str:
    """my-infer2 at 2 replicas: 2 + 1 + 1 is exactly the T4's four MPS shares."""
    return text.replace("      name: my-infer2\n", "      name: my-infer2\n      replicas: 2\n", 1)


def test_unchanged_pull_request_says_no_changes_and_passes(repo):
    head = pull_request(repo, "unchanged")
    result = pr_preview(repo, head, "--stacks", "dev")
    assert result.code == 0, result.err
    assert result.markdown.startswith("<!-- gpufleet-plan -->\n")
    assert "| `dev` | no changes | passed |" in result.markdown
    assert "\nNo changes.\n" in result.section("dev")
    assert "policies, no violations." in result.section("dev")


def test_replicas_change_shows_old_and_new_value_and_never_the_secret(repo):
    def change(text: str) -> str:
        return more_replicas(text) + f"  gpufleet:notebookToken:\n    secure: {SENTINEL}\n"

    head = pull_request(repo, "replicas", edit_dev(change))
    result = pr_preview(repo, head, "--stacks", "dev")
    assert result.code == 0, result.err
    dev = result.section("dev")
    assert "**0 to add, 1 to change, 0 to remove**" in dev
    assert "**dev-myasetest1-my-infer2-deployment** (my-infer2)" in dev
    assert "  | `spec.replicas` | `1` | `2` |" in dev
    assert "my-infer3" not in dev.split("#### Changed")[1].split("#### Policies")[0]
    assert SENTINEL not in result.markdown and "SENTINEL" not in result.err


def test_mandatory_violation_is_listed_and_fails_the_pull_request(repo):
    head = pull_request(repo, "greedy", edit_dev(lambda t: t + GREEDY))
    result = pr_preview(repo, head, "--stacks", "dev")
    assert result.code == 1, result.err
    assert "The head **fails**: a mandatory policy is violated." in result.markdown
    assert "| `dev` | 3 to add, 0 to change, 0 to remove | **1 mandatory violation** |" in result.markdown
    policies = result.section("dev").split("#### Policies")[1]
    row = next(line for line in policies.splitlines() if "gpu-capacity-fit" in line)
    assert row.startswith("| mandatory | `gpu-capacity-fit` | `kubernetes:apps/v1:Deployment "
                          "dev-greed-greedy-trainer-deployment` | ")
    assert "requests 101 nvidia.com/gpu" in row and "Insufficient nvidia.com/gpu" in row
    assert "`kubernetes:apps/v1:Deployment` **dev-greed-greedy-trainer-deployment**" in result.section("dev")


def broken(text: str) -> str:
    return text.replace("gpufleet:mode: operator", "gpufleet:mode: operatr", 1)


def test_config_error_in_head_exits_2_and_shows_the_error_line(repo):
    head = pull_request(repo, "config-error", edit_dev(broken))
    result = pr_preview(repo, head, "--stacks", "dev")
    assert result.code == 2
    error = ("Pulumi.dev.yaml:7: gpufleet:mode: Input should be 'operator', 'standalone' or 'platform-managed'; "
             'got "operatr"')
    dev = result.section("dev")
    assert f"```text\n{error}\n```" in dev
    assert "| `dev` | **config error** | not run |" in result.markdown
    assert "Traceback" not in result.markdown + result.err
    assert error in result.err


def test_broken_base_does_not_fail_the_fix_and_is_diffed_against_nothing(repo):
    base = pull_request(repo, "broken-base", edit_dev(broken))
    fix = pull_request(repo, "fix")  # main: the pull request that repairs the stack
    result = pr_preview(base, fix, "--stacks", "dev")
    assert result.code == 0, result.err
    dev = result.section("dev")
    assert "The base does not plan, so this is compared with an empty plan:" in dev
    assert "gpufleet:mode: Input should be" in dev
    assert "to add, 0 to change, 0 to remove**" in dev and "#### Removed" not in dev


def test_renamed_stack_is_all_removed_under_the_old_name_and_all_added_under_the_new(repo):
    head = pull_request(repo, "renamed", lambda c: (c / "Pulumi.dev.yaml").rename(c / "Pulumi.edge.yaml"))
    listed = subprocess.run([sys.executable, str(head / SCRIPT), "--base", str(repo), "--head", str(head),
                             "--list-stacks"], capture_output=True, text=True)
    assert listed.stdout.split() == ["aks", "dev", "dra", "edge", "k3s", "mig", "multi"]  # greed and llm are left out
    result = pr_preview(repo, head, "--stacks", "dev,edge")
    assert result.code == 0, result.err
    removed, added = result.section("dev"), result.section("edge")
    assert "Stack removed: everything is removed." in removed and "#### Added" not in removed
    assert "`kubernetes:apps/v1:Deployment` **dev-myasetest1-my-infer2-deployment**" in removed
    assert "#### Policies" not in removed
    assert "New stack: everything is added." in added and "#### Removed" not in added
    assert "`kubernetes:apps/v1:Deployment` **edge-myasetest1-my-infer2-deployment**" in added
    gone = [line for line in removed.split("#### Removed")[1].splitlines() if line.startswith("- ")]
    assert f"| `dev` | stack removed: 0 to add, 0 to change, {len(gone)} to remove | - |" in result.markdown
    assert f"| `edge` | new stack: {len(gone)} to add, 0 to change, 0 to remove | passed |" in result.markdown


def test_unknown_stack_or_existing_output_is_refused_with_exit_2(repo, tmp_path):
    existing = tmp_path / "comment.md"
    existing.write_text("someone else's file")
    result = subprocess.run([sys.executable, str(repo / SCRIPT), "--base", str(repo), "--head", str(repo),
                             "--stacks", "nosuch", "--out", str(existing)], capture_output=True, text=True)
    assert result.returncode == 2
    assert f"pr-preview: --out {existing}: already exists" in result.stderr
    assert "pr-preview: --stacks: no Pulumi.nosuch.yaml in" in result.stderr
    assert existing.read_text() == "someone else's file"


def test_reports_draw_the_head_fleet_map_and_its_summary_goes_into_the_comment(repo):
    head = pull_request(repo, "fleet")
    reports = head.parent / "fleet-reports"
    result = pr_preview(repo, head, "--stacks", "dev", "--reports", str(reports))
    assert result.code == 0, result.err
    page = (reports / "dev.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "<svg" in page
    fleet = result.section("dev").split("#### Fleet (head)")[1].split("#### Policies")[0]
    assert "my-infer2" in page and "MPS" in page
    assert "|" in fleet and "GPU" in fleet  # the per-pool table: GPUs used / free


def test_reports_directory_that_holds_files_is_refused(repo, tmp_path):
    (tmp_path / "mine.html").write_text("keep me")
    result = subprocess.run([sys.executable, str(repo / SCRIPT), "--base", str(repo), "--head", str(repo),
                             "--stacks", "dev", "--reports", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2
    assert f"pr-preview: --reports {tmp_path}: exists and is not an empty directory" in result.stderr
    assert (tmp_path / "mine.html").read_text() == "keep me"


@pytest.mark.parametrize("on_branch", [False, True], ids=["edit-on-main", "commit-on-branch"])
def test_the_readme_steps_preview_a_change_as_written_in_a_fresh_clone(repo, tmp_path, on_branch):
    """The README's block for a local preview, taken from the README and run as it is written, in a fresh clone
    (main checked out there) with a change to a stack, left in main's working tree or committed on a branch:
    the comment, the fleet map and the diff it prints all show the change, and the base's worktree is gone."""
    steps = block_containing(ROOT / "README.md", "scripts/pr-preview --base").text
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    if on_branch:
        git(clone, "checkout", "-q", "-b", "more-replicas")
    edit_dev(more_replicas)(clone)
    if on_branch:
        git(clone, "commit", "-q", "-am", "more replicas")
    (clone / ".venv").symlink_to(ROOT / ".venv")  # what `make plan` creates, ignored by git as there
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "TMPDIR": str(temp)}
    done = subprocess.run(["bash", "-e", "-c", steps], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    (base,) = temp.iterdir()  # mktemp's directory holds everything the steps wrote
    comment = (base / "comment.md").read_text()
    assert "| `dev` | 0 to add, 1 to change, 0 to remove | passed" in comment
    assert "  | `spec.replicas` | `1` | `2` |" in comment
    assert "my-infer2" in (base / "fleet" / "dev.html").read_text()
    assert "| `spec.replicas` | `1` | `2` |" in done.stdout  # plan --diff against the base's plan
    assert len(git(clone, "worktree", "list").splitlines()) == 1 and not (base / "main").exists()
