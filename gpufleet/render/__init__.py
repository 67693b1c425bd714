"""Pure rendering: a StackConfig in, chart values and Kubernetes manifests (plain dicts) out.

The Pulumi components and the Helm chart generator both build from these functions, so what Pulumi
deploys and what the generated chart installs are the same objects.
"""
