"""Identity: TLS with the server's own CA, bearer tokens, file modes, the written kubeconfig."""

from __future__ import annotations

import base64
import hashlib
import ssl
import stat
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509
from mpijob.server import tls
from mpijob.store.home import Home


def test_requests_without_or_with_wrong_token_are_401(connect) -> None:  # type: ignore[no-untyped-def]
    for token in ("", "not-the-token"):
        with connect(token=token) as c:
            for path in ("/api/v1/namespaces/default/configmaps", "/version", "/apis", "/openapi/v3"):
                resp = c.get(path)
                assert resp.status_code == 401, path
                assert resp.json()["kind"] == "Status" and resp.json()["reason"] == "Unauthorized"


def test_plain_http_and_unknown_ca_are_refused(server) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(httpx.HTTPError):
        httpx.get(server.url.replace("https://", "http://") + "/healthz", timeout=5)
    with pytest.raises(httpx.HTTPError):
        httpx.get(server.url + "/healthz", verify=ssl.create_default_context(), timeout=5)


def test_serving_certificate_names_loopback_and_the_kubernetes_service(server) -> None:  # type: ignore[no-untyped-def]
    """As kube-apiserver's: this machine, and the `kubernetes` Service that pods reach in their job's network."""
    cert = x509.load_pem_x509_certificate((server.home / "tls" / "server.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} <= set(
        sans.get_values_for_type(x509.DNSName))
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "10.96.0.1"]


def _ips(cert_path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]


def test_a_certificate_without_the_service_address_is_reissued_by_the_same_ca(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home made before pods had networks of their own gets a serving certificate that names the Service,
    signed by the CA its kubeconfigs already trust."""
    home = Home(tmp_path).ensure()
    monkeypatch.setattr(tls, "SAN_IPS", ("127.0.0.1",))  # what an older server issued
    files = tls.ensure(home)
    ca = files.ca_cert.read_bytes()
    assert _ips(files.cert) == ["127.0.0.1"]
    monkeypatch.undo()
    tls.ensure(home)
    assert _ips(files.cert) == ["127.0.0.1", "10.96.0.1"] and files.ca_cert.read_bytes() == ca


def test_secret_files_are_private(server) -> None:  # type: ignore[no-untyped-def]
    for rel in ("kubeconfig", "tokens.csv", "tls/ca.key", "tls/server.key"):
        mode = stat.S_IMODE((server.home / rel).stat().st_mode)
        assert mode == 0o600, f"{rel} has mode {oct(mode)}"


def test_kubeconfig_shape(server) -> None:  # type: ignore[no-untyped-def]
    config = yaml.safe_load(server.kubeconfig.read_text())
    assert config["current-context"] == "mpijob-local"
    (cluster,) = config["clusters"]
    assert cluster["name"] == "mpijob-local" and cluster["cluster"]["server"] == server.url
    assert server.url.startswith("https://127.0.0.1:")
    ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    assert ca == (server.home / "tls" / "ca.crt").read_bytes()
    (user,) = config["users"]
    assert user["name"] == "mpijob-admin" and user["user"]["token"]
    token_line = (server.home / "tokens.csv").read_text().splitlines()[0]  # the token's hash, never the token
    digest = "sha256:" + hashlib.sha256(user["user"]["token"].encode()).hexdigest()
    assert token_line.split(",")[:2] == [digest, "mpijob-admin"]
    assert user["user"]["token"] not in (server.home / "tokens.csv").read_text()
    (ctx,) = config["contexts"]
    assert ctx["context"] == {"cluster": "mpijob-local", "user": "mpijob-admin", "namespace": "default"}
