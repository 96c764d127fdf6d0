"""Kubeconfigs read as kubectl reads them: several files merged (checked against kubectl 1.32 itself),
contexts and namespaces, and each way of authenticating used against the real local server —
token, tokenFile, exec plugins (v1 and v1beta1, refreshed on a 401), CA file or data,
insecure-skip-tls-verify and tls-server-name."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.errors import InvalidArgument
from mpijob.client.kubeconfig import Credentials, load, load_client_certificate
from mpijob.store.server_process import ServerInfo

from support import kubeconfig_token

KUBECTL = "/usr/bin/kubectl"


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _kubectl_view(kubeconfig: str, context: str | None = None) -> dict[str, Any]:
    """What kubectl makes of `$KUBECONFIG`: the minified, flattened config (files embedded as -data)."""
    args = [KUBECTL, "config", "view", "--minify", "--flatten", "-o", "json"] + (["--context", context] if context else [])
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    return json.loads(subprocess.run(args, env=env, check=True, capture_output=True, text=True, timeout=30).stdout)


@pytest.fixture
def two_files(tmp_path: Path) -> str:
    """a.yaml and sub/b.yaml defining the same names differently; only b sets current-context; file
    references are relative to each file's own directory."""
    (tmp_path / "ca-a.pem").write_text("-----BEGIN CERTIFICATE-----\nYQ==\n-----END CERTIFICATE-----\n")
    (tmp_path / "sub" / "certs").mkdir(parents=True)
    (tmp_path / "sub" / "certs" / "ca-b.pem").write_text("-----BEGIN CERTIFICATE-----\nYg==\n-----END CERTIFICATE-----\n")
    a = _write(tmp_path / "a.yaml", {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "shared", "cluster": {"server": "https://a.example:1", "certificate-authority": "ca-a.pem"}},
                     {"name": "only-a", "cluster": {"server": "https://only-a.example:1"}}],
        "users": [{"name": "shared-user", "user": {"token": "token-from-a"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "shared", "user": "shared-user", "namespace": "ns-a"}}],
    })
    b = _write(tmp_path / "sub" / "b.yaml", {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "shared", "cluster": {"server": "https://b.example:2"}},
                     {"name": "only-b", "cluster": {"server": "https://only-b.example:2",
                                                    "certificate-authority": "certs/ca-b.pem"}}],
        "users": [{"name": "shared-user", "user": {"token": "token-from-b"}},
                  {"name": "b-user", "user": {"token": "token-b-user"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "shared", "user": "shared-user", "namespace": "ns-b"}},
                     {"name": "other", "context": {"cluster": "only-b", "user": "b-user"}},
                     {"name": "mixed", "context": {"cluster": "only-a", "user": "shared-user"}}],
    })
    return f"{a}{os.pathsep}{b}"


@pytest.mark.parametrize("context", [None, "other", "mixed"])
def test_several_files_merge_as_kubectl_merges_them(two_files: str, context: str | None) -> None:
    theirs = _kubectl_view(two_files, context)
    config = load(two_files)
    name, _ = config.context(context)
    creds = config.credentials(context)
    (cluster,), (user,), (ctx,) = theirs["clusters"], theirs["users"], theirs["contexts"]
    assert name == theirs["current-context"] == ctx["name"]
    assert config.namespace(context) == ctx["context"].get("namespace", "default")
    assert creds.server == cluster["cluster"]["server"]
    assert creds.token == user["user"]["token"]
    ca = creds.ca_data or (Path(creds.ca_file).read_bytes() if creds.ca_file else None)
    assert ca == (base64.b64decode(cluster["cluster"]["certificate-authority-data"])
                  if "certificate-authority-data" in cluster["cluster"] else None)


def test_current_context_comes_from_the_first_file_that_sets_one(tmp_path: Path, two_files: str) -> None:
    first = _write(tmp_path / "first.yaml", {"apiVersion": "v1", "kind": "Config", "current-context": "other"})
    merged = f"{first}{os.pathsep}{tmp_path / 'missing.yaml'}{os.pathsep}{two_files}"  # a missing file is skipped
    assert load(merged).context()[0] == _kubectl_view(merged)["current-context"] == "other"


def test_unknown_and_unset_contexts_are_invalid_arguments(tmp_path: Path, two_files: str) -> None:
    with pytest.raises(InvalidArgument, match="available contexts: ctx, mixed, other") as err:
        load(two_files).context("nope")
    assert err.value.param == "context"
    bare = _write(tmp_path / "bare.yaml", {"apiVersion": "v1", "kind": "Config", "clusters": []})
    assert load(str(bare)).context() == ("", {}) and load(str(bare)).namespace() == "default"
    with pytest.raises(InvalidArgument, match="no current-context"):
        load(str(bare)).credentials()
    (tmp_path / "broken.yaml").write_text("clusters: [\n")
    with pytest.raises(InvalidArgument, match="not valid YAML"):
        load(str(tmp_path / "broken.yaml"))


# -- against the real local server ----------------------------------------------------------------------


def _local(server: ServerInfo) -> dict[str, Any]:
    return yaml.safe_load(Path(server.kubeconfig).read_text())


def _variant(server: ServerInfo, tmp_path: Path, name: str, *, cluster: dict[str, Any] | None = None,
             user: dict[str, Any] | None = None, as_json: bool = False) -> Path:
    """The server's kubeconfig with its cluster and/or user entry replaced."""
    config = _local(server)
    if cluster is not None:
        config["clusters"][0]["cluster"] = cluster
    if user is not None:
        config["users"][0]["user"] = user
    path = tmp_path / name
    path.touch(mode=0o600)
    path.write_text(json.dumps(config) if as_json else yaml.safe_dump(config))
    return path


def _lists_trainjobs(kubeconfig: Path) -> bool:
    with Connection(choose_cluster(kubeconfig)) as conn:
        return isinstance(conn.list_trainjobs(), list)


def test_token_file_and_ca_file_and_a_json_kubeconfig(server: ServerInfo, tmp_path: Path) -> None:
    cluster = _local(server)["clusters"][0]["cluster"]
    ca = tmp_path / "ca.pem"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (tmp_path / "token").write_text(kubeconfig_token(server.kubeconfig) + "\n")
    path = _variant(server, tmp_path, "files.json", cluster={"server": cluster["server"], "certificate-authority": "ca.pem"},
                    user={"tokenFile": "token"}, as_json=True)
    assert _lists_trainjobs(path)


def test_insecure_skip_tls_verify_and_tls_server_name(server: ServerInfo, tmp_path: Path) -> None:
    cluster = _local(server)["clusters"][0]["cluster"]
    assert _lists_trainjobs(_variant(server, tmp_path, "insecure", cluster={
        "server": cluster["server"], "insecure-skip-tls-verify": True}))
    assert "127.0.0.1" in cluster["server"]  # the certificate also names localhost: verified as that name
    assert _lists_trainjobs(_variant(server, tmp_path, "sni", cluster={**cluster, "tls-server-name": "localhost"}))
    wrong_name = _variant(server, tmp_path, "wrong-sni", cluster={**cluster, "tls-server-name": "not-the-server.example"})
    with pytest.raises(Exception, match="TLS verification failed"):
        _lists_trainjobs(wrong_name)


PLUGIN = """#!{python}
import json, os, sys
from pathlib import Path
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
calls = Path(sys.argv[1])
n = int(calls.read_text() or 0) + 1 if calls.exists() else 1
calls.write_text(str(n))
Path(sys.argv[1] + ".info").write_text(json.dumps(info))
token = os.environ["GOOD_TOKEN"] if n >= int(os.environ.get("GOOD_FROM", "1")) else "stale-token"
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                  "status": {{"token": token, "expirationTimestamp": "2999-01-01T00:00:00Z"}}}}))
"""


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
def test_an_exec_plugin_supplies_the_token(server: ServerInfo, tmp_path: Path, api_version: str) -> None:
    plugin = tmp_path / "bin" / "plugin"
    plugin.parent.mkdir()
    plugin.write_text(PLUGIN.format(python=sys.executable))
    plugin.chmod(0o755)
    calls = tmp_path / "calls"
    exec_spec = {"apiVersion": api_version, "command": "./bin/plugin", "args": [str(calls)], "interactiveMode": "Never",
                 "provideClusterInfo": True, "env": [{"name": "GOOD_TOKEN", "value": kubeconfig_token(server.kubeconfig)}]}
    path = _variant(server, tmp_path, "exec.yaml", user={"exec": exec_spec})
    with Connection(choose_cluster(path)) as conn:
        conn.list_trainjobs()
        conn.list_trainjobs()
    assert calls.read_text() == "1"  # run once, its token cached until it expires
    info = json.loads((tmp_path / "calls.info").read_text())
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == api_version
    assert info["spec"]["interactive"] is False and info["spec"]["cluster"]["server"] == server.url.rstrip("/")


def test_an_exec_token_the_server_refuses_is_fetched_again(server: ServerInfo, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text(PLUGIN.format(python=sys.executable))
    plugin.chmod(0o755)
    calls = tmp_path / "calls"
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": [str(calls)],
                 "env": [{"name": "GOOD_TOKEN", "value": kubeconfig_token(server.kubeconfig)},
                         {"name": "GOOD_FROM", "value": "2"}]}
    assert _lists_trainjobs(_variant(server, tmp_path, "stale.yaml", user={"exec": exec_spec}))
    assert calls.read_text() == "2"  # the first token got a 401; the plugin was asked again


def test_a_failing_exec_plugin_is_an_invalid_kubeconfig(server: ServerInfo, tmp_path: Path) -> None:
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": "false", "installHint": "install it"}
    with pytest.raises(InvalidArgument, match="exited 1"):
        _lists_trainjobs(_variant(server, tmp_path, "failing.yaml", user={"exec": exec_spec}))


def test_client_certificate_and_key_load_from_files_and_data(tmp_path: Path) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "user")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    (tmp_path / "c.pem").write_bytes(cert_pem)
    (tmp_path / "k.pem").write_bytes(key_pem)
    Credentials("https://x", cert_file=str(tmp_path / "c.pem"), key_file=str(tmp_path / "k.pem")).ssl_context()
    Credentials("https://x", cert_data=cert_pem, key_data=key_pem).ssl_context()
    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    import ssl

    with pytest.raises(ssl.SSLError):  # a key that is not the certificate's is refused, not ignored
        load_client_certificate(ssl.create_default_context(), cert_pem, other)
