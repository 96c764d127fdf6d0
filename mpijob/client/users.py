"""mpijob's users API (`mpijob.io/v1alpha1` `users`, admin only) and the kubeconfig a new user gets.

The server makes the token and shows it once, in the answer to the create; the kubeconfig written
here is the only place it lives afterwards (mode 0600). It names the same server and CA as the
kubeconfig the admin used, so it works wherever the admin's does.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from mpijob.api import Obj, names
from mpijob.client.core import Call, Op
from mpijob.client.kubeconfig import Credentials

USERS_PATH = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}/users"
API_VERSION = f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"


def add_user(name: str, groups: list[str]) -> Op[Obj]:
    """Create a user; the answer's `status.token` is its bearer token (shown this once)."""
    body = {"apiVersion": API_VERSION, "kind": "User", "metadata": {"name": name}, "spec": {"groups": groups}}
    return (yield Call("POST", USERS_PATH, body=body))


def list_users() -> Op[list[Obj]]:
    answer = yield Call("GET", USERS_PATH)
    return list((answer or {}).get("items") or [])


def remove_user(name: str) -> Op[Obj]:
    return (yield Call("DELETE", f"{USERS_PATH}/{name}"))


def user_kubeconfig(creds: Credentials, cluster_name: str, user: str, token: str, namespace: str = "default") -> str:
    """A kubeconfig (JSON, which is YAML too) for `user` on the admin's cluster: same server, same CA."""
    cluster: dict[str, Any] = {"server": creds.server}
    ca = creds.ca_data
    if ca is None and creds.ca_file:
        ca = Path(creds.ca_file).read_bytes()
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if creds.insecure:
        cluster["insecure-skip-tls-verify"] = True
    if creds.tls_server_name:
        cluster["tls-server-name"] = creds.tls_server_name
    context = f"{user}@{cluster_name}"
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user, "namespace": namespace}}],
        "current-context": context, "preferences": {},
    }
    return json.dumps(config, indent=2) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` with mode 0600 (its folder made 0700 if missing), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
