"""Kubernetes name formats, with the API server's wording (apimachinery's validation helpers).

Each function returns the list of reasons a value is invalid (empty when valid), as the API server's
`IsDNS1123Label` & co. do; callers prefix them with the field and value (`fields.invalid`). Pure, no
gpufleet imports: usable by any layer (the stack config validates names with the same rules).
"""

from __future__ import annotations

import re

LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN_FMT = LABEL_FMT + r"(\." + LABEL_FMT + ")*"
DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_FMT + ")?"
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"

_LABEL = re.compile(LABEL_FMT)
_SUBDOMAIN = re.compile(SUBDOMAIN_FMT)
_DNS1035 = re.compile(DNS1035_FMT)
_QUALIFIED = re.compile(QUALIFIED_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)
_CONFIG_KEY = re.compile(CONFIG_KEY_FMT)
_PORT_NAME = re.compile("[-a-z0-9]+")


def max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """The API server's `RegexError`: the rule, examples, and the regular expression it uses."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}'" for e in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{fmt}')"


def _full(pattern: re.Pattern, value: str) -> bool:
    return pattern.fullmatch(value) is not None


def dns1123_label(value: str) -> list[str]:
    """RFC 1123 label: namespace names, container names, port names of Services."""
    errors = [max_len(63)] if len(value) > 63 else []
    if not _full(_LABEL, value):
        if _full(_SUBDOMAIN, value):
            errors.append("must not contain dots")
        else:
            errors.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                      "or '-', and must start and end with an alphanumeric character",
                                      LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: the names of most objects (Pod, Deployment, ConfigMap, ...)."""
    errors = [max_len(253)] if len(value) > 253 else []
    if not _full(_SUBDOMAIN, value):
        errors.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                  "characters, '-' or '.', and must start and end with an alphanumeric character",
                                  SUBDOMAIN_FMT, "example.com"))
    return errors


def dns1035_label(value: str) -> list[str]:
    """RFC 1035 label: Service names (they become DNS names and environment variables)."""
    errors = [max_len(63)] if len(value) > 63 else []
    if not _full(_DNS1035, value):
        errors.append(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                                  "start with an alphabetic character, and end with an alphanumeric character",
                                  DNS1035_FMT, "my-name", "abc-123"))
    return errors


_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")


def qualified_name(value: str) -> list[str]:
    """Label keys and annotation keys: an optional DNS subdomain prefix and '/', then a name of 63 at most."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + e for e in dns1123_subdomain(prefix)]
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_MSG, QUALIFIED_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + max_len(63))
    if not _full(_QUALIFIED, name):
        errors.append("name part " + regex_error(_QUALIFIED_MSG, QUALIFIED_FMT, "MyName", "my.name", "123-abc"))
    return errors


def label_value(value: str) -> list[str]:
    errors = [max_len(63)] if len(value) > 63 else []
    if not _full(_LABEL_VALUE, value):
        errors.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                                  "'-', '_' or '.', and must start and end with an alphanumeric character",
                                  LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def config_key(value: str) -> list[str]:
    """Keys of ConfigMap and Secret data."""
    errors = [max_len(253)] if len(value) > 253 else []
    if not _full(_CONFIG_KEY, value):
        errors.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                  CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def port_name(value: str) -> list[str]:
    """IANA service names, as container port names must be."""
    errors = [max_len(15)] if len(value) > 15 else []
    if not _full(_PORT_NAME, value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors
