"""How the console writes numbers for people: Kubernetes-style quantities, dollars, percentages, times."""

from __future__ import annotations

from datetime import datetime

from podsizer.kube.times import format_shown

MIB = 1024.0 * 1024.0
GIB = 1024.0 * MIB
NONE = "—"


def cpu(cores: float | None) -> str:
    """0.25 -> "250m"; 1.5 -> "1.50" (cores); parseable as a Kubernetes quantity."""
    if cores is None:
        return NONE
    if abs(cores) < 1.0:
        return f"{round(cores * 1000)}m"
    return f"{cores:.2f}"


def memory(bytes_: float | None) -> str:
    """Bytes -> "512Mi" or "1.50Gi"; parseable as a Kubernetes quantity."""
    if bytes_ is None:
        return NONE
    if abs(bytes_) < GIB:
        return f"{round(bytes_ / MIB)}Mi"
    return f"{bytes_ / GIB:.2f}Gi"


def mib(value: float | None) -> str:
    """A MiB figure (dcgm framebuffer) written as a memory quantity."""
    return NONE if value is None else memory(value * MIB)


def count(value: float | None) -> str:
    if value is None:
        return NONE
    return str(round(value)) if float(value).is_integer() else f"{value:.2f}"


def dollars(value: float | None) -> str:
    """$ per hour with three decimals: "$1.234/h", "-$0.989/h" (the sign before the $, as in `monthly`)."""
    if value is None:
        return NONE
    return f"-${-value:.3f}/h" if value <= -0.0005 else f"${abs(value):.3f}/h"


def sign_class(value: float | None) -> str:
    """The CSS class of a savings figure: "negative" where the recommendation costs more than today."""
    return "negative" if value is not None and value < 0 else ""


def percent(ratio: float | None) -> str:
    """A 0-1 ratio as "12.3%"."""
    return NONE if ratio is None else f"{ratio * 100:.1f}%"


def hours(value: float) -> str:
    return f"{value:.1f} h"


def when(value: datetime) -> str:
    """A time as every report shows it (podsizer.kube.times.format_shown)."""
    return format_shown(value)


def by_unit(unit: str, value: float) -> str:
    """A chart axis value in the chart's unit."""
    if unit == "cores":
        return cpu(value)
    if unit == "bytes":
        return memory(value)
    if unit == "MiB":
        return mib(value)
    if unit == "ratio":
        return percent(value)
    return f"{value:g}"


def monthly(value: float | None) -> str:
    """$ per month, whole dollars from $10 ("$1,234/mo"), cents below ("$0.48/mo": a CronJob's few runs
    are not $0); "$0/mo" only for less than half a cent."""
    if value is None:
        return NONE
    size = abs(value)
    if size < 0.005:
        return "$0/mo"
    amount = f"${size:,.0f}" if size >= 10 else f"${size:.2f}"
    return ("-" if value < 0 else "") + amount + "/mo"


def quantity(resource: str, value: float) -> str:
    """A resource amount as a Kubernetes quantity: cpu in cores, memory in bytes, anything else a count."""
    if resource == "cpu":
        return cpu(value)
    if resource == "memory":
        return memory(value)
    return count(value)
