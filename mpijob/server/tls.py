"""The server's own certificate authority and serving certificate, like kube-apiserver's.

client-go sends bearer tokens only over https, so the local cluster serves TLS with a CA that the
kubeconfig carries as `certificate-authority-data`. The CA survives restarts (kubeconfigs copied
elsewhere keep working); the serving certificate is renewed when it is missing or near expiry.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mpijob.server.ports import kubernetes_service
from mpijob.store.home import Home

CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = dt.timedelta(days=30)
# What the serving certificate names, as kube-apiserver's does: this machine, and the `kubernetes` Service
# (its ClusterIP and DNS names), which pods reach in their own network (controllers/kubelet/network.py).
SAN_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
           "kubernetes.default.svc.cluster.local")
SAN_IPS = ("127.0.0.1", kubernetes_service()[0])


@dataclass(frozen=True)
class TlsFiles:
    ca_cert: Path
    cert: Path
    key: Path

    def ca_pem(self) -> bytes:
        return self.ca_cert.read_bytes()


def ensure(home: Home) -> TlsFiles:
    """Create (or reuse) the CA and a serving certificate for the names in `SAN_DNS` and `SAN_IPS`."""
    home.tls.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(home.tls / "ca.crt", home.tls / "server.crt", home.tls / "server.key")
    ca_key_path = home.tls / "ca.key"
    if not (files.ca_cert.exists() and ca_key_path.exists()):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _ca_cert(ca_key)
        _write_key(ca_key_path, ca_key)
        files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        files.cert.unlink(missing_ok=True)
    if _needs_serving_cert(files):
        ca_key = cast(ec.EllipticCurvePrivateKey,  # the EC key _write_key stored
                      serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None))
        ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _serving_cert(key, ca_key, ca_cert)
        _write_key(files.key, key)
        files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def _needs_serving_cert(files: TlsFiles) -> bool:
    if not (files.cert.exists() and files.key.exists()):
        return True
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    expiring = cert.not_valid_after_utc - _now() < RENEW_BEFORE
    return expiring or cert.issuer != ca.subject or _sans(cert) != _wanted_sans()


def _wanted_sans() -> list[x509.GeneralName]:
    return [*(x509.DNSName(n) for n in SAN_DNS), *(x509.IPAddress(ipaddress.ip_address(a)) for a in SAN_IPS)]


def _sans(cert: x509.Certificate) -> list[x509.GeneralName]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except x509.ExtensionNotFound:
        return []


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    os.chmod(path, 0o600)


def _ca_cert(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mpijob-ca@{int(_now().timestamp())}")])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - dt.timedelta(minutes=5))
        .not_valid_after(_now() + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def _serving_cert(
    key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate
) -> x509.Certificate:
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mpijob-apiserver")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - dt.timedelta(minutes=5))
        .not_valid_after(_now() + dt.timedelta(days=SERVING_DAYS))
        .add_extension(x509.SubjectAlternativeName(_wanted_sans()), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
