"""Raw per-pod samples and their aggregation into the usage model (demo, file and benchmark paths)."""
