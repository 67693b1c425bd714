"""kube-scheduler v1.34's default score plugins, one module each as upstream lays them out.

Each works on numpy arrays over the nodes being scored (positions in the scheduler's node order), so one
scheduling cycle costs a few array operations whatever the fleet's size. WEIGHTS are the default
profile's (pkg/scheduler/apis/config/v1/default_plugins.go).
"""

WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
           "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
MAX_NODE_SCORE = 100
