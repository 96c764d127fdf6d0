"""Clients of a server, as any Kubernetes client would build them from its kubeconfig: HTTPS (its CA, its
server URL, its bearer token) and the machine's kubectl."""

from __future__ import annotations

import base64
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import yaml

from support.timing import scaled

KUBECTL = "/usr/bin/kubectl"


def kubeconfig_token(kubeconfig: Path) -> str:
    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


def ca_context(kubeconfig: Path) -> ssl.SSLContext:
    """Trusts the server's CA (from the kubeconfig) and nothing else."""
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())


def https_client(kubeconfig: Path, timeout: float = 60, token: str | None = None) -> httpx.Client:
    """An HTTPS client to the kubeconfig's server, sending its token (or `token`; "" sends none)."""
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    bearer = kubeconfig_token(kubeconfig) if token is None else token
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.Client(base_url=cluster["server"], verify=ca_context(kubeconfig), headers=headers,
                        timeout=scaled(timeout))


def kubectl_runner(kubeconfig: Path, cache: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run(*args, check=True)`: the machine's kubectl against one server, with its own cache dir."""

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args]
        proc = subprocess.run(cmd, check=False, input=input, capture_output=True, text=True, timeout=scaled(timeout))
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    return run
