"""podsizer updater: brings running pods to their recommendation (in-place resize or PDB-safe eviction)."""
