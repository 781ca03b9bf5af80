"""Settings: PODSIZER_ variables and flags with defaults; a bad value fails at start naming the variable."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from podsizer.settings import SettingsError, WebhookSettings, load, load_from_args, run_reporting_errors
from webhook.cli import add_arguments, run


def load_settings() -> WebhookSettings:
    return load(WebhookSettings)


def settings_from_args(args: argparse.Namespace) -> WebhookSettings:
    return load_from_args(WebhookSettings, args)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_defaults_are_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert s.default_mode == "dry-run"
    assert s.port == 8443
    assert s.max_body_bytes == 5_000_000
    assert s.excluded_namespace_set == {"kube-system", "podsizer"}
    assert s.tls_cert_file == Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")


def test_every_setting_has_a_flag() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {a.option_strings[0] for a in parser._actions if a.option_strings and a.option_strings[0] != "-h"}
    names = {f.replace("_", "-") for f in WebhookSettings.model_fields}
    bools = {f.replace("_", "-") for f, i in WebhookSettings.model_fields.items() if i.annotation is bool}
    assert flags == {"--" + n for n in names} | {"--no-" + n for n in bools}


def test_env_then_flag_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODSIZER_PORT", "9443")
    monkeypatch.setenv("PODSIZER_DEFAULT_MODE", "auto")
    monkeypatch.setenv("PODSIZER_EXCLUDED_NAMESPACES", "kube-system, openshift-monitoring")
    s = settings_from_args(_parse(["--default-mode", "off", "--allow-mig-swap", "true"]))
    assert s.port == 9443
    assert s.default_mode == "off"
    assert s.allow_mig_swap is True
    assert s.excluded_namespace_set == {"kube-system", "openshift-monitoring", "podsizer"}


@pytest.mark.parametrize(
    ("env", "value", "named"),
    [
        ("PODSIZER_PORT", "eighty", "PODSIZER_PORT (--port)"),
        ("PODSIZER_PORT", "70000", "PODSIZER_PORT (--port)"),
        ("PODSIZER_DEFAULT_MODE", "yolo", "PODSIZER_DEFAULT_MODE (--default-mode)"),
        ("PODSIZER_LIMIT_POLICY", "double", "PODSIZER_LIMIT_POLICY (--limit-policy)"),
        ("PODSIZER_MIN_CONFIDENCE", "2", "PODSIZER_MIN_CONFIDENCE (--min-confidence)"),
        ("PODSIZER_STORE", "redis", "PODSIZER_STORE (--store)"),
        # ceilings with sane lower bounds: 1e-9 cores patched every CPU request to 1m
        ("PODSIZER_MAX_CPU_CORES", "1e-9", "PODSIZER_MAX_CPU_CORES (--max-cpu-cores)"),
        ("PODSIZER_MAX_CPU_CORES", "500m", "PODSIZER_MAX_CPU_CORES (--max-cpu-cores)"),
        ("PODSIZER_MAX_MEMORY_BYTES", "64Mi", "PODSIZER_MAX_MEMORY_BYTES (--max-memory-bytes)"),
        # timeouts with finite upper bounds: inf kept a slow client's connection open for ever
        (
            "PODSIZER_HEADER_TIMEOUT_SECONDS",
            "inf",
            "PODSIZER_HEADER_TIMEOUT_SECONDS (--header-timeout-seconds)",
        ),
        ("PODSIZER_BODY_TIMEOUT_SECONDS", "1e9", "PODSIZER_BODY_TIMEOUT_SECONDS (--body-timeout-seconds)"),
        ("PODSIZER_KEEP_ALIVE_TIMEOUT_SECONDS", "86400", "PODSIZER_KEEP_ALIVE_TIMEOUT_SECONDS"),
        ("PODSIZER_TLS_RELOAD_INTERVAL", "nan", "PODSIZER_TLS_RELOAD_INTERVAL (--tls-reload-interval)"),
    ],
)
def test_bad_env_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, named: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(SettingsError, match=named.replace("(", r"\(").replace(")", r"\)")):
        load_settings()


def test_run_exits_2_with_the_variable_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PODSIZER_TLS_RELOAD_INTERVAL", "-1")
    assert run_reporting_errors("webhook", run, _parse([])) == 2
    assert capsys.readouterr().err == (
        "podsizer webhook: PODSIZER_TLS_RELOAD_INTERVAL (--tls-reload-interval):"
        " '-1' is outside the allowed range, above 0 to 3600\n"
    )


def test_missing_certificate_fails_at_start_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parse(["--tls-cert-file", str(tmp_path / "none.crt"), "--tls-key-file", str(tmp_path / "k")])
    assert run_reporting_errors("webhook", run, args) == 2
    assert capsys.readouterr().err.startswith("podsizer webhook: PODSIZER_TLS_CERT_FILE (--tls-cert-file): ")


def test_docs_list_every_setting() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "webhook.md").read_text()
    assert len(WebhookSettings.model_fields) > 10
    for name in WebhookSettings.model_fields:
        assert f"`{'PODSIZER_' + name.upper()}`" in doc and f"`--{name.replace('_', '-')}`" in doc, name


def test_allowed_client_names_without_a_client_ca_fail_at_start_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a client CA no certificate is asked for: the names would leave /mutate open to anyone."""
    monkeypatch.delenv("PODSIZER_CLIENT_CA_FILE", raising=False)
    monkeypatch.setenv("PODSIZER_CLIENT_ALLOWED_NAMES", "kube-apiserver")
    args = _parse(["--tls-cert-file", str(tmp_path / "tls.crt"), "--tls-key-file", str(tmp_path / "tls.key")])
    assert run_reporting_errors("webhook", run, args) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "podsizer webhook: PODSIZER_CLIENT_ALLOWED_NAMES (--client-allowed-names) is set but "
        "PODSIZER_CLIENT_CA_FILE (--client-ca-file) is not"
    )
    assert "/mutate would answer any caller" in err
    with_ca = load(
        WebhookSettings, env={"PODSIZER_CLIENT_ALLOWED_NAMES": "a", "PODSIZER_CLIENT_CA_FILE": "ca"}
    )
    assert with_ca.client_allowed_names == ("a",)
