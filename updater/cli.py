"""`podsizer updater`: watches, leader election, /metrics and the pass loop, from the one settings loader."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from prometheus_client import CollectorRegistry, start_http_server

from podsizer.cluster import MetadataCache, OwnerCache, start_cluster_watches
from podsizer.kube.client import kube_api_client
from podsizer.kube.watch import Informer
from podsizer.leader import AlwaysLeader, LeaderElector, Leadership, LeaseApi
from podsizer.settings import UpdaterSettings, load_from_args, setting_error
from podsizer.settings import add_arguments as add_settings_arguments
from podsizer.snapshot import SnapshotHolder
from podsizer.untrusted import configure_logging
from updater.budget import Budgets
from updater.decide import UpdaterPolicy
from updater.kube import KubeApi
from updater.loop import Updater, UpdaterConfig
from updater.metrics import UpdaterMetrics
from updater.pdb import PdbCache
from updater.pods import PodCache
from updater.record import Recorder
from updater.threshold import Threshold

log = logging.getLogger("podsizer.updater")
# The watches a pass needs listed first (the rest, e.g. a CRD that is not installed, may never list).
_MUST_SYNC = (
    "pods",
    "recommendations",
    "replicasets",
    "namespaces",
    "deployments",
    "statefulsets",
    "daemonsets",
    "poddisruptionbudgets",
)
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; unset flags fall back to the PODSIZER_ variable, then the default."""
    add_settings_arguments(parser, UpdaterSettings)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def watches_synced(informers: Sequence[Informer]) -> bool:
    """Whether every watch a pass needs (_MUST_SYNC) has listed: the updater acts only then."""
    return all(i.synced.is_set() for i in informers if i.name in _MUST_SYNC)


def config_of(settings: UpdaterSettings) -> UpdaterConfig:
    """The updater's configuration from its settings (the plan policy: the same as every role's)."""
    policy = UpdaterPolicy(
        settings.plan_policy(),
        Threshold(settings.update_threshold, settings.update_use_band),
        Budgets(
            settings.updater_min_pod_age_seconds,
            settings.updater_workload_cooldown_seconds,
            settings.updater_evictions_per_minute,
        ),
        settings.update_resize_timeout_seconds,
        settings.updater_settling_seconds,
    )
    excluded = frozenset(settings.updater_excluded_namespaces)
    return UpdaterConfig(policy, settings.update_mode, settings.updater_dry_run, excluded)


def _identity(settings: UpdaterSettings) -> str:
    return settings.updater_identity or os.environ.get("POD_NAME") or socket.gethostname()


def _leadership(settings: UpdaterSettings, api_client: Any) -> Leadership:
    if not settings.updater_leader_election:
        return AlwaysLeader()
    from kubernetes import client

    namespace = settings.updater_lease_namespace
    if not namespace:
        try:
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
        except OSError:
            namespace = "default"
    api = cast(LeaseApi, client.CoordinationV1Api(api_client))
    return LeaderElector(api, settings.updater_lease_name, namespace, _identity(settings))


def start_pdb_watch(api_client: Any, pdbs: PdbCache, stop: threading.Event) -> Informer:
    """Every PodDisruptionBudget (policy/v1): which pods they cover, how many disruptions they allow."""
    from kubernetes import client, watch

    policy = client.PolicyV1Api(api_client)
    informer = Informer(
        "poddisruptionbudgets", policy.list_pod_disruption_budget_for_all_namespaces, pdbs, watch.Watch, stop
    )
    informer.start()
    return informer


def start_pod_watch(api_client: Any, pods: PodCache, stop: threading.Event) -> Informer:
    """The running pods of every namespace (field selector: phase Running)."""
    from kubernetes import client, watch

    core = client.CoreV1Api(api_client)
    informer = Informer(
        "pods",
        core.list_pod_for_all_namespaces,
        pods,
        watch.Watch,
        stop,
        list_kwargs={"field_selector": "status.phase=Running"},
    )
    informer.start()
    return informer


def serve(
    updater: Updater,
    leader: Leadership,
    metrics: UpdaterMetrics,
    interval: float,
    stop: threading.Event,
    synced: Callable[[], bool],
) -> None:
    """A pass every `interval` seconds while this replica leads and the caches have synced."""
    while not stop.is_set():
        leading = leader.is_leader()
        metrics.leader.set(1 if leading else 0)
        if leading and synced():
            try:
                done = updater.run_once()
                metrics.passes.inc()
                metrics.pods.set(len(done))
            except Exception:  # one bad pass must not stop the updater
                log.exception("updater pass failed")
        stop.wait(interval)


def run(args: argparse.Namespace) -> int:
    """Start the updater and run until stopped; SettingsError (exit status 2) on bad configuration."""
    settings = load_from_args(UpdaterSettings, args)
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(name)s %(message)s")
    if settings.store != "crd":
        raise setting_error("store", "the updater reads Recommendations from the crd store: set it to crd")
    api_client = kube_api_client(settings.kubeconfig)
    stop = threading.Event()
    holder, owners, cache, pods = (
        SnapshotHolder(cluster_name=settings.cluster_name),
        OwnerCache(),
        MetadataCache(),
        PodCache(),
    )
    informers = start_cluster_watches(api_client, holder, owners, cache, _utcnow, stop)
    informers.append(start_pod_watch(api_client, pods, stop))
    pdbs = PdbCache()
    informers.append(start_pdb_watch(api_client, pdbs, stop))
    registry = CollectorRegistry()
    metrics = UpdaterMetrics(registry)
    if settings.updater_metrics_port:
        start_http_server(settings.updater_metrics_port, settings.updater_metrics_host, registry)
    config = config_of(settings)
    api = KubeApi(api_client, instance=_identity(settings), clock=_utcnow)
    recorder = Recorder(api, metrics, config.dry_run)
    updater = Updater(config, pods.pods, owners, cache, holder, api, recorder, _utcnow, pdbs)
    leader = _leadership(settings, api_client)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # finish the pass, release the Lease, exit 0
    leader.start()
    log.info(
        "updater started: default update mode %s%s",
        config.default_update_mode,
        " (dry-run)" if config.dry_run else "",
    )
    try:
        serve(
            updater,
            leader,
            metrics,
            settings.updater_interval_seconds,
            stop,
            lambda: watches_synced(informers),
        )
    finally:
        stop.set()
        leader.stop()
    return 0
