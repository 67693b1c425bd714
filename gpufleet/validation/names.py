"""Kubernetes name formats for `gpufleet validate`, in the API server's words.

The rules live once, in `gpufleet.k8s_names` (the stack config checks names with them too); this module
gives them the short names the API-server rules in `apiserver.py` use. Each returns the reasons a value is
invalid (empty when valid); callers prefix the field and value (`fields.invalid`).
"""

from __future__ import annotations

from gpufleet.k8s_names import (
    config_map_key_errors as config_key,
)
from gpufleet.k8s_names import (
    dns1035_label_errors as dns1035_label,
)
from gpufleet.k8s_names import (
    dns1123_label_errors as dns1123_label,
)
from gpufleet.k8s_names import (
    dns1123_subdomain_errors as dns1123_subdomain,
)
from gpufleet.k8s_names import (
    label_value_errors as label_value,
)
from gpufleet.k8s_names import (
    max_len,
)
from gpufleet.k8s_names import (
    port_name_errors as port_name,
)
from gpufleet.k8s_names import (
    qualified_name_errors as qualified_name,
)

__all__ = ["config_key", "dns1035_label", "dns1123_label", "dns1123_subdomain", "label_value", "max_len",
           "port_name", "qualified_name"]
