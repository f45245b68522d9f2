"""nativehost package."""
