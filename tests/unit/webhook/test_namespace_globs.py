"""Excluded namespaces may be glob patterns (openshift-*, kube-*): podsizer.modes' rule, used by admission."""

from __future__ import annotations

import pytest

from podsizer.modes import namespace_excluded
from podsizer.settings import WebhookSettings
from tests.unit.webhook.builders import admitter, recommendation, replicaset_pod, review

OPENSHIFT = frozenset({"openshift", "openshift-*", "kube-*", "podsizer"})


@pytest.mark.parametrize(
    ("namespace", "excluded"),
    [
        ("openshift", True),
        ("openshift-monitoring", True),
        ("openshift-kube-apiserver-operator", True),
        ("kube-system", True),
        ("kube-node-lease", True),
        ("podsizer", True),
        ("openshiftx", False),
        ("my-openshift-app", False),
        ("OPENSHIFT-monitoring", False),
        ("shop", False),
        ("kube", False),
    ],
)
def test_names_and_globs(namespace: str, excluded: bool) -> None:
    assert namespace_excluded(namespace, OPENSHIFT) is excluded


def test_character_classes_and_single_character_globs() -> None:
    assert namespace_excluded("team-a", {"team-[ab]"})
    assert not namespace_excluded("team-c", {"team-[ab]"})
    assert namespace_excluded("ns1", {"ns?"}) and not namespace_excluded("ns12", {"ns?"})


def test_admission_skips_a_pod_in_a_globbed_namespace() -> None:
    a = admitter(
        recommendation("Deployment", "web", "openshift-monitoring"),
        recommendation("Deployment", "web", "shop"),
        excluded=OPENSHIFT,
    )
    _, skipped = a.review(review(replicaset_pod(), "openshift-monitoring"))
    assert (skipped.outcome, skipped.reason) == ("skipped", "excluded-namespace")
    _, applied = a.review(review(replicaset_pod(), "shop"))
    assert applied.outcome == "applied"


def test_settings_keep_patterns_and_add_the_own_namespace() -> None:
    settings = WebhookSettings(excluded_namespaces="openshift, openshift-*,kube-*", namespace="podsizer")
    assert settings.excluded_namespace_set == frozenset({"openshift", "openshift-*", "kube-*", "podsizer"})
