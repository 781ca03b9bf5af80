"""CA and serving certificate generation: SANs, key usage, a chain that verifies, files and caBundle."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

from certs.cli import main
from certs.generate import generate_bundle, service_dns_names, write_bundle

NAMES = [
    "podsizer-webhook",
    "podsizer-webhook.podsizer",
    "podsizer-webhook.podsizer.svc",
    "podsizer-webhook.podsizer.svc.cluster.local",
]


def test_service_dns_names() -> None:
    assert service_dns_names("podsizer-webhook", "podsizer") == NAMES
    with pytest.raises(ValueError, match="service and namespace"):
        service_dns_names("", "x")


def test_serving_certificate_verifies_for_every_service_name() -> None:
    bundle = generate_bundle("podsizer-webhook", "podsizer", ["webhook.example.com"], ["127.0.0.1"])
    ca = x509.load_pem_x509_certificate(bundle.ca.cert_pem)
    leaf = x509.load_pem_x509_certificate(bundle.serving.cert_pem)
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [*NAMES, "webhook.example.com"]
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    verifier = (
        PolicyBuilder()
        .store(Store([ca]))
        .build_server_verifier(x509.DNSName("podsizer-webhook.podsizer.svc"))
    )
    verifier.verify(leaf, [])
    other = PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName("evil.podsizer.svc"))
    with pytest.raises(x509.verification.VerificationError):
        other.verify(leaf, [])


def test_bad_ip_is_named() -> None:
    with pytest.raises(ValueError, match="not-an-ip"):
        generate_bundle("s", "n", ip_addresses=["not-an-ip"])


def test_write_bundle_files_and_key_mode(tmp_path: Path) -> None:
    paths = write_bundle(generate_bundle("s", "n"), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert stat.S_IMODE(paths["tls.key"].stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in paths["tls.key"].read_bytes()


def test_cli_prints_the_ca_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "generate",
                "--service",
                "podsizer-webhook",
                "--namespace",
                "podsizer",
                "--out",
                str(tmp_path),
                "--dns",
                "extra.example.com",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.strip()
    assert base64.b64decode(printed) == (tmp_path / "ca.crt").read_bytes()
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "extra.example.com" in sans.get_values_for_type(x509.DNSName)


def test_cli_requires_service_and_namespace() -> None:
    with pytest.raises(SystemExit):
        main(["generate", "--service", "s"])


def _generate(*args: str) -> int:
    """`certs generate` for service s in namespace n, with `args`."""
    return main(["generate", "--service", "s", "--namespace", "n", *args])


def test_renewal_with_an_existing_ca_keeps_the_ca_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert _generate("--out", str(first), "--write-ca-key") == 0
    bundle_1 = capsys.readouterr().out.strip()
    assert stat.S_IMODE((first / "ca.key").stat().st_mode) == 0o600
    assert (
        _generate("--out", str(second), "--ca-cert", str(first / "ca.crt"), "--ca-key", str(first / "ca.key"))
        == 0
    )
    assert capsys.readouterr().out.strip() == bundle_1
    assert not (second / "ca.key").exists()
    ca = x509.load_pem_x509_certificate((first / "ca.crt").read_bytes())
    leaf = x509.load_pem_x509_certificate((second / "tls.crt").read_bytes())
    PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName("s.n.svc")).verify(leaf, [])
    assert (
        leaf.serial_number != x509.load_pem_x509_certificate((first / "tls.crt").read_bytes()).serial_number
    )


def test_mismatched_ca_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, c = tmp_path / "a", tmp_path / "c"
    assert _generate("--out", str(a), "--write-ca-key") == 0
    assert _generate("--out", str(c), "--write-ca-key") == 0
    capsys.readouterr()
    assert (
        _generate("--out", str(tmp_path / "x"), "--ca-cert", str(a / "ca.crt"), "--ca-key", str(c / "ca.key"))
        == 2
    )
    assert "is not the private key" in capsys.readouterr().err
    assert _generate("--ca-cert", str(a / "ca.crt")) == 2
