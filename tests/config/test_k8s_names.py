"""The name rules say what the API server says: same verdicts, same words (k8s.io/apimachinery validation)."""

from __future__ import annotations

import pytest

from gpufleet import k8s_names as kn
from gpufleet.exposure import covers_everything, is_public, literal_needs_secret, looks_secret, parse_cidr

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def test_rfc1123_label_error_is_the_api_servers_sentence():
    assert kn.dns1123_label_errors("My_NS") == [LABEL_MSG]
    assert kn.dns1123_label_errors("../../x") == [LABEL_MSG]


@pytest.mark.parametrize("value", ["a", "my-name", "123-abc", "x" * 63])
def test_rfc1123_label_accepts(value):
    assert kn.dns1123_label_errors(value) == []


def test_rfc1123_label_limits_and_dots():
    assert kn.dns1123_label_errors("x" * 64) == ["must be no more than 63 characters"]
    assert kn.dns1123_label_errors("a.b") == ["must not contain dots"]
    assert kn.dns1123_label_errors("-a") == [LABEL_MSG]


def test_subdomain_allows_dots_up_to_253():
    assert kn.dns1123_subdomain_errors("node-1.example.com") == []
    assert kn.dns1123_subdomain_errors("a" * 63 + "." + "b" * 63) == []
    assert "must be no more than 253 characters" in kn.dns1123_subdomain_errors(".".join(["a" * 63] * 4) + ".b")
    assert kn.dns1123_subdomain_errors("Node_1")[0].startswith("a lowercase RFC 1123 subdomain must consist")


def test_dns1035_label_must_start_with_a_letter():
    assert kn.dns1035_label_errors("web-1") == []
    (err,) = kn.dns1035_label_errors("1web")
    assert err.startswith("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                          "an alphabetic character")


@pytest.mark.parametrize("key", ["sku", "nvidia.com/gpu.product", "kubernetes.io/hostname", "My_Key.1"])
def test_qualified_name_accepts(key):
    assert kn.qualified_name_errors(key) == []


@pytest.mark.parametrize("key, problem", [
    ("/sku", "prefix part must be non-empty"),
    ("nvidia.com/", "name part must be non-empty"),
    ("Example.com/x", "prefix part a lowercase RFC 1123 subdomain"),
    ("a/b/c", "a qualified name must consist of alphanumeric characters"),
    ("x" * 64, "name part must be no more than 63 characters"),
    ("-x", "name part must consist of alphanumeric characters, '-', '_' or '.'"),
])
def test_qualified_name_refuses(key, problem):
    assert any(e.startswith(problem) for e in kn.qualified_name_errors(key)), kn.qualified_name_errors(key)


def test_label_values():
    assert kn.label_value_errors("") == []
    assert kn.label_value_errors("A100-PCIE-40GB-MIG-1g.5gb") == []
    assert kn.label_value_errors("x" * 64) == ["must be no more than 63 characters"]
    assert kn.label_value_errors("a b")[0].startswith("a valid label must be an empty string or consist of")


def test_env_var_names():
    assert kn.env_var_name_errors("MY_ENV.NAME") == [] and kn.env_var_name_errors("my.env-name") == []
    assert kn.env_var_name_errors("1X")[0].startswith("a valid environment variable name must consist of alphabetic "
                                                      "characters, digits, '_', '-', or '.', and must not start with a "
                                                      "digit")
    assert kn.env_var_name_errors("..x") == ["must not start with '..'"]


@pytest.mark.parametrize("name, problems", [
    ("http", []), ("port-8080", []),
    ("HTTP", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
              "must contain at least one letter (a-z)"]),
    ("web_1", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]),
    ("8080", ["must contain at least one letter (a-z)"]),
    ("a--b", ["must not contain consecutive hyphens"]),
    ("-a", ["must not begin or end with a hyphen"]),
    ("abcdefghijklmnop", ["must be no more than 15 characters"]),
])
def test_port_names(name, problems):
    assert kn.port_name_errors(name) == problems


@pytest.mark.parametrize("ref, parts", [
    ("nginx:1.27", ("nginx", "1.27", None)),
    ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
     ("nvcr.io/nvidia/k8s/cuda-sample", "vectoradd-cuda12.5.0", None)),
    ("localhost:5000/a/b_c__d:v1", ("localhost:5000/a/b_c__d", "v1", None)),
    ("registry.example.com/app@sha256:" + "a" * 64, ("registry.example.com/app", None, "sha256:" + "a" * 64)),
    ("app:v1@sha256:" + "0" * 64, ("app", "v1", "sha256:" + "0" * 64)),
])
def test_image_references_parse(ref, parts):
    assert kn.parse_image_reference(ref) == parts
    assert kn.image_reference_errors(ref) == []


@pytest.mark.parametrize("ref, problem", [
    ("nginx:", "invalid reference format"),
    ("Nginx:1.0", "repository name must be lowercase"),
    ("a:" + "x" * 129, "invalid reference format"),
    ("app@sha256:abc", "invalid reference format"),
    ("app@sha256:" + "a" * 40, "a sha256 digest has 64 hex digits, this one 40"),
    ("app@md5:" + "a" * 32, "unsupported digest algorithm 'md5'"),
    ("a/" + "b" * 260 + ":1", "repository name must not be more than 255 characters"),
    ("my image:1", "invalid reference format"),
])
def test_image_references_refused(ref, problem):
    assert any(problem in e for e in kn.image_reference_errors(ref)), kn.image_reference_errors(ref)


def test_cidrs_are_read_like_net_parse_cidr():
    assert str(parse_cidr("10.0.0.1/8")) == "10.0.0.0/8"  # host bits set: accepted, as the API server does
    assert str(parse_cidr(" 2001:db8::/32 ")) == "2001:db8::/32"
    assert parse_cidr("10.0.0.1") is None  # no prefix length: not a CIDR
    assert parse_cidr("10.0.0.0/33") is None and parse_cidr("example.com/8") is None


@pytest.mark.parametrize("ranges, public", [
    ([], True),
    (["0.0.0.0/0"], True),
    (["::/0"], True),
    (["0.0.0.0/1", "128.0.0.0/1"], True),
    (["10.0.0.0/8", "0.0.0.0/0"], True),
    (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"], True),
    (["10.0.0.0/8"], False),
    (["0.0.0.0/1"], False),
    (["0.0.0.0/1", "::/1", "8000::/2"], False),
])
def test_source_ranges_that_cover_an_address_family_are_public(ranges, public):
    assert is_public(ranges) is public
    assert covers_everything(ranges) is (public and bool(ranges))


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("DB_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True), ("API_KEY", True),
    ("github-token", True), ("MY_PRIVATE_CERT", True), ("BASIC_AUTH", True), ("GCP_CREDENTIALS", True),
    ("KEYBOARD_LAYOUT", False), ("TOKENIZERS_PARALLELISM", False), ("LOG_LEVEL", False), ("MONKEY", False),
])
def test_secret_looking_env_names(name, secret):
    assert looks_secret(name) is secret


def test_a_mounted_credential_file_path_is_not_a_literal_secret():
    assert not literal_needs_secret("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/gcp/key.json")
    assert literal_needs_secret("GOOGLE_APPLICATION_CREDENTIALS", '{"type": "service_account"}')
    assert literal_needs_secret("HF_TOKEN", "hf_abc/def")
