"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources/): the plugin (`dynamic_resources`), a
pod's claims through the check (`claims`), CEL selectors as the DRA library compiles them (`cel`), and the
structured allocator behind one interface (`structured`, as k8s.io/dynamic-resource-allocation/structured).

Its names load on first use: the profile names the plugin for every check, and CEL and the allocator load only
for a check with claims."""

from gpufleet.lazy import names_on_first_use

__all__ = ["DynamicResources"]

__getattr__ = names_on_first_use(__name__, {"DynamicResources": "dynamic_resources"})
