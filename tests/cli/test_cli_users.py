"""`mpijob user add|list|remove`: a user's kubeconfig, and what a refusal looks like to the CLI and the SDK."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import cli_env
from mpijob.cli.main import app
from typer.testing import CliRunner

KUBECTL = "/usr/bin/kubectl"


@pytest.fixture(scope="module")
def home(servers: Any) -> Path:
    return servers.start("users-cli", controllers=False).home  # type: ignore[no-any-return]


def run(home: Path, *args: str) -> Any:
    r = CliRunner().invoke(app, list(args), env=cli_env(home))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def test_add_writes_a_private_kubeconfig_and_prints_its_path_last(home: Path) -> None:
    r = run(home, "user", "add", "alice", "--group", "team-a", "--group", "ml")
    assert r.exit_code == 0, r.stderr
    path = Path(r.stdout.strip().splitlines()[-1])
    assert path == home / "users" / "alice.kubeconfig"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config, admin = yaml.safe_load(path.read_text()), yaml.safe_load((home / "kubeconfig").read_text())
    assert config["clusters"][0]["cluster"] == admin["clusters"][0]["cluster"]  # same server, same CA
    assert config["users"][0]["user"]["token"] != admin["users"][0]["user"]["token"]
    who = subprocess.run([KUBECTL, "--kubeconfig", str(path), "auth", "whoami", "-o", "jsonpath={.status.userInfo}"],
                         capture_output=True, text=True, timeout=60)
    assert who.returncode == 0, who.stderr
    assert '"username":"alice"' in who.stdout and '"team-a","ml","system:authenticated"' in who.stdout
    listed = run(home, "user", "list")
    assert listed.exit_code == 0
    assert any(line.split() == ["alice", "team-a,ml"] for line in listed.stdout.splitlines())
    assert "mpijob-admin" in listed.stdout
    out = home / "elsewhere" / "bob.yaml"
    r = run(home, "user", "add", "bob", "--output", str(out))
    assert r.exit_code == 0 and r.stdout.strip().splitlines()[-1] == str(out.resolve())
    assert run(home, "user", "add", "bob").exit_code == 3  # already exists


def test_refusals_are_exit_code_5_and_sdk_forbidden(home: Path) -> None:
    from mpijob.sdk.errors import Forbidden

    r = run(home, "user", "add", "carol")
    kubeconfig = r.stdout.strip().splitlines()[-1]
    denied = run(home, "--kubeconfig", kubeconfig, "get", "trainjobs", "-n", "team-b")
    assert denied.exit_code == 5
    assert ('User "carol" cannot list resource "trainjobs" in API group "trainer.kubeflow.org" in the namespace '
            '"team-b"') in denied.stderr
    assert run(home, "--kubeconfig", kubeconfig, "user", "add", "mallory").exit_code == 5  # admin only
    from mpijob import Client

    with Client(kubeconfig=kubeconfig, namespace="team-b") as client, pytest.raises(Forbidden) as info:
        client.list()
    assert info.value.exit_code == 5 and 'User "carol"' in str(info.value)
    assert run(home, "user", "remove", "carol").exit_code == 0
    gone = run(home, "--kubeconfig", kubeconfig, "get", "trainjobs")
    assert gone.exit_code == 5 and "Unauthorized" in gone.stderr + gone.stdout
    assert run(home, "user", "remove", "carol").exit_code == 4
