"""Overview query (sort, filter, search, pages), per-replica and dollar savings, the workload page, the
unallocated-GPU cost, 404s (HTML for pages, JSON for the API), autoescaping and security headers."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from console import fmt
from console.app import SECURITY_HEADERS, create_console_app
from console.data import GpuNode, StaticConsoleData, WorkloadRow
from console.demo_data import DemoConsoleData
from console.prices import DEFAULT_PRICE, HOURS_PER_MONTH, resource_price
from console.query import OverviewQuery, Summary, select
from tests.unit.console.sample import GIB, MIB, WEB, sample_data


@pytest.fixture()
def client() -> Iterator[TestClient]:
    with TestClient(create_console_app(sample_data())) as c:
        yield c


def _names(client: TestClient, **params: object) -> list[str]:
    body = client.get("/api/overview", params=params).json()
    return [w["workload"]["name"] for w in body["workloads"]]


def test_sorting_by_savings_descending_puts_the_largest_first(client: TestClient) -> None:
    body = client.get("/api/overview", params={"sort": "savings", "order": "desc"}).json()
    savings = [w["hourly_savings"] for w in body["workloads"]]
    assert len(savings) == 4 and savings == sorted(savings, reverse=True)
    assert _names(client, sort="name") == ["billing", "notebook", "train", "web"]
    assert _names(client, sort="name", order="desc") == ["web", "train", "notebook", "billing"]


def test_filters_narrow_the_workloads_and_report_how_many_match(client: TestClient) -> None:
    assert _names(client, namespace="ml", sort="name") == ["notebook", "train"]
    assert _names(client, kind="DeploymentConfig") == ["billing"]
    assert _names(client, mode="auto", sort="name") == ["train", "web"]
    assert _names(client, sizing="autopilot") == ["train"]
    assert "billing" not in _names(client, has_savings=True)  # needs more: no savings
    body = client.get("/api/overview", params={"namespace": "ml"}).json()
    assert body["page"]["matching"] == 2 == body["totals"]["matching"] and body["totals"]["workloads"] == 4


def test_totals_sum_the_workloads_matching_the_filters_on_every_page(client: TestClient) -> None:
    everything = client.get("/api/overview").json()["totals"]
    body = client.get("/api/overview", params={"namespace": "ml", "per_page": 1}).json()
    ml = client.get("/api/overview", params={"namespace": "ml"}).json()["workloads"]
    assert len(body["workloads"]) == 1 and len(ml) == 2  # the totals cover both pages of the filter
    totals = body["totals"]
    for key in ("hourly_savings", "cpu_cores_saved", "memory_bytes_saved", "gpu_hourly_cost"):
        assert totals[key] == pytest.approx(sum(w[key] or 0.0 for w in ml)), key
    assert totals["monthly_savings"] == pytest.approx(totals["hourly_savings"] * HOURS_PER_MONTH)
    assert totals["hourly_savings"] != pytest.approx(everything["hourly_savings"])
    assert totals["gpu_unallocated_hourly_cost"] == everything["gpu_unallocated_hourly_cost"]  # cluster-wide


def test_low_confidence_filter_keeps_only_low_confidence_workloads() -> None:
    data = sample_data()
    rows = list(data.workload_rows)
    low = dataclasses.replace(rows[1].containers[0], low_confidence=True)
    rows[1] = dataclasses.replace(rows[1], containers=(low,))
    app = create_console_app(dataclasses.replace(data, workload_rows=tuple(rows)))
    with TestClient(app) as c:
        assert _names(c, low_confidence=True) == ["billing"]


def test_search_matches_a_name_substring_in_any_case(client: TestClient) -> None:
    assert _names(client, q="NOTE") == ["notebook"]
    assert _names(client, q="zzz") == []


def test_pagination_splits_the_matching_workloads_into_pages(client: TestClient) -> None:
    pages = [_names(client, sort="name", per_page=3, page=n) for n in (1, 2)]
    assert pages == [["billing", "notebook", "train"], ["web"]]
    body = client.get("/api/overview", params={"per_page": 3, "page": 9}).json()
    assert body["page"] == {
        "page": 2,
        "per_page": 3,
        "pages": 2,
        "matching": 4,
        "sort": "workload",
        "order": "asc",
    }


def test_bad_query_parameters_are_422(client: TestClient) -> None:
    assert client.get("/api/overview", params={"sort": "nope"}).status_code == 422
    assert client.get("/api/overview", params={"per_page": 0}).status_code == 422
    assert client.get("/api/overview", params={"order": "up"}).status_code == 422


def test_select_pages_through_every_item_once() -> None:
    summaries = [
        Summary(
            i, "ns", "Deployment", f"w{i:03d}", "auto", "static", 1.0, False, True, 1, 0.0, 0.0, float(i), 0.0
        )
        for i in range(120)
    ]
    seen: list[int] = []
    for page in (1, 2, 3):
        items, info = select(summaries, OverviewQuery(sort="savings", order="desc", page=page))
        seen += items
        assert info.pages == 3 and info.matching == 120
    assert seen == list(range(119, -1, -1))


def test_overview_page_links_sort_columns_and_keeps_the_filters(client: TestClient) -> None:
    html = client.get("/", params={"namespace": "ml", "sort": "savings", "order": "desc"}).text
    assert 'data-sort="name"' not in html  # name sorts via the workload column
    assert 'href="/?namespace=ml&amp;sort=confidence&amp;order=desc"' in html
    assert 'href="/?namespace=ml&amp;sort=savings"' in html  # the active column flips to ascending
    assert 'data-workload="shop/Deployment/web"' not in html and "2 of 4 workloads" in html


def test_savings_count_current_replicas_not_every_pod_seen() -> None:
    data = sample_data()
    web = dataclasses.replace(data.workload_rows[0], replicas=1, replicas_basis="pods present at the end")
    data = dataclasses.replace(data, workload_rows=(web, *data.workload_rows[1:]))
    with TestClient(create_console_app(data)) as c:
        w = c.get("/api/overview", params={"q": "web"}).json()["workloads"][0]
    assert len(w["pods"]) == 2 and w["replicas"] == 1
    assert w["cpu_cores_saved"] == pytest.approx(1.0 - 0.25)  # one replica, not two pods
    assert w["replicas_basis"] == "pods present at the end"


def test_savings_in_dollars_price_cpu_and_memory(client: TestClient) -> None:
    w = client.get("/api/overview", params={"q": "web"}).json()["workloads"][0]
    cpu = (1.0 - 0.25) * 2 * DEFAULT_PRICE.cpu_hourly
    mem = (2 * GIB - 512 * MIB) * 2 / GIB * DEFAULT_PRICE.memory_gib_hourly
    assert w["cpu_hourly_savings"] == pytest.approx(cpu)
    assert w["memory_hourly_savings"] == pytest.approx(mem)
    assert w["monthly_savings"] == pytest.approx((cpu + mem) * HOURS_PER_MONTH)
    assert "Fargate" in w["price_basis"]


def test_instance_prices_split_in_fargate_ratio_and_add_up_to_the_instance_price() -> None:
    price = resource_price("m5.xlarge")
    assert price.hourly(4, 16) == pytest.approx(0.192)
    assert "m5.xlarge" in price.basis
    assert resource_price("p4d.24xlarge").cpu_hourly == DEFAULT_PRICE.cpu_hourly


def test_unallocated_gpus_are_costed_at_the_node_price() -> None:
    data = sample_data()
    spare = GpuNode(
        "gpu-c",
        "A100",
        3,
        40960.0,
        "p4d.24xlarge",
        "on-demand",
        None,
        0,
        gpu_hourly_price=2.744,
        price_basis="on-demand",
    )
    data = dataclasses.replace(data, nodes=(*data.nodes, spare))
    with TestClient(create_console_app(data)) as c:
        g = c.get("/api/gpu").json()
        totals = c.get("/api/overview").json()["totals"]
        html = c.get("/gpu").text
    assert g["unallocated_gpus"] == 3 and g["unallocated_hourly_cost"] == pytest.approx(3 * 2.744)
    assert totals["gpu_unallocated_hourly_cost"] == pytest.approx(3 * 2.744)
    assert "$8.232/h" in html


def test_only_non_zero_waste_is_highlighted(client: TestClient) -> None:
    html = client.get("/gpu").text
    assert 'class="num waste">$0.000/h' not in html
    assert 'class="num waste">$1.861/h' in html


def test_workload_page_shows_the_recommendation_changes_and_pods(client: TestClient) -> None:
    api = client.get("/api/workloads/shop/Deployment/web").json()
    assert [p["name"] for p in api["pods"]] == ["web-abc12", "web-def34"]
    assert api["workload"]["cpu_cores_saved"] == pytest.approx(1.5)
    html = client.get("/workloads/shop/Deployment/web").text
    assert "P99 + 15 %" in html and "static: no horizontal autoscaler" in html
    assert '<b class="rec" data-field="cpu_planned">250m</b>' in html
    assert html.count('class="pod-link"') == 2
    assert 'href="/workloads/shop/Deployment/web"' in client.get("/").text


def test_the_forecast_is_named_the_busiest_hours_mean_and_says_why_it_is_below_the_p99() -> None:
    demo = DemoConsoleData.build(datetime(2026, 12, 2, 12, tzinfo=UTC))
    row = next(r for r in demo.workload_rows if r.workload.name == "search")
    detail = demo.workload_detail(row.workload)
    assert detail is not None and detail.forecast is not None
    with TestClient(create_console_app(demo)) as c:
        html = c.get("/workloads/shop/Deployment/search").text
        api = c.get("/api/workloads/shop/Deployment/search").json()
    forecast = html[html.index('<p id="forecast">') : html.index("<h2>History</h2>")]
    assert "the busiest hour's mean: CPU" in forecast
    assert "peak" not in forecast.split('id="forecast-note"')[0], "the figures are not called peaks"
    assert f'data-field="forecast_cpu">{fmt.cpu(detail.forecast.cpu_cores_peak)}</b>' in forecast
    assert "below a p99" in forecast and "shown, not applied" in forecast
    assert api["forecast"]["cpu_cores_peak"] == pytest.approx(detail.forecast.cpu_cores_peak)


def test_unknown_page_is_a_styled_404_and_unknown_api_path_is_json(client: TestClient) -> None:
    page = client.get("/no/such/page")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert '<link rel="stylesheet" href="/static/console.css">' in page.text and "/no/such/page" in page.text
    api = client.get("/api/nope")
    assert api.status_code == 404 and api.json() == {"detail": "Not Found"}
    gone = client.get("/api/workloads/shop/Deployment/nope")
    assert gone.status_code == 404 and "no recommendation" in gone.json()["detail"]
    assert client.get("/workloads/shop/Deployment/nope").status_code == 404


def test_a_404_page_links_to_close_matching_pages_and_the_api_names_its_list(client: TestClient) -> None:
    page = client.get("/workloads/shop/Deployment/wbe")
    assert page.status_code == 404
    error, matches = page.text.split('id="error">')[1].split('id="matches">')
    assert "no recommendation for workload shop/Deployment/wbe" in error and "/api/" not in error
    assert matches.index('href="/workloads/shop/Deployment/web"') < matches.index("</ul>")
    pod = client.get("/pods/shop/web-abc13").text.split('id="matches">')[1].split("</ul>")[0]
    assert 'href="/pods/shop/web-abc12"' in pod
    assert 'id="matches"' not in client.get("/no/such/page").text  # nothing close: no list
    assert ">GPUs</a></li>" in client.get("/gpus/").text
    assert "GET /api/overview lists them" in client.get("/api/workloads/shop/Deployment/wbe").json()["detail"]


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for path in ("/", "/api/overview", "/static/console.css", "/nope", "/api/nope", "/docs"):
        headers = client.get(path).headers
        for name, value in SECURITY_HEADERS.items():
            assert headers[name] == value, (path, name)
    csp = SECURITY_HEADERS["Content-Security-Policy"]
    assert "http" not in csp and "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp


def test_templates_escape_what_the_data_says() -> None:
    data = sample_data()
    evil = dataclasses.replace(data.workload_rows[0], reason="<script>alert(1)</script>")
    rows: tuple[WorkloadRow, ...] = (evil, *data.workload_rows[1:])
    with TestClient(create_console_app(StaticConsoleData(data.info, rows))) as c:
        for path in ("/", "/workloads/shop/Deployment/web"):
            html = c.get(path).text
            assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert WEB.name == "web"


def test_a_negative_saving_is_red_and_signed_before_the_dollar(client: TestClient) -> None:
    page = client.get("/", params={"q": "billing"}).text
    cell = page[page.index('<td rowspan="1" class="num money') :]
    assert cell.startswith('<td rowspan="1" class="num money negative">')
    assert '<span data-field="hourly_savings">-$0.010/h</span>' in cell
    assert "$-" not in page
    web = client.get("/", params={"q": "web"}).text
    assert 'class="num money ">' in web and "money negative" not in web


def test_dollar_figures_put_the_sign_before_the_dollar() -> None:
    assert (fmt.dollars(-0.989), fmt.dollars(0.0001), fmt.dollars(-0.0001)) == (
        "-$0.989/h",
        "$0.000/h",
        "$0.000/h",
    )
    assert (fmt.sign_class(-1.0), fmt.sign_class(0.0), fmt.sign_class(None)) == ("negative", "", "")
