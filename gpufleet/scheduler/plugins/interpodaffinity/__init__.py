"""InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity).

The plugin loads with the profile; its terms, Filter (and failure reasons) and Score on first use (PEP 562),
when some pod's placement depends on the pods around it."""

from gpufleet.lazy import names_on_first_use
from gpufleet.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

_WHERE = {"AFFINITY": "filtering", "ANTI_AFFINITY": "filtering", "EXISTING_ANTI_AFFINITY": "filtering",
          "Term": "filtering", "Terms": "filtering", "filter_failures": "filtering",
          "merge_namespace_selectors": "filtering", "terms_of": "filtering", "score": "scoring"}

__all__ = ["InterPodAffinity", *sorted(_WHERE)]
__getattr__ = names_on_first_use(__name__, _WHERE)
