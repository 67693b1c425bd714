"""Where the toolkit reads containerd's config from (cluster.runtime.configSource, RUNTIME_CONFIG_SOURCE) against
where the distribution keeps it: MicroK8s's template and generated file, AKS's containerd 2.x config. A mismatch
is a warning at the path, with what happens on the cluster and the fix; the presets as shipped raise none."""

from __future__ import annotations

from tests.config.test_warns_what_gpufleet_cannot_render import sections, warnings_of


def _source(found: list[str]) -> list[str]:
    return [w for w in found if "RUNTIME_CONFIG_SOURCE" in w]


def test_microk8s_preset_as_shipped_reads_the_generated_file_and_edits_the_template():
    assert _source(warnings_of(sections(cluster={"runtime": {"preset": "microk8s"}}))) == []


def test_microk8s_with_the_generated_file_as_config_path_is_warned_at_that_path():
    (w,) = _source(warnings_of(sections(cluster={"runtime": {
        "preset": "microk8s", "configPath": "/var/snap/microk8s/current/args/containerd.toml"}})))
    assert w.startswith("gpufleet:cluster.runtime.configPath: MicroK8s regenerates containerd's config")
    assert "no runtime for \"nvidia\"" in w and "fix: leave cluster.runtime.configPath and configSource" in w


def test_microk8s_reading_the_template_is_warned_at_config_source():
    (w,) = _source(warnings_of(sections(cluster={"runtime": {"preset": "microk8s", "configSource": "command"}})))
    assert w.startswith("gpufleet:cluster.runtime.configSource: MicroK8s regenerates")


def test_an_operator_without_the_toolkit_is_not_judged():
    found = warnings_of(sections(cluster={"runtime": {"preset": "microk8s", "configSource": "command"}},
                                 operator={"toolkit": {"enabled": False}}))
    assert _source(found) == []


def test_aks_without_config_source_file_is_warned_and_the_shipped_aks_stack_sets_it():
    import yaml

    from gpufleet.config.loading import parse_sections
    from gpufleet.config.stack_warnings import stack_warnings
    from tests.conftest import ROOT

    doc = yaml.safe_load((ROOT / "Pulumi.aks.yaml").read_text())["config"]
    shipped = {k.split(":", 1)[1]: v for k, v in doc.items() if k.startswith("gpufleet:")}
    assert _source([f"{i.path}: {i.message}" for i in stack_warnings(parse_sections(shipped, "Pulumi.aks.yaml"))]) == []
    del shipped["cluster"]["runtime"]["configSource"]
    found = [f"{i.path}: {i.message}" for i in stack_warnings(parse_sections(shipped, "Pulumi.aks.yaml"))]
    (w,) = [w for w in found if "containerd 2.x" in w]
    assert w.startswith("gpufleet:cluster.runtime.configSource: AKS node images run containerd 2.x")
    assert w.endswith("fix: cluster.runtime.configSource: file")
