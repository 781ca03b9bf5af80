"""Session fixtures for the install tests: one `helm template` per distinct chart input, shared."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.integration.install.support import KUBE_VERSIONS, Render, Scenario, helm_template_text


@pytest.fixture(scope="session")
def render() -> Render:
    """Renders the chart (cached by input) and returns fresh objects, so tests may modify what they get."""
    cache: dict[tuple[Scenario, str, bool], str] = {}

    def _render(
        scenario: Scenario, *, kube_version: str = KUBE_VERSIONS[-1], with_tests: bool = True
    ) -> list[dict[str, Any]]:
        key = (scenario, kube_version, with_tests)
        if key not in cache:
            cache[key] = helm_template_text(scenario, kube_version=kube_version, with_tests=with_tests)
        return [d for d in yaml.safe_load_all(cache[key]) if d]

    return _render
