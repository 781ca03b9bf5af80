"""The console's FastAPI app: JSON API under /api (OpenAPI at /openapi.json, readable at /docs), HTML pages,
a styled 404 for pages (JSON for /api/*), and security headers on every response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from console import apidocs, nearby, views
from console.data import ConsoleData
from console.pages import Pages
from console.query import DEFAULT_PER_PAGE, MAX_PER_PAGE, SORT_KEYS, OverviewQuery

STATIC_DIR = Path(__file__).parent / "static"
SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'none'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Cross-Origin-Opener-Policy": "same-origin",
}

ClusterParam = Annotated[
    str | None,
    Query(description="the workload's cluster (absent: the workload in any cluster)", max_length=253),
]
Points = Annotated[
    int,
    Query(ge=1, le=views.MAX_POINTS, description="most points per line (bucket peaks)"),
]


def _query(
    cluster: Annotated[str, Query(description="only this cluster")] = "",
    namespace: Annotated[str, Query(description="only this namespace")] = "",
    kind: Annotated[str, Query(description="only this kind (Deployment, StatefulSet, ...)")] = "",
    mode: Annotated[str, Query(description="only this mode (off, dry-run, auto, excluded)")] = "",
    sizing: Annotated[str, Query(description="only this sizing path (static, autopilot)")] = "",
    has_savings: Annotated[bool, Query(description="only workloads with savings")] = False,
    low_confidence: Annotated[bool, Query(description="only low-confidence ones")] = False,
    q: Annotated[str, Query(max_length=253, description="workload name contains (any case)")] = "",
    sort: Annotated[str, Query(description="sort key: " + ", ".join(SORT_KEYS))] = "workload",
    order: Annotated[Literal["asc", "desc"], Query(description="sort order")] = "asc",
    page: Annotated[int, Query(ge=1, description="page number, from 1")] = 1,
    per_page: Annotated[int, Query(ge=1, le=MAX_PER_PAGE, description="per page")] = DEFAULT_PER_PAGE,
) -> OverviewQuery:
    try:
        return OverviewQuery(
            namespace,
            kind,
            mode,
            sizing,
            has_savings,
            low_confidence,
            q,
            sort,
            order,
            page,
            per_page,
            cluster,
        )
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path == "/api" or path.startswith("/static/")


Current = Callable[[], ConsoleData]
"""The data for one request: each request reads one build of a refreshing source."""


def create_console_app(data: ConsoleData | Current) -> FastAPI:
    """A read-only console over `data`, or over what `data()` returns at each request (a refreshing source:
    each request reads one build). No Swagger UI (it loads from a CDN): readable docs at /docs."""
    current: Current = data if callable(data) else (lambda: data)
    app = FastAPI(
        title="podsizer console",
        summary="Recommendations, GPU inventory, per-pod GPU usage, idle-GPU waste and cost.",
        version="1",
        docs_url=None,
        redoc_url=None,
    )
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    pages = Pages()
    _install_handlers(app, current, pages)
    _workload_api(app, current)
    _gpu_api(app, current)
    _page_routes(app, current, pages)
    return app


def _install_handlers(app: FastAPI, current: Current, pages: Pages) -> None:
    """Security headers on every response; a styled 404 for pages, JSON errors for /api/*."""

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def not_found(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code != 404 or _wants_json(request):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        return _not_found(pages, current(), f"No page at {request.url.path}.", request.url.path)


def _workload_api(app: FastAPI, current: Current) -> None:
    """The JSON API for workloads and pods."""
    api = _ApiRoutes(app)

    @api.get("/meta")
    def api_meta() -> views.MetaOut:
        """Source and time window of the data."""
        return views.meta(current())

    @api.get("/overview")
    def api_overview(query: Annotated[OverviewQuery, Depends(_query)]) -> views.OverviewOut:
        """Workloads (filtered, searched, sorted, one page) with current vs planned requests, savings per
        current replica in resources and dollars, sizing path, confidence and mode; totals over all."""
        return views.overview(current(), query)

    @api.get(
        "/workloads/{namespace}/{kind}/{name}",
        responses={404: {"description": "no recommendation for this workload"}},
    )
    def api_workload(
        namespace: str,
        kind: str,
        name: str,
        points: Points = views.DEFAULT_POINTS,
        cluster: ClusterParam = None,
    ) -> views.WorkloadDetailOut:
        """A workload: recommendation, the pod plan's changes, pods, history (peak over pods), forecast."""
        try:
            return views.workload_detail(current(), namespace, kind, name, points, cluster)
        except views.UnknownWorkload as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc

    @api.get("/pods")
    def api_pods() -> list[views.PodOut]:
        """Pods of workloads (never deployer or hook pods), for drill-down."""
        return views.pods(current())

    @api.get("/pods/{namespace}/{name}", responses={404: {"description": "not a pod of any workload"}})
    def api_pod(namespace: str, name: str, points: Points = views.DEFAULT_POINTS) -> views.PodDetailOut:
        """A pod's CPU, memory and DCGM time series (downsampled to bucket peaks)."""
        try:
            return views.pod_detail(current(), namespace, name, points)
        except views.UnknownPod as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc


def _gpu_api(app: FastAPI, current: Current) -> None:
    """The JSON API for GPUs, waste and cost."""
    api = _ApiRoutes(app)

    @api.get("/gpu")
    def api_gpu() -> views.GpuOut:
        """Everything the GPU page shows: nodes (unallocated GPUs costed), per-pod usage, waste and cost."""
        return views.gpu(current())

    @api.get("/gpu/nodes")
    def api_gpu_nodes() -> list[views.GpuNodeOut]:
        """Per-node GPU inventory: model, count, MIG layout, allocation, unallocated GPUs and their cost."""
        return views.gpu_nodes(current())

    @api.get("/gpu/pods")
    def api_gpu_pods() -> list[views.GpuPodOut]:
        """Per-pod GPU usage: activity (SM), DRAM activity, framebuffer, cost."""
        return views.gpu_pods(current())

    @api.get("/gpu/waste")
    def api_gpu_waste() -> list[views.WasteOut]:
        """Idle GPU pods with idle-since and wasted cost per hour."""
        return views.waste(current())

    @api.get("/costs")
    def api_costs() -> views.CostsOut:
        """GPU cost per workload, per namespace and for the cluster ($/h)."""
        return views.costs(current())


def _page_routes(app: FastAPI, current: Current, pages: Pages) -> None:
    """The HTML pages (not in the OpenAPI document) and the health check."""
    router = _PageRoutes(app)

    @router.get("/", response_class=HTMLResponse)
    def page_overview(query: Annotated[OverviewQuery, Depends(_query)]) -> str:
        return pages.overview(views.overview(current(), query), query)

    @router.get("/gpu", response_class=HTMLResponse)
    def page_gpu() -> str:
        return pages.gpu(views.gpu(current()))

    @router.get("/workloads/{namespace}/{kind}/{name}", response_class=HTMLResponse)
    def page_workload(
        request: Request,
        namespace: str,
        kind: str,
        name: str,
        points: Points = views.DEFAULT_POINTS,
        cluster: ClusterParam = None,
    ) -> HTMLResponse:
        d = current()  # one build for the whole request
        try:
            detail = views.workload_detail(d, namespace, kind, name, points, cluster)
        except views.UnknownWorkload as exc:
            return _not_found(pages, d, exc.what, request.url.path)
        return HTMLResponse(pages.workload(detail, views.meta(d)))

    @router.get("/pods/{namespace}/{name}", response_class=HTMLResponse)
    def page_pod(
        request: Request, namespace: str, name: str, points: Points = views.DEFAULT_POINTS
    ) -> HTMLResponse:
        d = current()  # one build for the whole request
        try:
            detail = views.pod_detail(d, namespace, name, points)
        except views.UnknownPod as exc:
            return _not_found(pages, d, exc.what, request.url.path)
        return HTMLResponse(pages.pod(detail, views.meta(d)))

    @router.get("/docs", response_class=HTMLResponse)
    def page_docs() -> str:
        spec = app.openapi()
        return pages.docs(
            str(spec.get("info", {}).get("summary", "")), apidocs.operations(spec), apidocs.schemas(spec)
        )

    @router.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}


def _not_found(pages: Pages, data: ConsoleData, message: str, path: str) -> HTMLResponse:
    """The 404 page: what is missing and links to the pages closest to `path`."""
    page = pages.not_found(message, views.meta(data), nearby.close_matches(data, path))
    return HTMLResponse(page, status_code=404)


class _ApiRoutes:
    """`app.get` under /api, tagged for the OpenAPI document."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def get(self, path: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self.app.get("/api" + path, tags=["api"], **kwargs)


class _PageRoutes:
    """`app.get` for pages: left out of the OpenAPI document."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def get(self, path: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self.app.get(path, include_in_schema=False, **kwargs)
