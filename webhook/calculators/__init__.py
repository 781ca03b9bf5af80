"""Patch calculators, one concern each, composed in a list by the admission path."""

from webhook.calculators.annotations import APPLIED_KEY, DRY_RUN_KEY, AnnotationsCalculator
from webhook.calculators.base import (
    CalcOptions,
    Calculator,
    Change,
    ContainerSlot,
    LimitPolicy,
    changes_to_patch,
    pod_containers,
)
from webhook.calculators.gpu import GpuCalculator
from webhook.calculators.resources import ResourcesCalculator


def default_calculators() -> list[Calculator]:
    return [ResourcesCalculator(), GpuCalculator()]


__all__ = [
    "APPLIED_KEY",
    "DRY_RUN_KEY",
    "AnnotationsCalculator",
    "CalcOptions",
    "Calculator",
    "Change",
    "ContainerSlot",
    "GpuCalculator",
    "LimitPolicy",
    "ResourcesCalculator",
    "changes_to_patch",
    "default_calculators",
    "pod_containers",
]
