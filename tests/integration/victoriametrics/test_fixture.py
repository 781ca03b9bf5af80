"""The fixture's rules: a missing victoria-metrics skips locally and fails in CI; every series is imported."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.prometheus.history import CLUSTER_LABEL, history_families, series_count

from . import conftest
from .conftest import REQUIRE_ENV, Loaded, require_victoria_metrics

pytestmark = pytest.mark.integration


def test_a_missing_binary_skips_without_the_require_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "VICTORIA_METRICS", "/nonexistent/victoria-metrics")
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="VICTORIAMETRICS SKIPPED"):
        require_victoria_metrics()


def test_a_missing_binary_fails_with_the_require_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "VICTORIA_METRICS", "/nonexistent/victoria-metrics")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV} is set but"):
        require_victoria_metrics()


def test_both_clusters_series_are_all_imported_and_labelled(vm_clusters: Loaded) -> None:
    url = vm_clusters.server.url
    assert set(vm_clusters.histories) == {"east", "west"}
    for cluster, history in vm_clusters.histories.items():
        expected = series_count(history_families(history, cluster))
        match = f'{{{CLUSTER_LABEL}="{cluster}"}}'
        form = {"match[]": match, "start": f"{history.start.timestamp():.0f}"}
        assert len(httpx.post(f"{url}/api/v1/series", data=form).json()["data"]) == expected, cluster
