"""podsizer.kube.client: explicit kubeconfig, else in-cluster, else ~/.kube/config; never the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from podsizer.kube.client import kube_api_client
from podsizer.settings import SettingsError

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}"}}
users:
- name: u
  user: {{token: t0ken}}
contexts:
- name: x
  context: {{cluster: c, user: u}}
current-context: x
"""


def _write(path: Path, server: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(KUBECONFIG.format(server=server))
    return path


@pytest.fixture
def outside_a_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_an_explicit_kubeconfig_is_used(outside_a_cluster: Path, tmp_path: Path) -> None:
    _write(outside_a_cluster / ".kube" / "config", "https://127.0.0.1:1")
    explicit = _write(tmp_path / "explicit.yaml", "https://127.0.0.1:2")
    assert kube_api_client(explicit).configuration.host == "https://127.0.0.1:2"


def test_without_one_outside_a_cluster_it_falls_back_to_the_users_kube_config(
    outside_a_cluster: Path,
) -> None:
    _write(outside_a_cluster / ".kube" / "config", "https://127.0.0.1:3")
    api = kube_api_client(None)
    assert api.configuration.host == "https://127.0.0.1:3"
    token = api.configuration.get_api_key_with_prefix("BearerToken")
    assert "t0ken" in f"{api.configuration.api_key} {token}"


def test_kubeconfig_in_the_environment_wins_over_home(
    outside_a_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(outside_a_cluster / ".kube" / "config", "https://127.0.0.1:3")
    monkeypatch.setenv("KUBECONFIG", str(_write(tmp_path / "env.yaml", "https://127.0.0.1:4")))
    assert kube_api_client(None).configuration.host == "https://127.0.0.1:4"


def test_the_kubernetes_packages_default_configuration_is_never_changed(outside_a_cluster: Path) -> None:
    before = client.Configuration.get_default_copy().host
    _write(outside_a_cluster / ".kube" / "config", "https://127.0.0.1:5")
    kube_api_client(None)
    assert client.Configuration.get_default_copy().host == before != "https://127.0.0.1:5"


def test_in_a_cluster_without_a_service_account_the_error_names_the_setting(
    outside_a_cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    with pytest.raises(SettingsError, match=r"^PODSIZER_KUBECONFIG \(--kubeconfig\): cannot configure the "):
        kube_api_client(None)


def test_nothing_usable_is_one_error_naming_the_setting_and_the_file(outside_a_cluster: Path) -> None:
    with pytest.raises(SettingsError) as err:
        kube_api_client(None)
    assert str(err.value).startswith(
        f"PODSIZER_KUBECONFIG (--kubeconfig): cannot configure the Kubernetes client (kubeconfig "
        f"{outside_a_cluster / '.kube' / 'config'}): "
    )
