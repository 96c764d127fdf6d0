"""What the kubelet gives a pod of its ServiceAccount (sandbox.py, trainjob.py): the projected volume's
files with their modes and owner, where each sandbox puts them, and the API server's variables. A real
pod using them is tests/e2e/test_service_account_token.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from mpijob.api.openshift import scc
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.plan import resolve
from mpijob.api.trainer.runtimes import bundled
from mpijob.controllers.kubelet.sandbox import (
    FSTAB,
    JobFiles,
    ServiceAccountFiles,
    User,
    job_user,
    kubernetes_env,
)
from mpijob.controllers.trainer.launcher import api_server
from mpijob.store.home import Home

SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "pi", "namespace": "team-a", "uid": "0b7c5b1e-1111-2222-3333-444455556666"},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1}}}
FILES = ServiceAccountFiles("header.body.signature", "team-a", b"-----BEGIN CERTIFICATE-----\n")
RANGES = scc.Ranges(scc.IdRange(1000660000, 10000), scc.IdRange(1000660000, 10000))


@pytest.fixture
def plan():
    return resolve(TRAINJOB, bundled()[0])


def _me() -> User:
    return User(os.geteuid(), os.getegid(), "me", "/home/me")


def test_the_token_is_readable_by_the_pod_user_only(tmp_path: Path, plan) -> None:
    files = JobFiles(tmp_path / "job", SandboxMode.PROCESS)
    launcher = plan.pods[-1]
    files.write_service_account(launcher, _me(), FILES)
    d = files.service_account_dir(launcher)
    assert d == files.pod_dir(launcher) / "serviceaccount"
    modes = {p.name: (stat.S_IMODE(p.stat().st_mode), p.read_bytes()) for p in d.iterdir()}
    assert modes == {"token": (0o600, b"header.body.signature"), "namespace": (0o644, b"team-a"),
                     "ca.crt": (0o644, b"-----BEGIN CERTIFICATE-----\n")}
    assert stat.S_IMODE(d.stat().st_mode) == 0o755
    files.write_service_account(launcher, _me(), None)  # the pod no longer automounts: nothing is left
    assert not d.exists()


def test_the_token_belongs_to_the_pods_run_as_user(tmp_path: Path, plan) -> None:
    assert os.geteuid() == 0, "giving a file to the pod's user needs root (CI runs as root)"
    files = JobFiles(tmp_path / "job", SandboxMode.NAMESPACE)
    admitted = scc.admit(plan, RANGES, lambda pod: frozenset(), "alice")
    launcher = admitted.pods[-1]
    user = job_user(admitted, launcher, SandboxMode.NAMESPACE)
    assert (user.uid, user.name) == (1000660000, "mpiuser")  # its namespace's first UID (api/openshift/scc.py)
    files.write_service_account(launcher, user, FILES)
    token = files.service_account_dir(launcher) / "token"
    assert (token.stat().st_uid, token.stat().st_gid) == (user.uid, user.gid)
    assert (token.parent / "namespace").stat().st_uid == 0


def test_namespace_mode_mounts_the_volume_read_only_at_kubes_path(tmp_path: Path, plan) -> None:
    files = JobFiles(tmp_path / "job", SandboxMode.NAMESPACE)
    launcher = plan.pods[-1]
    user = User(1000, 1000, "mpiuser", "/home/mpiuser")
    fstab = files.pod_dir(launcher) / FSTAB
    fstab.parent.mkdir(parents=True)  # as `write_pod` makes it first
    files.argv(plan, launcher, user, ["true"], {})
    assert SA_PATH not in fstab.read_text()  # nothing written: nothing mounted
    files.write_service_account(launcher, _me(), FILES)
    lines = files.argv(plan, launcher, user, ["true"], {})[-3].splitlines()
    assert f"{files.service_account_dir(launcher)} {SA_PATH} none bind,ro,X-mount.mkdir 0 0" in fstab.read_text()
    mount = f"mount --all --fstab {fstab}"  # in its own /run: after that is mounted
    assert lines.index(mount) > lines.index("mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run")


def test_process_mode_leaves_the_files_in_the_pod_directory(tmp_path: Path, plan) -> None:
    files = JobFiles(tmp_path / "job", SandboxMode.PROCESS)
    launcher = plan.pods[-1]
    files.write_service_account(launcher, _me(), FILES)
    home = files.pod_dir(launcher) / "home"  # the container's $HOME in process mode (runner._start)
    argv = files.argv(plan, launcher, _me(), ["true"], {"HOME": str(home)})
    assert SA_PATH not in " ".join(argv)  # no private mounts: kube's path would be the host's, shared
    assert (home.parent / "serviceaccount" / "token").read_text() == FILES.token


def test_the_kubernetes_service_variables_point_at_the_server() -> None:
    assert kubernetes_env("127.0.0.1", 6443) == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "6443", "KUBERNETES_PORT": "tcp://127.0.0.1:6443",
        "KUBERNETES_PORT_6443_TCP": "tcp://127.0.0.1:6443", "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_6443_TCP_PORT": "6443", "KUBERNETES_PORT_6443_TCP_ADDR": "127.0.0.1",
    }


def test_the_server_address_comes_from_its_kubeconfig(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert api_server(home) is None
    home.kubeconfig.write_text(json.dumps({"clusters": [{"name": "mpijob-local",
                                                         "cluster": {"server": "https://127.0.0.1:40123"}}]}))
    assert api_server(home) == ("127.0.0.1", 40123)
    home.kubeconfig.write_text("not json")
    assert api_server(home) is None


def test_the_signing_key_is_the_servers_or_made_once(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    key = home.service_account_key()
    path = home.tls / "service-account.key"
    assert len(key) == 32 and path.read_bytes() == key and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert home.service_account_key() == key
    path.write_bytes(b"s" * 32)  # the server's
    assert home.service_account_key() == b"s" * 32
