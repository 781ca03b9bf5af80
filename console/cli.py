"""`podsizer console`: serve the read-only web console (its settings come from the one loader)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from podsizer.settings import ConsoleSettings, load_from_args
from podsizer.settings import add_arguments as add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The console flags: --console-port for PODSIZER_CONSOLE_PORT (also --port), and so on."""
    add_settings_arguments(parser, ConsoleSettings)


def run(args: argparse.Namespace) -> int:
    """Build the data once, then serve it until interrupted; returns the exit status."""
    import uvicorn

    from console.app import create_console_app
    from console.demo import DemoConsoleData

    settings = load_from_args(ConsoleSettings, args)
    data = DemoConsoleData.build(datetime.now(UTC), plan_policy=settings.plan_policy())
    where = f"http://{settings.console_host}:{settings.console_port}/"
    print(f"podsizer console: serving the {settings.console_source} data on {where}", flush=True)
    uvicorn.run(
        create_console_app(data), host=settings.console_host, port=settings.console_port, log_level="warning"
    )
    return 0
