"""kube-scheduler v1.34's in-tree plugins that gpufleet emulates, one folder each as upstream lays them out
(pkg/scheduler/framework/plugins/<name>/): each folder holds the plugin's filter, its score and what it
reads of a pod and a node (its signature fragment). The default profile, their order and weights, is
`default_plugins`; the runtime that calls them is gpufleet.scheduler.framework.
"""
