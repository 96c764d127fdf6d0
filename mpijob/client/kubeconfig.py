"""Kubeconfig files, read the way kubectl (client-go's clientcmd) reads them.

Why our own loader: the `kubernetes` package's is correct, but importing it costs about 0.35 s — most
of what a CLI call would cost — and lightkube's does not merge several files. This module covers what
kubeconfigs hold in practice, tested against kubectl itself (tests/client/test_client_kubeconfig.py):

* `$KUBECONFIG` with several files merged kubectl's way: the first file to define a cluster, user or
  context name wins it, `current-context` comes from the first file that sets one, missing files are
  skipped; relative paths in a file are relative to that file's directory;
* contexts (current or named) and their namespace;
* the cluster's `server`, `certificate-authority(-data)`, `insecure-skip-tls-verify`, `tls-server-name`;
* the user's `token`, `tokenFile` (read again for every request, as it rotates), `username`/`password`,
  `client-certificate(-data)`/`client-key(-data)`, and `exec` credential plugins
  (`client.authentication.k8s.io/v1` and `v1beta1` `ExecCredential`, token or client certificate,
  cached until `expirationTimestamp` and fetched again when the server answers 401).

Only the rare `auth-provider` users (oidc, gcp) are handed to the `kubernetes` package's loader, which is
imported then and only then.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mpijob.api import Obj
from mpijob.api.core.durations import parse_time
from mpijob.client.errors import InvalidArgument

DEFAULT_NAMESPACE = "default"
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_TIMEOUT = 60.0  # seconds an exec plugin may take (it may open a browser, or ask a vault)


@dataclass(frozen=True)
class Kubeconfig:
    """One or several kubeconfig files merged: name → entry for clusters, users and contexts."""

    files: tuple[str, ...]
    clusters: dict[str, Obj] = field(default_factory=dict)
    users: dict[str, Obj] = field(default_factory=dict)
    contexts: dict[str, Obj] = field(default_factory=dict)
    current_context: str = ""

    @property
    def source(self) -> str:
        return os.pathsep.join(self.files)

    def context(self, name: str | None = None) -> tuple[str, Obj]:
        """(name, entry) of context `name`, else of the current context; ("", {}) when neither is set."""
        chosen = name if name is not None else self.current_context
        if not chosen:
            return "", {}
        if chosen not in self.contexts:
            known = ", ".join(sorted(self.contexts)) or "none"
            where = "" if name is not None else " (the kubeconfig's current-context)"
            raise InvalidArgument("context", chosen, f"not found in kubeconfig {self.source!r}{where}",
                                  f"available contexts: {known}")
        return chosen, self.contexts[chosen]

    def namespace(self, context: str | None = None) -> str:
        return str(self.context(context)[1].get("namespace") or DEFAULT_NAMESPACE)

    def credentials(self, context: str | None = None) -> Credentials:
        """How to reach and authenticate to the cluster of a context."""
        name, ctx = self.context(context)
        if not name:
            raise InvalidArgument("context", None, f"is not set: kubeconfig {self.source!r} has no current-context",
                                  "name a context")
        cluster = self.clusters.get(str(ctx.get("cluster") or ""))
        if cluster is None or not cluster.get("server"):
            raise InvalidArgument("context", name, f"names cluster {ctx.get('cluster')!r}, which kubeconfig "
                                  f"{self.source!r} does not define (with a server)", "fix the kubeconfig")
        user = self.users.get(str(ctx.get("user") or ""), {})
        return Credentials(
            server=str(cluster["server"]).rstrip("/"),
            ca_file=cluster.get("certificate-authority"),
            ca_data=_b64(cluster.get("certificate-authority-data")),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            tls_server_name=cluster.get("tls-server-name") or None,
            token=user.get("token") or None,
            token_file=user.get("tokenFile") or None,
            username=user.get("username") or None,
            password=user.get("password") or None,
            cert_file=user.get("client-certificate"),
            cert_data=_b64(user.get("client-certificate-data")),
            key_file=user.get("client-key"),
            key_data=_b64(user.get("client-key-data")),
            exec=user.get("exec") or None,
            auth_provider=user.get("auth-provider") or None,
            cluster=cluster,
            kubeconfig=self.source,
            context=name,
        )


def _b64(value: Any) -> bytes | None:
    return base64.b64decode(value) if value else None


def split_paths(value: str | os.PathLike[str] | Sequence[str]) -> list[str]:
    """The files of a `$KUBECONFIG`-style list (`a:b`), in order, without empties and repeats."""
    parts = [str(value)] if isinstance(value, (str, os.PathLike)) else [str(v) for v in value]
    out: list[str] = []
    for part in parts:
        for path in part.split(os.pathsep):
            if path and path not in out:
                out.append(path)
    return out


def load(paths: str | os.PathLike[str] | Sequence[str], *, require_all: bool = False) -> Kubeconfig:
    """The kubeconfig of one file, or of a `$KUBECONFIG` list merged as kubectl merges it. A file that
    does not exist is skipped (kubectl's rule for `$KUBECONFIG`) unless `require_all`."""
    files = split_paths(paths)
    merged = Kubeconfig(tuple(files))
    current = ""
    read = 0
    for path in files:
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except FileNotFoundError:
            if require_all:
                raise InvalidArgument("kubeconfig", path, "does not exist", "pass the path of an existing kubeconfig "
                                      "file") from None
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgument("kubeconfig", path, f"cannot be read ({exc})", "pass a readable kubeconfig "
                                  "file") from None
        doc = _parse(path, text)
        base = Path(path).expanduser().resolve().parent
        for key, into, section, paths_in in (("clusters", merged.clusters, "cluster", CLUSTER_PATHS),
                                             ("users", merged.users, "user", USER_PATHS),
                                             ("contexts", merged.contexts, "context", ())):
            for entry in doc.get(key) or []:
                if not isinstance(entry, dict) or not entry.get("name") or entry["name"] in into:
                    continue  # the first file to define a name wins it
                into[str(entry["name"])] = _resolved(dict(entry.get(section) or {}), paths_in, base)
        current = current or str(doc.get("current-context") or "")
        read += 1
    if files and not read:
        raise InvalidArgument("kubeconfig", merged.source, "names no file that exists", "point $KUBECONFIG at "
                              "kubeconfig files, or unset it to use the local cluster")
    return Kubeconfig(merged.files, merged.clusters, merged.users, merged.contexts, current)


CLUSTER_PATHS = ("certificate-authority",)
USER_PATHS = ("client-certificate", "client-key", "tokenFile")


def _parse(path: str, text: str) -> Obj:
    """A kubeconfig's document. JSON (a kubeconfig kubectl reads too) needs no YAML parser, which
    costs a CLI call ~10 ms to import; anything else is YAML."""
    doc: Any
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None  # YAML flow style, which YAML reads
    if not text.lstrip().startswith("{") or doc is None:
        import yaml

        try:
            doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # noqa: S506 — a SafeLoader
        except yaml.YAMLError as exc:
            raise InvalidArgument("kubeconfig", path, f"is not valid YAML ({exc})", "fix or replace the file") from None
    if not isinstance(doc, dict):
        raise InvalidArgument("kubeconfig", path, "is not a kubeconfig (a YAML mapping with clusters, users and "
                              "contexts)", "pass a kubeconfig file")
    return doc


def _resolved(entry: Obj, keys: Sequence[str], base: Path) -> Obj:
    """`entry` with its file references made absolute against the kubeconfig's directory."""
    for key in keys:
        value = entry.get(key)
        if value and not os.path.isabs(value):
            entry[key] = str(base / value)
    plugin = entry.get("exec")
    if isinstance(plugin, dict) and os.sep in str(plugin.get("command") or "") \
            and not os.path.isabs(plugin["command"]):  # `./bin/x` is the file's; a bare `x` is looked up in PATH
        entry["exec"] = {**plugin, "command": str(base / plugin["command"])}
    return entry


# -- credentials -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """Where one context's cluster is and how to authenticate to it."""

    server: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None
    exec: Obj | None = None
    auth_provider: Obj | None = None
    cluster: Obj = field(default_factory=dict)
    kubeconfig: str = ""
    context: str = ""

    def ssl_context(self) -> ssl.SSLContext | bool:
        """What `httpx` verifies the server with (False: `insecure-skip-tls-verify`), the client
        certificate loaded when the kubeconfig has one."""
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        elif self.ca_file:
            ctx = ssl.create_default_context(cafile=self.ca_file)
        else:
            ctx = ssl.create_default_context()
        cert = self.cert_data or (Path(self.cert_file).read_bytes() if self.cert_file else None)
        key = self.key_data or (Path(self.key_file).read_bytes() if self.key_file else None)
        if cert and key:
            load_client_certificate(ctx, cert, key)
        return ctx

    def static_token(self) -> str | None:
        """The bearer token the kubeconfig names itself: `tokenFile` (read now) before `token`."""
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip() or self.token
            except OSError as exc:
                raise InvalidArgument("kubeconfig", self.kubeconfig, f"names tokenFile {self.token_file!r}, which "
                                      f"cannot be read ({exc})", "fix the path or the file's permissions") from None
        return self.token

    def auth_provider_token(self) -> str | None:
        """The token of an `auth-provider` user, from the `kubernetes` package's loader."""
        from kubernetes import client, config  # only for these rare users: it costs ~0.35 s to import

        conf = client.Configuration()
        try:
            config.load_kube_config(config_file=self.kubeconfig, context=self.context, client_configuration=conf,
                                    persist_config=False)
        except Exception as exc:  # the loader raises its ConfigException and whatever the provider raises
            raise InvalidArgument("kubeconfig", self.kubeconfig, f"has an auth-provider the kubernetes loader "
                                  f"cannot use ({exc})", "use a token, a client certificate or an exec "
                                  "plugin") from exc
        value = conf.get_api_key_with_prefix("authorization") or ""
        return value.split(" ", 1)[1] if value.startswith("Bearer ") else (value or None)


def load_client_certificate(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a PEM certificate and key into `ctx` (the ssl module only reads them from files: a private
    temporary file each, removed at once)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mpijob-cert-") as tmp:
        cert_path, key_path = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
        for path, data in ((cert_path, cert), (key_path, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        ctx.load_cert_chain(str(cert_path), str(key_path))


# -- exec credential plugins -------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecResult:
    token: str | None
    cert: bytes | None
    key: bytes | None
    expires: datetime | None


class ExecPlugin:
    """A kubeconfig user's `exec` plugin: run on first use, its answer cached until it expires."""

    def __init__(self, spec: Obj, server: str, cluster: Obj, kubeconfig: str) -> None:
        self.spec, self.server, self.cluster, self.kubeconfig = spec, server, cluster, kubeconfig
        self._cached: ExecResult | None = None
        self._lock = threading.Lock()

    def credential(self, refresh: bool = False) -> ExecResult:
        with self._lock:
            now = datetime.now(UTC)
            c = self._cached
            if refresh or c is None or (c.expires is not None and c.expires <= now):
                self._cached = c = self._run()
            return c

    def _request(self, api_version: str) -> Obj:
        spec: Obj = {"interactive": False}
        if self.spec.get("provideClusterInfo"):
            info: Obj = {"server": self.server}
            for ours, theirs in (("certificate-authority-data", "certificate-authority-data"),
                                 ("insecure-skip-tls-verify", "insecure-skip-tls-verify"),
                                 ("tls-server-name", "tls-server-name"), ("proxy-url", "proxy-url")):
                if self.cluster.get(ours):
                    info[theirs] = self.cluster[ours]
            extension = next((e.get("extension") for e in self.cluster.get("extensions") or []
                              if isinstance(e, dict) and e.get("name") == "client.authentication.k8s.io/exec"), None)
            if extension is not None:
                info["config"] = extension
            spec["cluster"] = info
        return {"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}

    def _bad(self, problem: str) -> InvalidArgument:
        return InvalidArgument("kubeconfig", self.kubeconfig, f"has an exec credential plugin "
                               f"({self.spec.get('command')!r}) that {problem}", "fix the plugin or the user's "
                               "exec section")

    def _run(self) -> ExecResult:
        import subprocess  # here: only a user with an exec plugin needs it

        api_version = str(self.spec.get("apiVersion") or "")
        if api_version not in EXEC_API_VERSIONS:
            raise self._bad(f"asks for apiVersion {api_version!r}; supported: {', '.join(EXEC_API_VERSIONS)}")
        if self.spec.get("interactiveMode") == "Always":
            raise self._bad("needs a terminal (interactiveMode: Always), which this client does not give it")
        env = dict(os.environ)
        env.update({str(e.get("name")): str(e.get("value", "")) for e in self.spec.get("env") or []
                    if isinstance(e, dict) and e.get("name")})
        env["KUBERNETES_EXEC_INFO"] = json.dumps(self._request(api_version))
        argv = [str(self.spec.get("command") or ""), *map(str, self.spec.get("args") or [])]
        try:
            done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=EXEC_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            hint = f" ({self.spec['installHint']})" if self.spec.get("installHint") else ""
            raise self._bad(f"could not be run: {exc}{hint}") from None
        if done.returncode != 0:
            raise self._bad(f"exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[-500:]}")
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            raise self._bad("did not print an ExecCredential (JSON) on stdout") from None
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential" \
                or answer.get("apiVersion") != api_version:
            raise self._bad(f"printed something other than an ExecCredential of {api_version}")
        status = answer.get("status") or {}
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if not token and not (cert and key):
            raise self._bad("gave neither a token nor a client certificate and key")
        return ExecResult(token, cert.encode() if cert else None, key.encode() if key else None,
                          parse_time(status.get("expirationTimestamp")))
