"""PodTopologySpread (pkg/scheduler/framework/plugins/podtopologyspread).

The plugin loads with the profile; its constraints, Filter (and failure reasons) and Score on first use
(PEP 562), when some pod of a check has constraints."""

from gpufleet.lazy import names_on_first_use
from gpufleet.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

_WHERE = {"MISSING_LABEL": "filtering", "NOT_MATCH": "filtering", "Constraint": "filtering",
          "constraints": "filtering", "filter_failures": "filtering", "score": "scoring"}

__all__ = ["PodTopologySpread", *sorted(_WHERE)]
__getattr__ = names_on_first_use(__name__, _WHERE)
