"""CLI behaviour that needs no running server: unreachable clusters, a stopped local cluster, flags."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from mpijob.cli.exitcodes import Exit
from mpijob.cli.main import app
from typer.testing import CliRunner


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def _kubeconfig(path: Path, port: int, namespace: str = "team-a") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": namespace}}],
        "current-context": "ctx",
    }))
    return path


def run(args: list[str], home: Path, kubeconfig_env: str | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, args, env={"MPIJOB_HOME": str(home), "KUBECONFIG": kubeconfig_env})
    return r.exit_code, r.stdout, r.stderr


def test_server_status_when_stopped_exits_8(tmp_path: Path) -> None:
    code, out, err = run(["server", "status"], tmp_path / "home")
    assert code == Exit.UNAVAILABLE == 8
    assert "not running" in err and out == ""


def test_server_stop_when_stopped_is_ok(tmp_path: Path) -> None:
    code, _, err = run(["server", "stop"], tmp_path / "home")
    assert code == 0 and "not running" in err


@pytest.mark.parametrize("args", [["get", "trainjobs"], ["get", "pods", "-o", "json"], ["logs", "x"],
                                  ["describe", "trainjob", "x"], ["delete", "trainjob", "x"]])
def test_unreachable_cluster_exits_8(tmp_path: Path, args: list[str]) -> None:
    kc = _kubeconfig(tmp_path / "kc", _closed_port())
    code, out, err = run([*args, "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 8, err
    assert "cannot reach the API server" in err and out == ""


def test_kubeconfig_env_is_used_when_no_flag(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", _closed_port())
    code, _, err = run(["get", "trainjobs"], tmp_path / "home", kubeconfig_env=str(kc))
    assert code == 8 and "127.0.0.1" in err
    assert not (tmp_path / "home").exists()  # the local cluster was not started


def test_unknown_context_and_missing_kubeconfig_exit_3(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", _closed_port())
    code, _, err = run(["--kubeconfig", str(kc), "--context", "nope", "get", "trainjobs"], tmp_path / "home")
    assert code == 3 and "'nope'" in err and "ctx" in err
    code, _, err = run(["get", "trainjobs", "--kubeconfig", str(tmp_path / "missing")], tmp_path / "home")
    assert code == 3 and "no such file" in err


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", _closed_port())
    code, _, err = run(["get", "widgets", "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 2 and "widgets" in err and "trainjobs" in err
    code, _, err = run(["get", "trainjobs", "-o", "xml", "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 2 and "xml" in err
    code, _, err = run(["get"], tmp_path / "home")
    assert code == 2 and "Missing argument" in err  # click's own usage errors use the same code
    code, _, err = run(["get", "trainjobs", "--bogus"], tmp_path / "home")
    assert code == 2 and "No such option: --bogus" in err
    code, _, err = run(["describe", "trainjob", "x", "-o", "wide", "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 2 and "'wide'" in err and "json or yaml" in err
    code, _, err = run(["delete", "pod", "x", "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 2 and "use: mpijob delete trainjob NAME" in err


def test_unparsable_yaml_exits_3_before_any_connection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: TrainJob\nmetadata: {name: [x\n")
    kc = _kubeconfig(tmp_path / "kc", _closed_port())
    code, _, err = run(["create", "-f", str(bad), "--kubeconfig", str(kc)], tmp_path / "home")
    assert code == 3 and "cannot parse YAML at line" in err


def test_version_and_help_list_exit_codes(tmp_path: Path) -> None:
    code, out, _ = run(["--version"], tmp_path)
    assert code == 0 and out.startswith("mpijob ")
    code, out, _ = run(["--help"], tmp_path)
    assert code == 0
    for text in ("0 ok", "1 job failed", "2 usage error", "3 invalid input", "4 not found", "5 forbidden",
                 "6 quota exceeded", "7 timed out", "8 server unavailable"):
        assert text in out, (text, out)
