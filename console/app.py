"""The console's FastAPI app: JSON API under /api (OpenAPI at /openapi.json) and the HTML pages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from console import pages, views
from console.data import ConsoleData

STATIC_DIR = Path(__file__).parent / "static"

Points = Annotated[
    int,
    Query(ge=1, le=views.MAX_POINTS, description="most points per line (bucket peaks)"),
]


def create_console_app(data: ConsoleData) -> FastAPI:
    """A read-only console over `data`. No Swagger UI (it loads from a CDN); schema at /openapi.json."""
    app = FastAPI(
        title="podsizer console",
        summary="Recommendations, GPU inventory, per-pod GPU usage, idle-GPU waste and cost.",
        version="1",
        docs_url=None,
        redoc_url=None,
    )
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/api/meta", tags=["api"])
    def api_meta() -> views.MetaOut:
        """Source and time window of the data."""
        return views.meta(data)

    @app.get("/api/overview", tags=["api"])
    def api_overview() -> views.OverviewOut:
        """Workloads with current vs recommended requests, savings, sizing path, confidence and mode."""
        return views.overview(data)

    @app.get("/api/gpu", tags=["api"])
    def api_gpu() -> views.GpuOut:
        """Everything the GPU page shows: nodes, per-pod usage, waste and cost."""
        return views.gpu(data)

    @app.get("/api/gpu/nodes", tags=["api"])
    def api_gpu_nodes() -> list[views.GpuNodeOut]:
        """Per-node GPU inventory: model, count, MIG layout, allocation."""
        return views.gpu_nodes(data)

    @app.get("/api/gpu/pods", tags=["api"])
    def api_gpu_pods() -> list[views.GpuPodOut]:
        """Per-pod GPU usage: activity (SM), DRAM activity, framebuffer, cost."""
        return views.gpu_pods(data)

    @app.get("/api/gpu/waste", tags=["api"])
    def api_gpu_waste() -> list[views.WasteOut]:
        """Idle GPU pods with idle-since and wasted cost per hour."""
        return views.waste(data)

    @app.get("/api/costs", tags=["api"])
    def api_costs() -> views.CostsOut:
        """GPU cost per workload, per namespace and for the cluster ($/h)."""
        return views.costs(data)

    @app.get("/api/pods", tags=["api"])
    def api_pods() -> list[views.PodOut]:
        """Pods of workloads (never deployer or hook pods), for drill-down."""
        return views.pods(data)

    @app.get(
        "/api/pods/{namespace}/{name}",
        tags=["api"],
        responses={404: {"description": "not a pod of any workload"}},
    )
    def api_pod(namespace: str, name: str, points: Points = views.DEFAULT_POINTS) -> views.PodDetailOut:
        """A pod's CPU, memory and DCGM time series (downsampled to bucket peaks)."""
        try:
            return views.pod_detail(data, namespace, name, points)
        except views.UnknownPod as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page_overview() -> str:
        return pages.overview_page(views.overview(data))

    @app.get("/gpu", response_class=HTMLResponse, include_in_schema=False)
    def page_gpu() -> str:
        return pages.gpu_page(views.gpu(data))

    @app.get("/pods/{namespace}/{name}", response_class=HTMLResponse, include_in_schema=False)
    def page_pod(namespace: str, name: str, points: Points = views.DEFAULT_POINTS) -> HTMLResponse:
        try:
            detail = views.pod_detail(data, namespace, name, points)
        except views.UnknownPod as exc:
            return HTMLResponse(pages.not_found_page(str(exc), views.meta(data)), status_code=404)
        return HTMLResponse(pages.pod_page(detail, views.meta(data)))

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
