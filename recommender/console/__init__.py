"""The read-only web console: recommendations, GPU inventory, per-pod GPU usage, waste and cost."""

from recommender.console.app import create_console_app
from recommender.console.data import ConsoleData, StaticConsoleData

__all__ = ["ConsoleData", "StaticConsoleData", "create_console_app"]
