"""Users as an administrator makes them: `mpijob user add`, and two tenants each with `edit` in a namespace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.clients import kubectl_runner


def add_user(home: Path, name: str) -> Path:
    """`mpijob user add NAME` as the admin: the new user's kubeconfig (the last line it prints)."""
    from mpijob.cli.main import app
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["user", "add", name], env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})
    assert r.exit_code == 0, r.stderr
    return Path(r.stdout.strip().splitlines()[-1])


def two_tenants(home: Path, kubectl: Callable[..., subprocess.CompletedProcess[str]], cache: Callable[[str], Path],
                user_prefix: str, namespace_prefix: str) -> dict[str, Any]:
    """Teams `a` and `b`: each a user (with a real kubeconfig) holding `edit` in a namespace of its own;
    `{team: {"user", "ns", "kubectl"}}`. `cache(user)` gives each user's kubectl cache directory."""
    suffix = os.urandom(3).hex()[:5]
    out: dict[str, Any] = {}
    for team in ("a", "b"):
        user, ns = f"{user_prefix}-{team}-{suffix}", f"{namespace_prefix}-{team}-{suffix}"
        kubectl("create", "namespace", ns)
        kubectl("create", "rolebinding", f"{user}-edit", "--clusterrole=edit", f"--user={user}", "-n", ns)
        out[team] = {"user": user, "ns": ns, "kubectl": kubectl_runner(add_user(home, user), cache(user))}
    return out
