"""PromQL builders: every query covers a whole namespace (or the cluster), never one container.

Every builder takes a Scope: in a multi-cluster store every selector carries `<cluster_label>="<name>"`,
so one run reads one cluster's series at a time; the default Scope adds nothing (one cluster)."""

from __future__ import annotations

from dataclasses import dataclass

KEY = "namespace,pod,container"
# Marker label that tells the parts of one `or`-combined query apart.
MARK = "podsizer_q"

CPU_METRIC = "container_cpu_usage_seconds_total"
MEM_METRIC = "container_memory_working_set_bytes"

# dcgm-exporter names; old exporters (--use-old-namespace era) emit them in lower case.
SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"


def quote(value: str) -> str:
    """A PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Scope:
    """Which cluster's series a query reads: label="" (no cluster label) reads every series."""

    label: str = ""
    cluster: str = ""

    @property
    def matcher(self) -> str:
        """`<label>="<cluster>"`, or "" when unscoped."""
        return f"{self.label}={quote(self.cluster)}" if self.label else ""

    def matchers(self, *others: str) -> str:
        """The matchers inside one selector's braces: `others` and this scope's, comma-separated."""
        return ",".join(m for m in (*others, self.matcher) if m)

    def select(self, metric: str, *matchers: str) -> str:
        """`metric{matchers,scope}`; the bare metric name when there is nothing to match."""
        inside = self.matchers(*matchers)
        return f"{metric}{{{inside}}}" if inside else metric


UNSCOPED = Scope()


def dcgm_selector(metric: str, scope: Scope = UNSCOPED) -> str:
    """Selects a dcgm-exporter metric under its current and its old lower-case name."""
    return f"{{{scope.matchers(f'__name__=~{quote(metric + chr(124) + metric.lower())}')}}}"


def mark(expr: str, value: str, label: str = MARK) -> str:
    return f'label_replace({expr}, "{label}", "{value}", "__name__", ".*")'


def either(parts: dict[str, str], label: str = MARK) -> str:
    """One query returning every part, each tagged with label=<its key>."""
    return " or ".join(mark(expr, key, label) for key, expr in parts.items())


@dataclass(frozen=True)
class Window:
    """The look-back of every instant query (evaluated at the window's end) and the range-query resolution."""

    seconds: int
    resolution_s: int = 60
    rate_s: int = 120

    @property
    def range(self) -> str:
        return f"{self.seconds}s"


CONTAINER_MATCHERS = ('container!=""', 'container!="POD"')


def containers_match(scope: Scope = UNSCOPED) -> str:
    """Every container's working-set series (of the scope): the match of namespace and cluster discovery."""
    return scope.select(MEM_METRIC, *CONTAINER_MATCHERS)


def container_selector(metric: str, namespace: str, scope: Scope = UNSCOPED) -> str:
    return scope.select(metric, *CONTAINER_MATCHERS, f"namespace={quote(namespace)}")


def cpu_rate(namespace: str, w: Window, scope: Scope = UNSCOPED) -> str:
    """Range query (step resolution_s): per raw series (one per container incarnation), cores over rate_s.

    The answer is kept as the raw model (series.py) and aggregated in numpy: Prometheus evaluates each
    series once instead of once per statistic, as quantile_over_time over a subquery did.
    """
    return f"rate({container_selector(CPU_METRIC, namespace, scope)}[{w.rate_s}s])"


def memory_peak(namespace: str, w: Window, scope: Scope = UNSCOPED) -> str:
    """Range query (step resolution_s): per raw series, the highest working-set sample of each step.

    The range is a millisecond short of the step: Prometheus 2 closes a range at both ends, so over a whole
    step a sample on a step's edge would be in two steps' points, and one bad scrape would look like two
    (recommender.sizing.robust counts scrapes). So each sample is in one step, as on the raw read paths
    (rawgrid); on Prometheus 3, whose ranges are open at the start, a sample exactly 1 ms inside a step's
    start is in none (1 ms in a step)."""
    return f"max_over_time({container_selector(MEM_METRIC, namespace, scope)}[{w.resolution_s * 1000 - 1}ms])"


def container_facts(namespace: str, w: Window, scope: Scope = UNSCOPED) -> str:
    """Per (pod, container): last requests and limits seen (per resource, with the pod's node) and the
    raw working-set sample count."""
    out = {}
    for kind in ("requests", "limits"):
        sel = scope.select(
            f"kube_pod_container_resource_{kind}",
            f"namespace={quote(namespace)}",
            'resource=~"cpu|memory|nvidia_com_.*"',
        )
        out[kind] = f"max by ({KEY},resource,node) (last_over_time({sel}[{w.range}]))"
    mem = container_selector(MEM_METRIC, namespace, scope)
    out["count"] = f"sum by ({KEY}) (count_over_time({mem}[{w.range}]))"
    return either(out)


IDENTITY_SERIES = {
    "kube_pod_owner": "pod_owner",
    "kube_replicaset_owner": "rs_owner",
    "kube_replicationcontroller_owner": "rc_owner",
    "kube_job_owner": "job_owner",
    "kube_pod_labels": "pod_labels",
    "kube_pod_annotations": "pod_annotations",
    "kube_pod_container_status_last_terminated_reason": "oom",
    "kube_pod_init_container_info": "init_container",
}


def identity_series(namespace: str, scope: Scope = UNSCOPED) -> list[str]:
    """Series-API matchers for the KSM owner chain, pod labels/annotations and OOM kills of a namespace.

    Only label sets matter here, so the series endpoint answers from the index without reading samples.
    """
    ns = f"namespace={quote(namespace)}"
    out = []
    for metric in IDENTITY_SERIES:
        extra = ('reason="OOMKilled"',) if metric.endswith("terminated_reason") else ()
        out.append(scope.select(metric, ns, *extra))
    return out


# How each dcgm-exporter metric is reduced to one point per step: activity and framebuffer use by their
# peak (idle detection and sizing need it), free framebuffer by its low (used peak + free low = total).
GPU_METRICS: dict[str, str] = {
    SM_ACTIVE: "max",
    GR_ENGINE_ACTIVE: "max",
    GPU_UTIL: "max",
    DRAM_ACTIVE: "max",
    FB_USED: "max",
    FB_FREE: "min",
    FB_RESERVED: "max",
}


def gpu_series(step_s: int, scope: Scope = UNSCOPED) -> str:
    """Range query (step step_s), cluster-wide: every dcgm-exporter series' peak (or low) of each step,
    tagged with MARK=<metric>: one query for all GPU metrics."""
    return either(
        {m: f"{how}_over_time({dcgm_selector(m, scope)}[{step_s}s])" for m, how in GPU_METRICS.items()}
    )


HPA_SERIES = {
    "info": "kube_horizontalpodautoscaler_info",
    "target": "kube_horizontalpodautoscaler_spec_target_metric",
    "min": "kube_horizontalpodautoscaler_spec_min_replicas",
    "max": "kube_horizontalpodautoscaler_spec_max_replicas",
    "current": "kube_horizontalpodautoscaler_status_current_replicas",
}


def autoscalers(w: Window, scope: Scope = UNSCOPED) -> str:
    """Cluster-wide HPA facts from kube-state-metrics (KEDA ScaledObjects show up as keda-hpa-<name>)."""
    return either({k: f"last_over_time({scope.select(m)}[{w.range}])" for k, m in HPA_SERIES.items()})


ALLOCATABLE_RESOURCES = ("cpu", "memory", "nvidia_com_gpu")  # KSM's names (units core, byte, integer)


def nodes(w: Window, scope: Scope = UNSCOPED) -> str:
    """Cluster-wide node labels, info and allocatable cpu/memory/GPUs from kube-state-metrics."""
    resources = quote("|".join(ALLOCATABLE_RESOURCES))
    alloc = scope.select("kube_node_status_allocatable", f"resource=~{resources}")
    return either(
        {
            "labels": f"last_over_time({scope.select('kube_node_labels')}[{w.range}])",
            "info": f"last_over_time({scope.select('kube_node_info')}[{w.range}])",
            "allocatable": f"max by (node,resource) (last_over_time({alloc}[{w.range}]))",
        }
    )
