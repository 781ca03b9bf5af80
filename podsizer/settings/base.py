"""The settings every process reads, each with one default, and the PlanPolicy they describe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from podsizer.api.listdoc import DEFAULT_MAX_FILE_BYTES, MAX_MAX_FILE_BYTES, MIN_MAX_FILE_BYTES
from podsizer.plausibility import (
    DEFAULT_MAX_CHANGE_FACTOR,
    DEFAULT_MAX_CPU_CORES,
    DEFAULT_MAX_GPUS,
    DEFAULT_MAX_MEMORY_BYTES,
    MAX_CEILING_CPU_CORES,
    MAX_CEILING_GPUS,
    MAX_CEILING_MEMORY_BYTES,
    MAX_CHANGE_FACTOR_BOUND,
    MIN_CEILING_CPU_CORES,
    MIN_CEILING_MEMORY_BYTES,
    Ceilings,
)
from podsizer.policy import LimitPolicy, Mode, PlanPolicy
from podsizer.settings.group import SettingsGroup
from podsizer.settings.types import (
    Bytes,
    Cores,
    Lowered,
    OptionalFactor,
    OptionalPath,
    OptionalText,
    WholeBytes,
    lowered,
)

LogLevel = Literal["debug", "info", "warning", "error"]
_STORE_ALIASES = {"file": "json"}  # the webhook's old name for the standalone store


def _store_alias(value: object) -> object:
    value = lowered(value)
    return _STORE_ALIASES.get(value, value) if isinstance(value, str) else value


StoreKind = Annotated[Literal["json", "crd"], BeforeValidator(_store_alias)]


class StoreSettings(SettingsGroup):
    """Where Recommendations live, the cluster, and the log."""

    heading = "store, cluster and log"
    store: StoreKind = Field(
        default="json", description="where Recommendations live: json (one file; 'file' also accepted) or crd"
    )
    store_file: Path = Field(default=Path("recommendations.json"), description="file of the json store")
    store_file_max_bytes: WholeBytes = Field(
        default=DEFAULT_MAX_FILE_BYTES,
        ge=MIN_MAX_FILE_BYTES,
        le=MAX_MAX_FILE_BYTES,
        description="most bytes of the json store file read or written (bytes or e.g. 64Mi); a larger file, "
        "or one that is not a regular file, is refused and left untouched. 64Mi holds some 40,000 workloads "
        "(1.6 KB each); loading 1Gi, the most, takes some 5.5 GiB",
    )
    store_namespace: OptionalText = Field(
        default=None, description="crd store: only this namespace (empty: all namespaces)"
    )
    kubeconfig: OptionalPath = Field(
        default=None,
        description="kubeconfig for the crd store and the cluster (empty: in-cluster, then ~/.kube)",
    )
    cluster_name: str = Field(
        default="",
        description="this cluster's name: with store=crd the recommender writes only its Recommendations; "
        "the webhook and console use only its (empty: a single-cluster setup)",
    )
    log_level: Annotated[LogLevel, Lowered] = Field(
        default="info", description="log level: debug, info, warning or error"
    )


class PlanSettings(SettingsGroup):
    """The pod plan's policy (the webhook writes it; `recommend` and the console show it)."""

    heading = "pod plan"
    default_mode: Annotated[Mode, Lowered] = Field(
        default="dry-run",
        description="mode when neither pod, workload nor namespace sets one: off, dry-run, auto",
    )
    limit_policy: Annotated[LimitPolicy, Lowered] = Field(
        default="keep-ratio",
        description="limits: keep-ratio, cap, leave or recommended (the Recommendation's own)",
    )
    gpu_resize: bool = Field(
        default=False,
        description="default of podsizer.io/gpu (keep | resize): may GPU counts and MIG slices change",
    )
    allow_mig_swap: bool = Field(
        default=False, description="with GPU resize on, replace nvidia.com/gpu by the suggested MIG resource"
    )
    min_confidence: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="container recommendations below this confidence are not applied",
    )


class CeilingSettings(SettingsGroup):
    """The plausibility guard (pod plan and recommender): the largest node's allocatable lowers them."""

    heading = "plausibility ceilings"
    max_cpu_cores: Cores = Field(
        default=DEFAULT_MAX_CPU_CORES,
        ge=MIN_CEILING_CPU_CORES,
        le=MAX_CEILING_CPU_CORES,
        description="most CPU for one container (cores or e.g. 64000m); a smaller largest node lowers it "
        "(at most 4096: no machine has more)",
    )
    max_memory_bytes: Bytes = Field(
        default=DEFAULT_MAX_MEMORY_BYTES,
        ge=MIN_CEILING_MEMORY_BYTES,
        le=MAX_CEILING_MEMORY_BYTES,
        description="most memory for one container (bytes or e.g. 4Ti); a smaller largest node lowers it "
        "(at most 64Ti: the largest machines hold 32 TiB)",
    )
    max_gpus: float = Field(
        default=DEFAULT_MAX_GPUS,
        ge=1,
        le=MAX_CEILING_GPUS,
        description="most nvidia.com/gpu for one container; a smaller largest node lowers it (at most 64: "
        "nodes hold 8 or 16)",
    )
    max_change_factor: OptionalFactor = Field(
        default=DEFAULT_MAX_CHANGE_FACTOR,
        ge=1,
        le=MAX_CHANGE_FACTOR_BOUND,
        description="a new request stays within current / f .. current x f unless the pod, workload or "
        'namespace sets podsizer.io/allow-large-change: "true" (empty: no limit; at most 1000, past which '
        "a factor limits nothing)",
    )

    def ceilings(self) -> Ceilings:
        """The configured ceilings (a process that knows its nodes' allocatable uses Ceilings.from_nodes)."""
        return Ceilings(self.max_cpu_cores, self.max_memory_bytes, self.max_gpus)


class SharedSettings(StoreSettings, PlanSettings, CeilingSettings):
    """Settings of every role (PODSIZER_<NAME>, --<name>); the field description is the flag's help."""

    def plan_policy(self) -> PlanPolicy:
        """The policy in force for the pod plan; the same settings give the same policy in every role."""
        return PlanPolicy(
            limit_policy=self.limit_policy,
            gpu_resize=self.gpu_resize,
            allow_mig_swap=self.allow_mig_swap,
            min_confidence=self.min_confidence,
            default_mode=self.default_mode,
            ceilings=self.ceilings(),
            max_change_factor=self.max_change_factor,
        )
