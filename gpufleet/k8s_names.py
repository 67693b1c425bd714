"""The API server's rules for names, label keys and values, env var names and port names, and the OCI
image reference grammar. Pure functions, no gpufleet imports: every layer may use them.

Each `*_errors(value)` returns the problems the Kubernetes API server (k8s.io/apimachinery
pkg/util/validation) would report for `value`, worded as it words them; an empty list means valid.
"""

from __future__ import annotations

import re
from functools import cache

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
PORT_NAME_MAX = 15
INT32_MAX = 2**31 - 1


@cache
def _full(fmt: str, flags: int = 0) -> re.Pattern[str]:
    """The pattern matching all of a value, compiled on first use (a command that checks no names compiles
    none)."""
    return re.compile(f"^(?:{fmt})$", flags)


def max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """The API server's wording: the rule, examples, then the regex (apimachinery RegexError)."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')" if examples else \
        f"{msg} (regex used for validation is '{fmt}')"


def dns1123_label_errors(value: str) -> list[str]:
    """Namespaces, Service-less object names, label-limited names: lowercase RFC 1123 label, <= 63."""
    errs = [max_len(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    if not _full(DNS1123_LABEL_FMT).match(value):
        if _full(DNS1123_SUBDOMAIN_FMT).match(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                                     "characters or '-', and must start and end with an alphanumeric character",
                                     DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Most object names (Deployments, Jobs, Secrets, Nodes): lowercase RFC 1123 subdomain, <= 253."""
    errs = [max_len(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _full(DNS1123_SUBDOMAIN_FMT).match(value):
        errs.append(_regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                 "characters, '-' or '.', and must start and end with an alphanumeric character",
                                 DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """Service names: a DNS-1035 label (starts with a letter), <= 63."""
    errs = [max_len(DNS1035_LABEL_MAX)] if len(value) > DNS1035_LABEL_MAX else []
    if not _full(DNS1035_LABEL_FMT).match(value):
        errs.append(_regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                                 "start with an alphabetic character, and end with an alphanumeric character",
                                 DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character")


def qualified_name_errors(value: str) -> list[str]:
    """Label, annotation and taint keys: an optional DNS subdomain prefix and '/', then a name <= 63."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {m}" for m in dns1123_subdomain_errors(prefix)]
    else:
        return ["a qualified name " + _regex_error(_QNAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append(f"name part {max_len(QUALIFIED_NAME_MAX)}")
    if not _full(QUALIFIED_NAME_FMT).match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """Label values (also taint values and nodeSelector values): empty, or <= 63 with alphanumeric ends."""
    errs = [max_len(LABEL_VALUE_MAX)] if len(value) > LABEL_VALUE_MAX else []
    if not _full(LABEL_VALUE_FMT).match(value):
        errs.append(_regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                                 "'-', '_' or '.', and must start and end with an alphanumeric character",
                                 LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _chdir_prefix_errors(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def env_var_name_errors(value: str) -> list[str]:
    """Container env var names as the API server validates them without relaxed env var validation."""
    errs = []
    if not _full(ENV_VAR_NAME_FMT).match(value):
        errs.append(_regex_error("a valid environment variable name must consist of alphabetic characters, "
                                 "digits, '_', '-', or '.', and must not start with a digit",
                                 ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _chdir_prefix_errors(value)


def config_map_key_errors(value: str) -> list[str]:
    """Keys of ConfigMap and Secret data."""
    errs = [max_len(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _full(CONFIG_MAP_KEY_FMT).match(value):
        errs.append(_regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                 CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _chdir_prefix_errors(value)


def port_name_errors(value: str) -> list[str]:
    """Container and Service port names (IANA_SVC_NAME)."""
    errs = [max_len(PORT_NAME_MAX)] if len(value) > PORT_NAME_MAX else []
    if not re.fullmatch(r"[-a-z0-9]+", value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value[:1] == "-" or value[-1:] == "-":
        errs.append("must not begin or end with a hyphen")
    return errs


# ---- image references (the distribution/reference grammar) ----------------------------------------

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = f"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
TAG_FMT = r"[\w][\w.-]{0,127}"
DIGEST_FMT = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE_FMT = (rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
                  rf"(?::(?P<tag>{TAG_FMT}))?(?:@(?P<digest>{DIGEST_FMT}))?")
NAME_TOTAL_MAX = 255
#: Hex lengths of the digest algorithms registries accept (opencontainers/go-digest).
DIGEST_HEX_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
IMAGE_REFERENCE_RULE = ("[registry[:port]/]path[:tag][@algorithm:hex], path components lowercase letters and "
                        "digits separated by '.', '_', '__' or '-', tag [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def parse_image_reference(value: str) -> tuple[str, str | None, str | None] | None:
    """(name, tag, digest) of a valid image reference, else None."""
    m = _full(_REFERENCE_FMT, re.ASCII).match(value)
    if m is None:
        return None
    return m["name"], m["tag"], m["digest"]


def image_reference_errors(value: str) -> list[str]:
    """Problems with an image reference as container runtimes parse it; [] when it is valid."""
    parsed = parse_image_reference(value)
    if parsed is None:
        if value != value.lower() and parse_image_reference(value.lower()) is not None:
            return ["repository name must be lowercase"]
        return [f"invalid reference format; allowed: {IMAGE_REFERENCE_RULE}"]
    name, _, digest = parsed
    errs = []
    if len(name) > NAME_TOTAL_MAX:
        errs.append(f"repository name must not be more than {NAME_TOTAL_MAX} characters")
    if digest is not None:
        algorithm, _, hexpart = digest.partition(":")
        want = DIGEST_HEX_LENGTHS.get(algorithm)
        if want is None:
            errs.append(f"unsupported digest algorithm '{algorithm}'; allowed: {', '.join(DIGEST_HEX_LENGTHS)}")
        elif len(hexpart) != want:
            errs.append(f"a {algorithm} digest has {want} hex digits, this one {len(hexpart)}")
    return errs
