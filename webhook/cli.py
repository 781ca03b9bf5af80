"""`podsizer webhook`: settings from PODSIZER_ variables and flags, the store loader, caches, TLS, uvicorn."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from certs.reload import ReloadingTLS
from webhook.app import create_app
from webhook.cluster import MetadataCache, OwnerCache, start_cluster_watches
from webhook.file_store import FileStoreLoader
from webhook.modes import MetadataLookup, NoMetadata
from webhook.server import serve
from webhook.settings import SettingsError, WebhookSettings, env_name, flag_name, load_settings
from webhook.store import SnapshotHolder

log = logging.getLogger("podsizer.webhook")
DEST_PREFIX = "webhook_"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; unset flags fall back to the PODSIZER_ variable, then the default."""
    for name, info in WebhookSettings.model_fields.items():
        default = info.default
        parser.add_argument(
            flag_name(name),
            dest=DEST_PREFIX + name,
            default=None,
            metavar=name.upper(),
            help=f"{info.description} (env {env_name(name)}, default {default})",
        )


def settings_from_args(args: argparse.Namespace) -> WebhookSettings:
    overrides: dict[str, object] = {}
    for key, value in vars(args).items():
        if key.startswith(DEST_PREFIX) and value is not None:
            overrides[key[len(DEST_PREFIX) :]] = value
    return load_settings(overrides)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def run(args: argparse.Namespace) -> int:
    """Start the webhook and serve until stopped; exit status 2 on bad configuration."""
    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"podsizer webhook: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        tls = ReloadingTLS(settings.tls_cert_file, settings.tls_key_file, settings.tls_reload_interval)
    except (OSError, ValueError) as exc:
        print(
            f"podsizer webhook: cannot load the serving certificate ({env_name('tls_cert_file')}="
            f"{settings.tls_cert_file}, {env_name('tls_key_file')}={settings.tls_key_file}): {exc}",
            file=sys.stderr,
        )
        return 2
    holder = SnapshotHolder()
    owners = OwnerCache()
    metadata: MetadataLookup = NoMetadata()
    stop = threading.Event()
    file_loader: FileStoreLoader | None = None
    if settings.store == "file":
        file_loader = FileStoreLoader(settings.store_file, holder, _utcnow, settings.store_poll_interval)
        file_loader.start()
    else:
        from kubernetes import client, config

        try:
            if settings.kubeconfig is not None:
                config.load_kube_config(config_file=str(settings.kubeconfig))
            else:
                config.load_incluster_config()
        except Exception as exc:
            print(
                f"podsizer webhook: cannot configure the Kubernetes client ({env_name('kubeconfig')}="
                f"{settings.kubeconfig}): {exc}",
                file=sys.stderr,
            )
            return 2
        cache = MetadataCache()
        metadata = cache
        start_cluster_watches(client.ApiClient(), holder, owners, cache, _utcnow, stop)
    app = create_app(settings, holder, owners, CollectorRegistry(), _utcnow, metadata)
    try:
        serve(app, settings.host, settings.port, tls, settings.log_level, settings.access_log)
    finally:
        stop.set()
        if file_loader is not None:
            file_loader.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: `python -m webhook [flags]`."""
    parser = argparse.ArgumentParser(prog="podsizer webhook", description="podsizer admission webhook")
    add_arguments(parser)
    return run(parser.parse_args(argv))
