"""The pod plan over a template built from current requests/limits gives what the webhook patches."""

from __future__ import annotations

from podsizer.modes import Resolved
from podsizer.plan import plan_pod
from podsizer.podspec import CurrentResources, pod_template
from podsizer.policy import PlanPolicy
from tests.unit.webhook.builders import admitter, container, crec, recommendation, replicaset_pod, review

REC = recommendation(
    containers=[
        crec("main", {"cpu": "250m", "memory": "512Mi"}, {"memory": "640Mi"}),
        crec("istio-init", {"cpu": "10m", "memory": "32Mi"}),
    ]
)


def test_a_synthetic_template_plans_the_same_changes_as_admission_of_the_real_pod() -> None:
    main = ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "4Gi"})
    init = ({"cpu": "100m", "memory": "64Mi"}, {"memory": "128Mi"})
    pod = replicaset_pod(containers=[container("main", *main)], init=[container("istio-init", *init)])
    template = pod_template(
        [CurrentResources("main", *main), CurrentResources("istio-init", *init, init=True)]
    )
    for limit_policy in ("keep-ratio", "cap", "leave", "recommended"):
        policy = PlanPolicy(limit_policy)
        planned = plan_pod(template, REC, policy, Resolved("auto"))
        _, decision = admitter(REC, default_mode="auto", policy=policy).review(review(pod))
        assert planned.changes == decision.changes != ()


def test_recommended_policy_shows_and_applies_the_recommendations_limit() -> None:
    template = pod_template([CurrentResources("main", {"cpu": "1", "memory": "1Gi"}, {"memory": "4096Mi"})])
    plan = plan_pod(template, REC, PlanPolicy("recommended"), Resolved("dry-run"))
    limits = {(c.resource, c.old, c.new) for c in plan.changes if c.field == "limits"}
    assert limits == {("memory", "4096Mi", "640Mi")}
