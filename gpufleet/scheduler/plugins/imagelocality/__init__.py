"""ImageLocality (pkg/scheduler/framework/plugins/imagelocality/image_locality.go)."""

from gpufleet.scheduler.plugins.imagelocality.image_locality import ImageLocality, ImageStates, normalized_image_name

__all__ = ["ImageLocality", "ImageStates", "normalized_image_name"]
