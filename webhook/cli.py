"""`podsizer webhook`: the store loader, caches, TLS and uvicorn, configured by the one settings loader."""

from __future__ import annotations

import argparse
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from podsizer.cluster import MetadataCache, OwnerCache, start_cluster_watches
from podsizer.kube.client import kube_api_client
from podsizer.modes import MetadataLookup, NoMetadata
from podsizer.settings import WebhookSettings, load_from_args, run_reporting_errors, setting_error
from podsizer.settings import add_arguments as add_settings_arguments
from podsizer.snapshot import SnapshotHolder
from podsizer.untrusted import configure_logging
from webhook.app import create_app, refused_calls
from webhook.certwatch import watch_certificate
from webhook.file_store import FileStoreLoader
from webhook.server import connection_limits, reloading_tls, serve

log = logging.getLogger("podsizer.webhook")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; unset flags fall back to the PODSIZER_ variable, then the default."""
    add_settings_arguments(parser, WebhookSettings)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def run(args: argparse.Namespace) -> int:
    """Start the webhook and serve until stopped; SettingsError (exit status 2) on bad configuration."""
    settings = load_from_args(WebhookSettings, args)
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        tls = reloading_tls(settings)
    except (OSError, ValueError) as exc:
        msg = f"cannot load {settings.tls_cert_file} with the key {settings.tls_key_file}"
        if settings.client_ca_file is not None:
            msg += f" and the client CA {settings.client_ca_file}"
        raise setting_error("tls_cert_file", f"{msg}: {exc}") from exc
    holder = SnapshotHolder(cluster_name=settings.cluster_name)
    owners = OwnerCache()
    metadata: MetadataLookup = NoMetadata()
    stop = threading.Event()
    file_loader: FileStoreLoader | None = None
    if settings.store == "json":
        file_loader = FileStoreLoader(
            settings.store_file,
            holder,
            _utcnow,
            settings.store_poll_interval,
            settings.store_file_max_bytes,
        )
        file_loader.start()
    else:
        cache = MetadataCache()
        metadata = cache
        start_cluster_watches(kube_api_client(settings.kubeconfig), holder, owners, cache, _utcnow, stop)
    registry = CollectorRegistry()
    watch_certificate(tls, registry, stop, _utcnow)
    app = create_app(settings, holder, owners, registry, _utcnow, metadata)
    try:
        limits = connection_limits(settings, refused_calls(app))
        serve(app, settings.host, settings.port, tls, settings.log_level, settings.access_log, limits)
    finally:
        stop.set()
        if file_loader is not None:
            file_loader.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: `python -m webhook [flags]`."""
    parser = argparse.ArgumentParser(prog="podsizer webhook", description="podsizer admission webhook")
    add_arguments(parser)
    return run_reporting_errors("webhook", run, parser.parse_args(argv))
