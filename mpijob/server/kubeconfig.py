"""The kubeconfig the server writes for its admin, and the port it remembers across restarts.

The port is read back from the previous kubeconfig, so kubeconfigs copied elsewhere keep working
after a restart as long as the port is still free. It is written as JSON, which is YAML too (kubectl
and client-go read it either way): a CLI call then parses it without loading a YAML parser.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import yaml

CLUSTER = "mpijob-local"
USER = "mpijob-admin"
CONTEXT = "mpijob-local"


def render(url: str, ca_pem: bytes, token: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER,
                "cluster": {
                    "server": url,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": USER, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CLUSTER, "user": USER, "namespace": "default"}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return json.dumps(config, indent=2) + "\n"


def write(path: Path, url: str, ca_pem: bytes, token: str) -> None:
    """Write atomically with mode 0600 (it holds the admin token)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(render(url, ca_pem, token))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def previous_port(path: Path) -> int | None:
    """The port of `mpijob-local` in an earlier kubeconfig, if any."""
    try:
        config = yaml.safe_load(path.read_text()) or {}
        for cluster in config.get("clusters") or []:
            if cluster.get("name") == CLUSTER:
                return urlparse(cluster["cluster"]["server"]).port
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError):
        return None
    return None


def bind(preferred: int | None, host: str = "127.0.0.1") -> socket.socket:
    """A listening socket on `preferred` when it is free, else on a port the kernel picks."""
    for port in ([preferred] if preferred else []) + [0]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio then sets TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise OSError(f"cannot bind a port on {host}")
