"""Settings from flags over PODSIZER_* variables over defaults; one error text for every role.

Every field `cpu_margin` of a role's settings is the variable PODSIZER_CPU_MARGIN and the flag
--cpu-margin. A bad value, or a PODSIZER_* variable that no role knows and that is not a tooling
variable (TOOLING_VARIABLES), raises SettingsError naming the variable and the flag, e.g.
"PODSIZER_CPU_MARGIN (--cpu-margin): Input should be greater than or equal to 0 (got '-1')".
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from podsizer.settings.base import SharedSettings
from podsizer.settings.help import allowed_range, flag_values
from podsizer.settings.names import ENV_PREFIX, env_name, where
from podsizer.settings.roles import ROLES
from podsizer.untrusted import shown

# PODSIZER_* variables read by tooling (scripts/, tests/, .ci/), not by a podsizer process;
# docs/configuration.md lists them. Any other PODSIZER_* name must be a setting of some role.
TOOLING_VARIABLES: frozenset[str] = frozenset(
    {
        "PODSIZER_CACHE",  # Go-built tools and the control plane (~/.cache/podsizer)
        "PODSIZER_VENV",  # scripts/venv.sh: the virtual environment
        "PODSIZER_PYTHON",  # scripts/render-manifests.sh: the interpreter
        "PODSIZER_HELM",  # tests: the helm binary
        "PODSIZER_ETCD",  # tests: the etcd binary
        "PODSIZER_CHROMIUM",  # browser tests: the browser
        "PODSIZER_CHROMEDRIVER",  # browser tests: the driver
        "PODSIZER_REQUIRE_CONTROLPLANE",  # CI: a missing control plane fails instead of skipping
        "PODSIZER_REQUIRE_BROWSER",  # CI: a missing browser fails instead of skipping
        "PODSIZER_REQUIRE_VICTORIAMETRICS",  # CI: a missing victoria-metrics fails instead of skipping
        "PODSIZER_CONTROLPLANE_LOGS",  # e2e: where control-plane logs are copied
    }
)

S = TypeVar("S", bound=SharedSettings)


class SettingsError(ValueError):
    """Bad configuration; the message names each variable (and its flag) at fault."""


def setting_error(field: str, message: str) -> SettingsError:
    """A SettingsError about one setting, in the shape every role uses."""
    return SettingsError(f"{where(field)}: {message}")


def known_variables(roles: Iterable[type[SharedSettings]] = ROLES) -> frozenset[str]:
    """Every PODSIZER_* variable some role reads."""
    return frozenset(env_name(name) for role in roles for name in role.model_fields)


def load(
    settings: type[S], flags: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None
) -> S:
    """`settings` from `env` (default: the process environment) overridden by `flags` (field -> text);
    SettingsError listing every unknown PODSIZER_* variable and every bad value."""
    env = os.environ if env is None else env
    problems = unknown_variable_problems(env)
    values: dict[str, object] = {n: env[env_name(n)] for n in settings.model_fields if env_name(n) in env}
    values.update(flags or {})
    try:
        loaded = settings.model_validate(values)
    except ValidationError as exc:
        raise SettingsError("; ".join([*problems, *_describe(exc, settings, values)])) from None
    if problems:
        raise SettingsError("; ".join(problems))
    return loaded


def load_from_args(settings: type[S], args: argparse.Namespace, env: Mapping[str, str] | None = None) -> S:
    """`load` with the flags `add_arguments` parsed into `args`."""
    return load(settings, flag_values(args), env)


def unknown_variable_problems(env: Mapping[str, str]) -> list[str]:
    """One line per PODSIZER_* variable that no role reads and no tool uses, with a suggestion."""
    known = known_variables()
    problems = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in known or name in TOOLING_VARIABLES:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{name}: not a podsizer setting{hint}")
    return problems


_BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _describe(exc: ValidationError, settings: type[BaseModel], given: Mapping[str, object]) -> list[str]:
    """One line per error; a value outside a setting's bounds is named as given, with the allowed range."""
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else ""
        msg = err["msg"].removeprefix("Value error, ")  # pydantic's wording for a validator's ValueError
        bounds = allowed_range(settings.model_fields[field]) if field in settings.model_fields else None
        if err["type"] in _BOUND_ERRORS and bounds is not None:
            msg = f"{shown(given.get(field, err['input']))} is outside the allowed range, {bounds}"
        elif "input" in err and not isinstance(err["input"], dict):
            msg += f" (got {err['input']!r})"
        lines.append(f"{where(field)}: {msg}" if field else msg)
    return lines


def run_reporting_errors(
    command: str, run: Callable[[argparse.Namespace], int], args: argparse.Namespace
) -> int:
    """`run(args)`, with bad settings printed as one message (`podsizer <command>: ...`) and exit status 2."""
    try:
        return run(args)
    except SettingsError as exc:
        print(f"podsizer {command}: {exc}", file=sys.stderr)
        return 2
