"""`podsizer console`: serve the read-only web console (its settings come from the one loader)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from datetime import UTC, datetime

from podsizer.settings import ConsoleSettings, load_from_args
from podsizer.settings import add_arguments as add_settings_arguments
from podsizer.settings.names import where
from podsizer.untrusted import configure_logging


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The console flags: --console-port for PODSIZER_CONSOLE_PORT (also --port), and so on."""
    # the console decides the source itself when none is set (ConsoleSettings.chosen_source)
    add_settings_arguments(parser, ConsoleSettings, defaults={"source": "see --console-source"})


def run(args: argparse.Namespace) -> int:
    """Build the data from the chosen source (a failing source is an error here, never the demo instead),
    rebuild it in the background every console_refresh_seconds, serve until interrupted."""
    import uvicorn

    from console.app import create_console_app
    from console.refresh import RefreshingConsoleData
    from console.sources import ConsoleBuilder, build_inputs
    from recommender.model import SourceError
    from recommender.output.store.base import StoreError

    settings = load_from_args(ConsoleSettings, args)
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(name)s %(message)s")
    stop = threading.Event()
    try:
        inputs = build_inputs(settings, stop=stop)  # a SettingsError goes to the CLI
    except StoreError as exc:
        print(
            f"podsizer console: cannot read the store {settings.store} ({where('store')}): {exc}",
            file=sys.stderr,
        )
        return 1
    builder = ConsoleBuilder(inputs)
    try:
        data = RefreshingConsoleData(
            builder.build, lambda: settings.as_of or datetime.now(UTC), builder.recompose
        )
    except StoreError as exc:
        stop.set()
        print(
            f"podsizer console: cannot read the store {inputs.store_label} ({where('store')}): {exc}",
            file=sys.stderr,
        )
        return 1
    except (SourceError, OSError, ValueError) as exc:
        stop.set()
        _, field = settings.chosen_source()
        print(f"podsizer console: cannot read {inputs.source_label} ({where(field)}): {exc}", file=sys.stderr)
        return 1
    try:
        sock = listen(settings.console_host, settings.console_port)
    except OSError as exc:
        stop.set()
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        print(
            f"podsizer console: cannot listen on {settings.console_host}:{settings.console_port} "
            f"({where('console_host')}, {where('console_port')}): {why}",
            file=sys.stderr,
        )
        return 1
    data.start(settings.console_refresh_seconds, inputs.changes, stop)
    where_url = f"http://{settings.console_host}:{sock.getsockname()[1]}/"
    print(
        f"podsizer console: serving {inputs.source_label}, store {inputs.store_label}, "
        f"recommendations {data.meta().origin}, on {where_url}",
        flush=True,
    )
    config = uvicorn.Config(create_console_app(data.current), log_level="warning")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        stop.set()
        sock.close()
    return 0


def listen(host: str, port: int) -> socket.socket:
    """The console's listening socket, bound before it says it serves (a taken port is a clear error)."""
    return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
