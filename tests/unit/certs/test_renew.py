"""`podsizer certs renew`: renew before expiry from the stored CA, rotate the CA when needed, else nothing."""

from __future__ import annotations

import argparse
import base64
import datetime as dt
from collections.abc import Mapping, Sequence

import pytest
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

from certs.cli import add_arguments, main, run_renew
from certs.expiry import not_after
from certs.generate import generate_ca, issue_serving_cert, service_dns_names
from certs.renew import RenewConfig, RenewError, SecretData, ca_bundle, renew

NS, SVC = "podsizer", "podsizer-webhook"
CFG = RenewConfig(NS, SVC, "podsizer-webhook-tls", "podsizer-webhook-ca", "podsizer-webhook")


class FakeApi:
    """Secrets in memory; records every write in order."""

    def __init__(self, secrets: dict[str, SecretData]) -> None:
        self.secrets = secrets
        self.writes: list[str] = []
        self.bundles: list[tuple[str, tuple[str, ...], str]] = []

    def read_secret(self, namespace: str, name: str) -> SecretData | None:
        assert namespace == NS
        return self.secrets.get(name)

    def replace_secret(self, namespace: str, name: str, old: SecretData, data: Mapping[str, bytes]) -> None:
        assert self.secrets[name].resource_version == old.resource_version
        self.secrets[name] = SecretData(dict(data), old.resource_version + "+", old.type)
        self.writes.append(f"secret/{name}")

    def patch_ca_bundle(self, configuration: str, webhooks: Sequence[str], ca_bundle_b64: str) -> None:
        self.bundles.append((configuration, tuple(webhooks), ca_bundle_b64))
        self.writes.append(f"mwc/{configuration}")


def _install(days: int, ca_days: int = 730, with_ca_key: bool = True) -> tuple[FakeApi, bytes]:
    """Secrets as the chart's generate mode makes them: a CA and a serving cert valid for `days`."""
    ca = generate_ca(days=ca_days)
    serving = issue_serving_cert(ca, service_dns_names(SVC, NS), days=days)
    tls = SecretData({"ca.crt": ca.cert_pem, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem}, "1")
    ca_data = {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem} if with_ca_key else {}
    api = FakeApi({CFG.secret: tls, CFG.ca_secret: SecretData(ca_data, "7")})
    return api, ca.cert_pem


def _verifies(bundle: bytes, leaf_pem: bytes) -> bool:
    store = Store(x509.load_pem_x509_certificates(bundle))
    verifier = PolicyBuilder().store(store).build_server_verifier(x509.DNSName(f"{SVC}.{NS}.svc"))
    verifier.verify(x509.load_pem_x509_certificate(leaf_pem), [])
    return True


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def test_nothing_is_done_while_the_certificate_is_far_from_expiry() -> None:
    api, _ = _install(days=365)
    result = renew(api, CFG, _now())
    assert not result.renewed and api.writes == []


def test_serving_cert_expiring_within_the_window_is_renewed_from_the_stored_ca() -> None:
    api, ca_pem = _install(days=30, ca_days=3650)
    before = api.secrets[CFG.secret].data["tls.crt"]
    result = renew(api, CFG, _now())
    assert result.renewed and not result.ca_rotated
    assert api.writes == [f"secret/{CFG.secret}"] and api.bundles == []
    tls = api.secrets[CFG.secret].data
    assert tls["tls.crt"] != before and tls["ca.crt"] == ca_pem
    assert _verifies(ca_pem, tls["tls.crt"])
    assert not_after(tls["tls.crt"]) > _now() + dt.timedelta(days=364)


def test_a_ca_that_would_expire_first_is_rotated_and_the_bundle_keeps_the_old_one() -> None:
    api, old_ca = _install(days=30, ca_days=30)
    old_leaf = api.secrets[CFG.secret].data["tls.crt"]
    result = renew(api, CFG, _now())
    assert result.renewed and result.ca_rotated
    # the new CA is saved first, then the caBundle, then the webhook's Secret
    assert api.writes == [
        f"secret/{CFG.ca_secret}",
        f"mwc/{CFG.webhook_configuration}",
        f"secret/{CFG.secret}",
    ]
    new_ca = api.secrets[CFG.ca_secret].data["ca.crt"]
    assert new_ca != old_ca and b"PRIVATE KEY" in api.secrets[CFG.ca_secret].data["ca.key"]
    ((mwc, hooks, bundle_b64),) = api.bundles
    assert (mwc, hooks) == (CFG.webhook_configuration, ("mutate-pods.podsizer.io",))
    bundle = base64.b64decode(bundle_b64)
    assert bundle == api.secrets[CFG.secret].data["ca.crt"] == new_ca + old_ca
    assert _verifies(bundle, api.secrets[CFG.secret].data["tls.crt"])
    assert _verifies(bundle, old_leaf)  # pods not yet reloaded still verify
    assert b"PRIVATE KEY" not in api.secrets[CFG.secret].data["ca.crt"]


def test_an_install_without_a_stored_ca_key_gets_a_new_ca() -> None:
    api, _ = _install(days=10, with_ca_key=False)
    result = renew(api, CFG, _now())
    assert result.ca_rotated and api.bundles


def test_an_expired_certificate_is_renewed() -> None:
    api, _ = _install(days=1, ca_days=3650)
    result = renew(api, CFG, _now() + dt.timedelta(days=5))
    assert result.renewed


def test_a_missing_secret_is_an_error() -> None:
    with pytest.raises(RenewError, match="not found"):
        renew(FakeApi({}), CFG, _now())


def test_bundle_drops_expired_previous_cas() -> None:
    a, b = generate_ca(days=1), generate_ca(days=10)
    later = _now() + dt.timedelta(days=2)
    assert ca_bundle(b.cert_pem, a.cert_pem + b.cert_pem, later) == b.cert_pem


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    base = ["renew", "--service", SVC, "--secret", CFG.secret, "--ca-secret", CFG.ca_secret]
    return parser.parse_args([*base, "--webhook-configuration", CFG.webhook_configuration, *extra])


def test_cli_renews_through_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    api, _ = _install(days=30, ca_days=3650)
    assert run_renew(_args("--namespace", NS, "--days", "90"), api) == 0
    assert "serving certificate renewed" in capsys.readouterr().err
    assert not_after(api.secrets[CFG.secret].data["tls.crt"]) < _now() + dt.timedelta(days=91)


def test_cli_refuses_a_window_as_long_as_the_lifetime(capsys: pytest.CaptureFixture[str]) -> None:
    api, _ = _install(days=30)
    assert run_renew(_args("--namespace", NS, "--days", "60", "--renew-before-days", "60"), api) == 2
    assert "--renew-before-days" in capsys.readouterr().err and api.writes == []


def test_cli_api_error_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_renew(_args("--namespace", NS), FakeApi({})) == 1
    assert "not found" in capsys.readouterr().err


def test_cli_needs_a_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert (
        main(["renew", "--service", "s", "--secret", "a", "--ca-secret", "b", "--webhook-configuration", "c"])
        == 2
    )
