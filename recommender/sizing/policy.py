"""SizingPolicy lives in the core (podsizer.sizing_policy) so the one settings loader can default to it."""

from podsizer.sizing_policy import SizingPolicy

__all__ = ["SizingPolicy"]
