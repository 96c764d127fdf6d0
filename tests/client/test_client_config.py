"""Which cluster: --kubeconfig, else $KUBECONFIG, else the local cluster; namespace from the context."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mpijob.client.config import ClusterChoice, choose_cluster
from mpijob.client.errors import InvalidArgument, Unreachable
from mpijob.client.kubeconfig import load


def _kubeconfig(path: Path, contexts: dict[str, str | None], current: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
                     for n, ns in contexts.items()],
    }))
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("MPIJOB_HOME", str(tmp_path / "home"))
    return tmp_path


def test_explicit_kubeconfig_wins_over_env(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = _kubeconfig(env / "flag", {"a": "team-a"}, "a")
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(env / "envkc", {"b": "team-b"}, "b")))
    assert choose_cluster(flag) == ClusterChoice(str(flag), "a", "team-a", False)
    assert choose_cluster() == ClusterChoice(str(env / "envkc"), "b", "team-b", False)


def test_context_flag_and_namespace_override(env: Path) -> None:
    kc = _kubeconfig(env / "kc", {"a": "team-a", "b": None}, "a")
    assert choose_cluster(kc, "b").namespace == "default"
    assert choose_cluster(kc, "a", "other").namespace == "other"
    config = load(str(kc))
    assert config.context(None)[0] == "a" and config.namespace() == "team-a"
    with pytest.raises(InvalidArgument, match="available contexts: a, b") as err:
        choose_cluster(kc, "zzz")
    assert err.value.param == "context" and err.value.value == "zzz"


def test_missing_kubeconfig_file(env: Path) -> None:
    with pytest.raises(InvalidArgument, match="no such file") as err:
        choose_cluster(env / "missing")
    assert err.value.param == "kubeconfig" and "--" not in str(err.value)  # an SDK user passes kubeconfig=


def test_local_cluster_is_the_default_and_not_started_when_asked(env: Path) -> None:
    notes: list[str] = []
    with pytest.raises(Unreachable, match="not running"):
        choose_cluster(start=False, notify=notes.append)
    assert notes == []
    assert not (env / "home" / "server.json").exists()
