"""Kubernetes quantities: parse with the kubernetes client, format as millicores / Mi / whole counts."""

from __future__ import annotations

import math
import re
from decimal import Decimal

from kubernetes.utils import parse_quantity

MIB = 1024 * 1024
INT64_MAX = 2**63 - 1
# apimachinery's resource.Quantity syntax; the CRD carries the same pattern for every quantity it holds.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)


def parse(value: str | int | float) -> float:
    """Parse a Kubernetes quantity ("250m", "512Mi", "1") into a float in base units."""
    try:
        return float(parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"invalid Kubernetes quantity {value!r}") from exc


def format_cpu(cores: float) -> str:
    """Cores to millicores, rounded up: 0.2501 -> "251m"."""
    millis = max(1, math.ceil(round(cores * 1000, 6)))
    return f"{millis}m"


def format_memory(bytes_: float) -> str:
    """Bytes to mebibytes, rounded up: 1 byte -> "1Mi"."""
    mib = max(1, math.ceil(round(bytes_ / MIB, 6)))
    return f"{mib}Mi"


def format_human(resource: str, value: float) -> str:
    """An amount in base units as reasons and messages write it: millicores for cpu, Mi for memory (both
    rounded up), the plain number otherwise; "nan" and "inf" as they are. Never a quantity to write."""
    if not math.isfinite(value):
        return str(value)
    if resource == "cpu":
        return format_cpu(value)
    if resource == "memory":
        return format_memory(value)
    return f"{value:g}"


def format_count(count: float) -> str:
    """A whole count (extended resources such as nvidia.com/gpu)."""
    if count != int(count) or count < 0:
        raise ValueError(f"extended resource counts must be whole non-negative numbers, got {count}")
    return str(int(count))


def format_resource(resource: str, value: float) -> str:
    """Format a value in base units for the given resource name."""
    if resource == "cpu":
        return format_cpu(value)
    if resource in ("memory", "ephemeral-storage"):
        return format_memory(value)
    return format_count(value)


def as_decimal(value: str) -> Decimal:
    """Exact parse for comparisons where float rounding would matter."""
    return Decimal(parse_quantity(value))


def checked_quantity(resource: str, value: str) -> Decimal:
    """A well-formed, non-negative, int64-safe quantity (cpu counted in milli-units); ValueError says why."""
    if not _QUANTITY.fullmatch(value):
        raise ValueError(f"invalid Kubernetes quantity {value!r}")
    try:
        exact = Decimal(parse_quantity(value))
    except (ValueError, ArithmeticError) as exc:
        raise ValueError(f"invalid Kubernetes quantity {value!r}") from exc
    if exact < 0:
        raise ValueError(f"quantity {value!r} is negative")
    limit = Decimal(INT64_MAX) / 1000 if resource == "cpu" else Decimal(INT64_MAX)
    if exact > limit:
        unit = "milli-units" if resource == "cpu" else "base units"
        raise ValueError(f"quantity {value!r} is over 2^63-1 {unit}")
    return exact


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def exact_quantity(resource: str, value: float) -> str:
    """A base-unit value as quantity text that reads back exactly: "2", "250m", "4Gi", "1000000000".

    Unlike format_resource nothing is rounded, so a pod template built from it plans as the pod does.
    """
    exact = Decimal(repr(float(value)))  # the shortest decimal that reads back as this float
    if not exact.is_finite():
        raise ValueError(f"not a quantity: {value!r}")
    whole = exact == exact.to_integral_value()
    if resource == "cpu" and not whole:
        millis = exact * 1000
        if millis == millis.to_integral_value():
            return f"{int(millis)}m"
    if whole:
        n = int(exact)
        if resource in ("memory", "ephemeral-storage") and n > 0:
            for suffix, unit in _BINARY:
                if n % unit == 0:
                    return f"{n // unit}{suffix}"
        return str(n)
    return format(exact.normalize(), "f")
