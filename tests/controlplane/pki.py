"""Test PKI for the control plane: a CA, serving and client certificates, the service-account key pair."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class CertFiles:
    """A PEM certificate and its PEM private key on disk."""

    cert: Path
    key: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


class CertificateAuthority:
    """A self-signed CA that issues the apiserver's serving certificate and client certificates."""

    def __init__(self, directory: Path, common_name: str = "podsizer-test-ca") -> None:
        self._dir = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self._name = name
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(minutes=5))
            .not_valid_after(_now() + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.files = CertFiles(directory / "ca.crt", directory / "ca.key")
        self.files.cert.write_bytes(self.cert_pem)
        _write_key(self._key, self.files.key)

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, PEM (what goes into caBundle and kubeconfigs)."""
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def _issue(
        self,
        stem: str,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None = None,
    ) -> CertFiles:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(minutes=5))
            .not_valid_after(_now() + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        files = CertFiles(self._dir / f"{stem}.crt", self._dir / f"{stem}.key")
        files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, files.key)
        return files

    def issue_server(self, stem: str, dns_names: list[str], ips: list[str]) -> CertFiles:
        """A TLS serving certificate for the given DNS names and IP addresses."""
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (dns_names or ips)[0])])
        return self._issue(stem, subject, ExtendedKeyUsageOID.SERVER_AUTH, sans)

    def issue_client(self, stem: str, user: str, groups: list[str]) -> CertFiles:
        """A client certificate the apiserver maps to `user` (CN) in `groups` (one O each)."""
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        return self._issue(stem, x509.Name(attrs), ExtendedKeyUsageOID.CLIENT_AUTH)


def write_service_account_keys(directory: Path) -> CertFiles:
    """An RSA key pair for signing service-account tokens: `cert` holds the public key, `key` the private."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files = CertFiles(directory / "sa.pub", directory / "sa.key")
    files.cert.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    _write_key(key, files.key)
    return files
