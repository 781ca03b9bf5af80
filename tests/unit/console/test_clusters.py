"""Several clusters in one console: the cluster filter (API and form), the cluster column only when more
than one cluster is present, the header naming the cluster(s), and the workload page chosen by cluster."""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.data import StaticConsoleData, WorkloadRow
from console.query import OverviewQuery
from console.views import overview
from tests.unit.console.sample import sample_data


def _in(row: WorkloadRow, cluster: str) -> WorkloadRow:
    return dataclasses.replace(row, workload=row.workload.in_cluster(cluster))


def _two_clusters() -> StaticConsoleData:
    """Every sample workload in east, and the first one also in west (same namespace, kind and name)."""
    data = sample_data()
    rows = data.workload_rows
    return dataclasses.replace(data, workload_rows=(*(_in(r, "east") for r in rows), _in(rows[0], "west")))


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_console_app(_two_clusters()))


def test_the_cluster_filter_keeps_only_that_clusters_workloads(client: TestClient) -> None:
    body = client.get("/api/overview", params={"cluster": "west"}).json()
    assert [(w["workload"]["cluster"], w["workload"]["name"]) for w in body["workloads"]] == [
        ("west", sample_data().workload_rows[0].workload.name)
    ]
    assert body["page"]["matching"] == 1
    assert body["totals"]["workloads"] == len(sample_data().workload_rows) + 1


def test_the_facets_and_the_header_name_every_cluster(client: TestClient) -> None:
    body = client.get("/api/overview").json()
    assert body["facets"]["clusters"] == ["east", "west"]
    assert body["meta"]["clusters"] == ["east", "west"]
    page = client.get("/").text
    assert "clusters <b>east, west</b>" in page


def test_the_overview_shows_a_cluster_column_and_select_when_several_clusters_are_present(
    client: TestClient,
) -> None:
    page = client.get("/", params={"cluster": "east"}).text
    assert 'data-sort="cluster"' in page
    assert '<td rowspan="1" data-field="cluster">east</td>' in page
    assert '<option value="east" selected>east</option>' in page
    assert 'data-field="cluster">west<' not in page


def test_a_single_unlabelled_cluster_has_no_cluster_column_or_select() -> None:
    page = TestClient(create_console_app(sample_data())).get("/").text
    assert 'data-sort="cluster"' not in page and 'name="cluster"' not in page
    assert "one cluster (unlabelled)" in page


def test_a_single_labelled_cluster_is_named_in_the_header_without_a_column() -> None:
    data = sample_data()
    one = dataclasses.replace(data, workload_rows=tuple(_in(r, "east") for r in data.workload_rows))
    page = TestClient(create_console_app(one)).get("/").text
    assert "cluster <b>east</b>" in page and 'data-sort="cluster"' not in page


def test_the_configured_cluster_name_is_named_when_no_workload_carries_a_cluster() -> None:
    data = sample_data()
    named = dataclasses.replace(data, info=dataclasses.replace(data.info, cluster_name="prod-1"))
    page = TestClient(create_console_app(named)).get("/").text
    assert "cluster <b>prod-1</b>" in page


def test_sorting_by_cluster_orders_the_clusters_then_the_workloads() -> None:
    data = _two_clusters()
    rows = overview(data, OverviewQuery(sort="cluster", order="desc", per_page=500)).workloads
    assert [w.workload.cluster for w in rows] == ["west"] + ["east"] * len(sample_data().workload_rows)


def test_the_cluster_filter_matches_the_name_exactly_not_a_prefix() -> None:
    data = _two_clusters()
    assert overview(data, OverviewQuery(cluster="eas")).page.matching == 0
    assert overview(data, OverviewQuery(cluster="east")).page.matching == len(sample_data().workload_rows)


def test_the_workload_page_and_api_pick_the_workload_of_the_asked_cluster(client: TestClient) -> None:
    w = sample_data().workload_rows[0].workload
    path = f"/workloads/{w.namespace}/{w.kind}/{w.name}"
    west = client.get("/api" + path, params={"cluster": "west"}).json()
    assert west["workload"]["workload"]["cluster"] == "west"
    east = client.get("/api" + path, params={"cluster": "east"}).json()
    assert east["workload"]["workload"]["cluster"] == "east"
    assert client.get("/api" + path, params={"cluster": "north"}).status_code == 404
    page = client.get(path, params={"cluster": "west"}).text
    assert '<dd data-field="cluster">west</dd>' in page


def test_workload_links_carry_the_cluster(client: TestClient) -> None:
    w = sample_data().workload_rows[0].workload
    page = client.get("/", params={"cluster": "west"}).text
    assert f'href="/workloads/{w.namespace}/{w.kind}/{w.name}?cluster=west"' in page
