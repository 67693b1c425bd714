"""Offline validation of Kubernetes manifests: the JSON schemas of one version (kubernetes-validate, strict)
plus the API server's own rules (names, required fields, uniqueness, quantities).

`names` and `fields` are pure and light; the schema machinery loads only when `validate_*` is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpufleet.validation.kube import Problem, validate_documents, validate_paths

__all__ = ["Problem", "validate_documents", "validate_paths"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gpufleet.validation import kube

        return getattr(kube, name)
    raise AttributeError(name)
