"""Offline schema validation of Kubernetes manifests (kubernetes-validate's JSON schemas, strict)."""

from gpufleet.validation.kube import Problem, validate_documents, validate_paths

__all__ = ["Problem", "validate_documents", "validate_paths"]
