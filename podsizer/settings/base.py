"""The settings every process reads, each with one default, and the PlanPolicy they describe."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from podsizer.policy import LimitPolicy, Mode, PlanPolicy

StoreKind = Literal["json", "crd"]
LogLevel = Literal["debug", "info", "warning", "error"]
_STORE_ALIASES = {"file": "json"}  # the webhook's old name for the standalone store


def empty_is_none(value: object) -> object:
    """'' and 'none' (any case) in an optional setting mean unset."""
    if isinstance(value, str) and value.strip().lower() in ("", "none"):
        return None
    return value


def lowered(value: object) -> object:
    """Case-insensitive choices: compare lower-cased, stripped text."""
    return value.strip().lower() if isinstance(value, str) else value


def comma_list(value: object) -> object:
    """'a, b,,c' -> ('a', 'b', 'c'); other values pass through to validation."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class SharedSettings(BaseModel):
    """Settings of every role (PODSIZER_<NAME>, --<name>); the field description is the flag's help."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The Recommendation store
    store: StoreKind = Field(
        default="json", description="where Recommendations live: json (one file; 'file' also accepted) or crd"
    )
    store_file: Path = Field(default=Path("recommendations.json"), description="file of the json store")
    store_namespace: str | None = Field(
        default=None, description="crd store: only this namespace (empty: all namespaces)"
    )
    kubeconfig: Path | None = Field(
        default=None,
        description="kubeconfig for the crd store and the cluster (empty: in-cluster, then ~/.kube)",
    )
    log_level: LogLevel = Field(default="info", description="log level: debug, info, warning or error")

    # The pod plan's policy (the webhook writes it; `recommend` and the console show it)
    default_mode: Mode = Field(
        default="dry-run",
        description="mode when neither pod, workload nor namespace sets one: off, dry-run, auto",
    )
    limit_policy: LimitPolicy = Field(
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

    @field_validator("store", mode="before")
    @classmethod
    def _store_alias(cls, value: object) -> object:
        value = lowered(value)
        return _STORE_ALIASES.get(value, value) if isinstance(value, str) else value

    @field_validator("store_namespace", "kubeconfig", mode="before")
    @classmethod
    def _optional(cls, value: object) -> object:
        return empty_is_none(value)

    @field_validator("log_level", "default_mode", "limit_policy", mode="before")
    @classmethod
    def _case_insensitive(cls, value: object) -> object:
        return lowered(value)

    def plan_policy(self) -> PlanPolicy:
        """The policy in force for the pod plan; the same settings give the same policy in every role."""
        return PlanPolicy(
            limit_policy=self.limit_policy,
            gpu_resize=self.gpu_resize,
            allow_mig_swap=self.allow_mig_swap,
            min_confidence=self.min_confidence,
            default_mode=self.default_mode,
        )
