"""The chart lints, meets chart-verifier's checks, rejects bad values, renders each certs mode."""

from __future__ import annotations

import base64
import datetime as dt
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from podsizer.policy import PlanPolicy
from podsizer.settings import ConsoleSettings, RecommenderSettings, UpdaterSettings, WebhookSettings, load
from tests.integration.install.support import (
    CHART,
    KUBE_VERSIONS,
    NAMESPACE,
    SCENARIOS,
    Render,
    Scenario,
    objects_of,
    one,
    run_helm,
)

WEBHOOK = "podsizer-webhook"
SECRET = "podsizer-webhook-tls"
SERVICE_DNS = f"{WEBHOOK}.{NAMESPACE}.svc"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_helm_lint_strict_passes(scenario: Scenario) -> None:
    assert KUBE_VERSIONS
    for version in KUBE_VERSIONS:
        args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE, "--kube-version", version]
        proc = run_helm([*args, *scenario.args()])
        assert "0 chart(s) failed" in proc.stdout, proc.stdout


def test_helm_lint_strict_fails_a_broken_chart(tmp_path: Path) -> None:
    broken = tmp_path / "podsizer"
    shutil.copytree(CHART, broken)
    path = broken / "templates" / "webhook-deployment.yaml"
    path.write_text(path.read_text() + "\n{{ .Values.webhook.missing.field }}\n")
    proc = run_helm(["lint", "--strict", str(broken)], check=False)
    assert proc.returncode != 0 and "1 chart(s) failed" in proc.stderr, proc.stdout
    assert "webhook-deployment.yaml" in proc.stdout and "nil pointer" in proc.stdout


def test_chart_yaml_meets_certification_requirements() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"  # is-helm-v3
    assert chart["kubeVersion"] == ">=1.27.0-0"  # has-kubeversion
    assert chart["annotations"]["charts.openshift.io/name"]  # required-annotations-present
    assert (CHART / "README.md").read_text().strip()  # has-readme
    assert (CHART / "values.yaml").is_file()  # contains-values
    assert (CHART / "values.schema.json").is_file()  # contains-values-schema
    assert not (CHART / "crds").exists()  # not-contains-crds


def test_chart_contains_a_helm_test_and_no_crds_or_csi_objects(render: Render) -> None:
    assert SCENARIOS
    for scenario in SCENARIOS:
        docs = render(scenario)
        kinds = {d["kind"] for d in docs}
        assert "CustomResourceDefinition" not in kinds, scenario.name
        assert not kinds & {"CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass"}, scenario.name
        tests = [d for d in docs if d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
        assert [t["kind"] for t in tests] == ["Pod"], scenario.name
        script = tests[0]["spec"]["containers"][0]["args"][0]
        assert f"{WEBHOOK}.{NAMESPACE}.svc" in script and "/healthz" in script


# helm (v3.20) names the offending value by its JSON pointer.
@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("webhook.timeoutSeconds=10", "at '/webhook/timeoutSeconds': maximum"),
        ("webhook.replicas=0", "at '/webhook/replicas': minimum"),
        ("certs.mode=self", "at '/certs/mode': value must be one of"),
        ("certs.mode=secret", "at '/certs'"),
        ("recommender.prometheus.url=prometheus:9090", "at '/recommender/prometheus/url'"),
        ("recommender.source=influx", "at '/recommender/source': value must be one of"),
        ("image.digest=latest", "at '/image/digest'"),
        ("webhook.excludeNamespaces[0]=Not_A_Namespace", "at '/webhook/excludeNamespaces/0'"),
        ("unknownKey=1", "additional properties 'unknownKey' not allowed"),
        ("webhook.defaultMode=always", "at '/webhook/defaultMode': value must be one of"),
    ],
)
def test_values_schema_rejects_bad_values(setting: str, complaint: str) -> None:
    proc = run_helm(["template", "x", str(CHART), "--set", setting], check=False)
    assert proc.returncode != 0, f"{setting} was accepted"
    assert "values don't meet the specifications of the schema" in proc.stderr
    assert complaint in proc.stderr, proc.stderr


def test_kube_version_floor_is_enforced(render: Render) -> None:
    proc = run_helm(["template", "x", str(CHART), "--kube-version", "1.26.9"], check=False)
    assert proc.returncode != 0 and "kubeVersion" in proc.stderr, proc.stderr
    for version in KUBE_VERSIONS:
        assert render(SCENARIOS[0], kube_version=version)


def _webhook_config(docs: list[dict[str, Any]]) -> dict[str, Any]:
    mwc: dict[str, Any] = dict(one(docs, "MutatingWebhookConfiguration"))
    return mwc


def _tls_volume_secret(docs: list[dict[str, Any]]) -> str:
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    vol = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    name: str = vol["secret"]["secretName"]
    return name


def _serving_certificate(docs: list[dict[str, Any]]) -> Mapping[str, Any]:
    """The webhook's serving Certificate (the other one is the API server's client certificate)."""
    (cert,) = [c for c in objects_of(docs, "Certificate") if c["spec"]["secretName"] == SECRET]
    return cert


def test_generate_mode_makes_a_ca_signed_certificate_for_the_service(render: Render) -> None:
    docs = render(SCENARIOS[0])
    secrets = {s["metadata"]["name"]: s for s in objects_of(docs, "Secret")}
    assert sorted(secrets) == ["podsizer-webhook-ca", "podsizer-webhook-client", SECRET]  # client: clientAuth
    secret, ca_secret = secrets[SECRET], secrets["podsizer-webhook-ca"]
    assert (secret["type"], ca_secret["type"]) == ("kubernetes.io/tls", "Opaque")
    assert secret["metadata"]["name"] == _tls_volume_secret(docs)
    # the CA's key is kept for renewal in a Secret of its own that the webhook never mounts
    assert "ca.key" not in secret["data"] and ca_secret["data"]["ca.crt"] == secret["data"]["ca.crt"]
    ca_key = serialization.load_pem_private_key(base64.b64decode(ca_secret["data"]["ca.key"]), None)
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    leaf.verify_directly_issued_by(ca)
    assert ca_key.public_key() == ca.public_key()
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert SERVICE_DNS in sans.get_values_for_type(x509.DNSName)
    assert leaf.not_valid_after_utc - dt.datetime.now(dt.UTC) > dt.timedelta(days=700)
    hook = _webhook_config(docs)["webhooks"][0]
    assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    # A bare API server can take this release: only built-in API groups.
    groups = {d["apiVersion"].rpartition("/")[0] for d in docs}
    assert groups <= {
        "",
        "apps",
        "batch",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
    }, groups


def test_generate_mode_renews_the_certificate_with_a_least_privilege_cronjob(render: Render) -> None:
    docs = render(SCENARIOS[0])
    (job,) = objects_of(docs, "CronJob")
    spec = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = container["args"]
    assert args[:2] == ["certs", "renew"]
    assert {
        "--secret=podsizer-webhook-tls",
        "--ca-secret=podsizer-webhook-ca",
        "--webhook-configuration=podsizer-webhook",
        "--service=podsizer-webhook",
        "--renew-before-days=60",
        "--days=730",
    } <= set(args)
    assert spec["serviceAccountName"] == "podsizer-cert-renewer"
    assert job["spec"]["concurrencyPolicy"] == "Forbid"
    secrets = {s["metadata"]["name"] for s in objects_of(docs, "Secret")}
    assert {"podsizer-webhook-tls", "podsizer-webhook-ca", "podsizer-webhook-client"} == secrets


@pytest.mark.parametrize("sets", [("certs.mode=cert-manager",), ("certs.renewal.enabled=false",)])
def test_no_renewal_cronjob_outside_generate_mode_or_when_disabled(
    render: Render, sets: tuple[str, ...]
) -> None:
    assert not objects_of(render(Scenario("x", sets)), "CronJob")


def test_renewal_window_must_be_shorter_than_the_validity() -> None:
    result = run_helm(
        [
            "template",
            "podsizer",
            str(CHART),
            "--set",
            "certs.validityDays=30",
            "--set",
            "certs.renewal.renewBeforeDays=30",
        ],
        check=False,
    )
    assert result.returncode != 0 and "renewBeforeDays must be less than" in result.stderr


def test_cert_manager_mode_uses_a_certificate_and_ca_injection(render: Render) -> None:
    docs = render(SCENARIOS[1])
    assert not objects_of(docs, "Secret")
    cert = _serving_certificate(docs)
    issuer = one(docs, "Issuer")
    assert cert["spec"]["issuerRef"]["name"] == issuer["metadata"]["name"]
    assert cert["spec"]["secretName"] == _tls_volume_secret(docs) == SECRET
    assert SERVICE_DNS in cert["spec"]["dnsNames"]
    mwc = _webhook_config(docs)
    ns, name = mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].split("/")
    assert (ns, name) == (cert["metadata"]["namespace"], cert["metadata"]["name"])
    assert "caBundle" not in mwc["webhooks"][0]["clientConfig"]


def test_cert_manager_mode_with_an_existing_issuer_creates_none(render: Render) -> None:
    docs = render(SCENARIOS[2])
    assert not objects_of(docs, "Issuer")
    assert _serving_certificate(docs)["spec"]["issuerRef"] == {
        "name": "corp-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


def test_service_ca_mode_uses_openshift_annotations(render: Render) -> None:
    docs = render(SCENARIOS[3])
    assert not objects_of(docs, "Secret") and not objects_of(docs, "Certificate")
    svc = next(d for d in objects_of(docs, "Service") if d["metadata"]["name"] == WEBHOOK)
    annotation = svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
    assert annotation == _tls_volume_secret(docs)
    mwc = _webhook_config(docs)
    assert mwc["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"] == "true"
    assert "caBundle" not in mwc["webhooks"][0]["clientConfig"]


def test_secret_mode_uses_the_given_secret_and_ca(render: Render) -> None:
    docs = render(SCENARIOS[4])
    assert not objects_of(docs, "Secret")
    assert _tls_volume_secret(docs) == "my-webhook-tls"
    assert _webhook_config(docs)["webhooks"][0]["clientConfig"]["caBundle"] == "Y2EK"


def test_webhook_runs_two_replicas_with_pdb_and_anti_affinity(render: Render) -> None:
    docs = render(SCENARIOS[0])
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    assert dep["spec"]["replicas"] == 2
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    terms = dep["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert (
        terms[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    )
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["webhook"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"


def test_recommender_runs_one_replica_with_leader_election_and_settings(render: Render) -> None:
    docs = render(Scenario("x", ("recommender.prometheus.url=http://prom.monitoring:9090",)))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-recommender")
    assert dep["spec"]["replicas"] == 1
    container = dep["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["args"] == ["run"]
    assert env["PODSIZER_PROMETHEUS_URL"] == "http://prom.monitoring:9090"
    assert env["PODSIZER_LEADER_ELECTION"] == "true"
    assert env["PODSIZER_STORE"] == "crd"
    assert {"POD_NAME", "POD_NAMESPACE"} <= env.keys()
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_pdb_is_left_out_for_a_single_webhook_replica(render: Render) -> None:
    docs = render(Scenario("one", ("webhook.replicas=1",)))
    assert not objects_of(docs, "PodDisruptionBudget")


def test_dcgm_counters_configmap_enables_sm_active(render: Render) -> None:
    docs = render(SCENARIOS[5])
    cm = one(docs, "ConfigMap")
    assert cm["metadata"]["namespace"] == "gpu-operator"
    lines = [ln.split(",")[0].strip() for ln in cm["data"]["dcgm-metrics.csv"].splitlines()]
    assert "DCGM_FI_PROF_SM_ACTIVE" in lines and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in lines


def test_webhook_settings_match_its_webhook_configuration(render: Render) -> None:
    docs = render(Scenario("x", ("webhook.excludeNamespaces={team-a}", "webhook.defaultMode=auto")))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    env = {e["name"]: e for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    excluded = set(env["PODSIZER_EXCLUDED_NAMESPACES"]["value"].split(","))
    assert env["PODSIZER_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    hook = one(docs, "MutatingWebhookConfiguration")["webhooks"][0]
    selector = hook["namespaceSelector"]["matchExpressions"]
    by_name = next(e for e in selector if e["key"] == "kubernetes.io/metadata.name")
    assert excluded | {NAMESPACE} == set(by_name["values"]) == {"kube-system", "team-a", NAMESPACE}
    assert env["PODSIZER_DEFAULT_MODE"]["value"] == "auto"
    assert env["PODSIZER_STORE"]["value"] == "crd"
    assert env["PODSIZER_TLS_CERT_FILE"]["value"] == "/etc/podsizer/tls/tls.crt"


def test_openshift_values_send_the_service_account_token_to_thanos(render: Render) -> None:
    docs = render(SCENARIOS[3])
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-recommender")
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PODSIZER_PROMETHEUS_URL"].startswith("https://thanos-querier.openshift-monitoring.svc")
    token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert env["PODSIZER_PROMETHEUS_BEARER_TOKEN_FILE"] == token


ROLE_OF_ARGS = {
    ("run",): RecommenderSettings,
    ("webhook",): WebhookSettings,
    ("console",): ConsoleSettings,
    ("updater",): UpdaterSettings,
}


def _settings_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment as the process sees it (fieldRef values stand in as 'x')."""
    return {e["name"]: str(e.get("value", "x")) for e in container["env"]}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_deployment_sets_only_settings_its_role_accepts(render: Render, scenario: Scenario) -> None:
    deployments = objects_of(render(scenario), "Deployment")
    assert deployments
    for dep in deployments:
        container = dep["spec"]["template"]["spec"]["containers"][0]
        role = ROLE_OF_ARGS[tuple(container["args"])]
        load(role, env=_settings_env(container))  # raises SettingsError naming any bad or unknown variable


def test_the_plan_values_reach_the_webhook_and_the_recommender_alike(render: Render, tmp_path: Path) -> None:
    values = {
        "webhook": {"defaultMode": "auto"},
        "plan": {"limitPolicy": "cap", "minConfidence": 0.4},
        "gpu": {"resizeDefault": True, "allowMigSwap": True},
    }
    values_file = tmp_path / "plan.yaml"  # a file: --set would pass 0.4 as a string
    values_file.write_text(yaml.safe_dump(values))
    policies = {}
    for dep in objects_of(render(Scenario("plan", values_files=(str(values_file),))), "Deployment"):
        container = dep["spec"]["template"]["spec"]["containers"][0]
        role = ROLE_OF_ARGS[tuple(container["args"])]
        policies[dep["metadata"]["name"]] = load(role, env=_settings_env(container)).plan_policy()
    expected = PlanPolicy(
        "cap", gpu_resize=True, allow_mig_swap=True, min_confidence=0.4, default_mode="auto"
    )
    assert policies == {"podsizer-recommender": expected, WEBHOOK: expected}


def test_the_webhook_reads_the_crd_store_explicitly(render: Render) -> None:
    """PODSIZER_STORE defaults to json in every process; in a cluster the webhook must watch the CRD."""
    dep = next(d for d in objects_of(render(SCENARIOS[0]), "Deployment") if d["metadata"]["name"] == WEBHOOK)
    env = _settings_env(dep["spec"]["template"]["spec"]["containers"][0])
    assert load(WebhookSettings, env=env).store == "crd"


@pytest.mark.parametrize(
    "value", ["plan.limitPolicy=double", "gpu.resizeDefault=maybe", "plan.minConfidence=2"]
)
def test_bad_plan_values_are_rejected_by_the_schema(value: str) -> None:
    proc = run_helm(["template", "x", str(CHART), "--namespace", NAMESPACE, "--set", value], check=False)
    assert proc.returncode != 0
    assert "values don't meet the specifications of the schema" in proc.stderr


def test_console_is_off_by_default(render: Render) -> None:
    docs = render(SCENARIOS[0])
    assert not [
        d for d in docs if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "console"
    ]


def test_console_deploys_a_clusterip_service_and_an_ingress_or_a_route(render: Render) -> None:
    ingress = render(next(s for s in SCENARIOS if s.name == "console-ingress"))
    dep = next(d for d in objects_of(ingress, "Deployment") if d["metadata"]["name"] == "podsizer-console")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["console"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PODSIZER_CONSOLE_HOST"] == "0.0.0.0" and env["PODSIZER_CONSOLE_PORT"] == "8080"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    svc = next(s for s in objects_of(ingress, "Service") if s["metadata"]["name"] == "podsizer-console")
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["ports"][0]["targetPort"] == "http"
    (ing,) = objects_of(ingress, "Ingress")
    assert ing["spec"]["rules"][0]["host"] == "podsizer.example.com"
    assert ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "podsizer-console"
    assert objects_of(ingress, "Route") == []
    route_docs = render(next(s for s in SCENARIOS if s.name == "console-openshift-route"))
    (route,) = objects_of(route_docs, "Route")
    assert route["spec"]["to"]["name"] == "podsizer-console"
    assert route["spec"]["tls"]["termination"] == "edge"
    assert objects_of(route_docs, "Ingress") == []


def test_the_oauth_proxy_is_the_only_way_in_to_the_console(render: Render) -> None:
    docs = render(next(s for s in SCENARIOS if s.name == "console-openshift-oauth"))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-console")
    console, proxy = dep["spec"]["template"]["spec"]["containers"]
    assert _settings_env(console)["PODSIZER_CONSOLE_HOST"] == "127.0.0.1"  # not reachable past the proxy
    assert console["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 8443, "scheme": "HTTPS"}
    args = proxy["args"]
    assert "--provider=openshift" in args and "--upstream=http://127.0.0.1:8080" in args
    assert "--skip-auth-regex=^/healthz$" in args
    sar = json.loads(next(a for a in args if a.startswith("--openshift-sar=")).split("=", 1)[1])
    assert sar == {
        "namespace": NAMESPACE,
        "resource": "services",
        "name": "podsizer-console",
        "verb": "get",
    }
    svc = next(s for s in objects_of(docs, "Service") if s["metadata"]["name"] == "podsizer-console")
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == ["https"]
    tls_secret = svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
    volumes = {
        v["name"]: v["secret"]["secretName"]
        for v in dep["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    }
    assert volumes["proxy-tls"] == tls_secret
    (cookie,) = [s for s in objects_of(docs, "Secret") if s["metadata"]["name"] == volumes["proxy-cookie"]]
    assert len(base64.b64decode(cookie["data"]["session_secret"])) == 32
    (route,) = objects_of(docs, "Route")
    assert (
        route["spec"]["port"]["targetPort"] == "https" and route["spec"]["tls"]["termination"] == "reencrypt"
    )
    sa = next(a for a in objects_of(docs, "ServiceAccount") if a["metadata"]["name"] == "podsizer-console")
    redirect = json.loads(
        sa["metadata"]["annotations"]["serviceaccounts.openshift.io/oauth-redirectreference.primary"]
    )
    assert redirect["reference"] == {"kind": "Route", "name": route["metadata"]["name"]}
    delegator = next(
        b for b in objects_of(docs, "ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"
    )
    assert delegator["subjects"][0]["name"] == "podsizer-console"


def test_without_the_oauth_proxy_the_console_has_no_proxy_parts(render: Render) -> None:
    docs = render(next(s for s in SCENARIOS if s.name == "console-openshift-route"))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-console")
    assert [c["name"] for c in dep["spec"]["template"]["spec"]["containers"]] == ["console"]
    assert not [
        b for b in objects_of(docs, "ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"
    ]


def test_the_console_reads_what_the_recommender_reads_by_default(render: Render) -> None:
    sets = ("console.enabled=true", "recommender.prometheus.url=http://prom:9090")
    for recommender_source, expected in (("prometheus", "prometheus"), ("demo", "demo")):
        docs = render(
            Scenario(f"console-{expected}", sets=(*sets, f"recommender.source={recommender_source}"))
        )
        dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-console")
        settings = load(ConsoleSettings, env=_settings_env(dep["spec"]["template"]["spec"]["containers"][0]))
        assert settings.chosen_source() == (expected, "console_source")
    docs = render(Scenario("console-default", sets=sets))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-console")
    settings = load(ConsoleSettings, env=_settings_env(dep["spec"]["template"]["spec"]["containers"][0]))
    assert (settings.chosen_source(), settings.prometheus_url, settings.store) == (
        ("prometheus", "console_source"),
        "http://prom:9090",
        "crd",
    )


def test_a_prometheus_console_reads_the_recommenders_prometheus_and_store(render: Render) -> None:
    sets = ("console.enabled=true", "console.source=prometheus", "console.refreshSeconds=60")
    docs = render(Scenario("console-prometheus", sets=(*sets, "recommender.prometheus.url=http://prom:9090")))
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-console")
    settings = load(ConsoleSettings, env=_settings_env(dep["spec"]["template"]["spec"]["containers"][0]))
    assert settings.chosen_source() == ("prometheus", "console_source")
    assert (settings.prometheus_url, settings.store, settings.console_refresh_seconds) == (
        "http://prom:9090",
        "crd",
        60.0,
    )
