"""The read-only web console: recommendations, GPU inventory, per-pod GPU usage, waste and cost."""

from console.app import create_console_app
from console.data import ConsoleData, StaticConsoleData

__all__ = ["ConsoleData", "StaticConsoleData", "create_console_app"]
