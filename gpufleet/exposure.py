"""Who can reach a Service, and which env values must be secrets. Pure functions, no gpufleet imports,
shared by the config checks and the policy pack so that both decide the same way.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The annotation cloud providers read when spec.loadBalancerSourceRanges is empty.
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
_EVERYTHING = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


def parse_cidr(value: str) -> Network | None:
    """A source range as the API server reads loadBalancerSourceRanges (Go net.ParseCIDR after trimming
    spaces): an address, '/', a prefix length; host bits may be set (10.0.0.1/8 means 10.0.0.0/8).
    None when it is not a CIDR."""
    text = value.strip()
    if "/" not in text:
        return None
    address, _, prefix = text.partition("/")
    if not prefix.isascii() or not prefix.isdigit() or "%" in address:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def covers_everything(ranges: Iterable[str]) -> bool:
    """Whether the union of the CIDRs in `ranges` is all of IPv4 or all of IPv6 (unparseable entries
    are ignored): such a LoadBalancer is as public as one without source ranges."""
    nets = [n for n in (parse_cidr(r) for r in ranges) if n is not None]
    v4 = [n for n in nets if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in nets if isinstance(n, ipaddress.IPv6Network)]
    for everything in _EVERYTHING:
        # collapse_addresses takes one family; the two lists keep the networks' types apart for it
        covered: Iterator[Network] = ipaddress.collapse_addresses(v4) if everything.version == 4 \
            else ipaddress.collapse_addresses(v6)
        if everything in covered:
            return True
    return False


def split_annotation_ranges(value: str) -> list[str]:
    """The comma-separated CIDRs of the service.beta.kubernetes.io/load-balancer-source-ranges annotation."""
    return [part.strip() for part in value.split(",") if part.strip()]


def effective_source_ranges(field: Iterable[str], annotation: str | None) -> list[str]:
    """The source ranges a cloud load balancer applies: spec.loadBalancerSourceRanges when set, else the
    service.beta.kubernetes.io/load-balancer-source-ranges annotation."""
    ranges = [str(r) for r in field]
    if ranges or not annotation:
        return ranges
    return split_annotation_ranges(annotation)


def is_public(ranges: Iterable[str]) -> bool:
    """A LoadBalancer with these source ranges is reachable from anywhere: none are set, or they cover
    a whole address family."""
    ranges = list(ranges)
    return not ranges or covers_everything(ranges)


# ---- env values that must come from secrets ---------------------------------------------------------

#: Words that mark an env var as a credential, matched against the name split at '_', '-' and '.'.
SECRET_WORDS = frozenset({"TOKEN", "TOKENS", "PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "SECRETS", "KEY",
                          "APIKEY", "CREDENTIAL", "CREDENTIALS", "CREDS", "PRIVATE", "AUTH"})


def looks_secret(env_name: str) -> bool:
    """HF_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY, API_KEY: yes. KEYBOARD_LAYOUT, TOKENIZERS_PARALLELISM: no."""
    return any(word in SECRET_WORDS for word in re.split(r"[-_.]+", env_name.upper()))


def is_file_path(value: str) -> bool:
    """An absolute path such as /var/run/secrets/gcp/key.json: where a mounted credential lies, not one."""
    return re.fullmatch(r"/[\w./-]*", value) is not None


def literal_needs_secret(env_name: str, value: str) -> bool:
    """A literal env value that must come from a secret instead: a credential-like name, unless the value
    is only the path of a mounted file (GOOGLE_APPLICATION_CREDENTIALS=/var/secrets/key.json)."""
    return looks_secret(env_name) and not is_file_path(value)
