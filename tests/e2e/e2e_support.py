"""Helpers for end-to-end tests (imported by name: tests have no packages, so this name is unique).

Everything here talks to a real server over HTTPS, or looks at real processes in /proc. Waiting is
always a poll against a deadline; a deadline that passes fails the test with what was last seen.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

KUBECTL = "/usr/bin/kubectl"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
JOBSET = "jobset.sigs.k8s.io/jobset-name"
RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
from upstream_data import UPSTREAM as _ROOT

UPSTREAM = _ROOT / "trainer"
REPO = Path(__file__).resolve().parents[2]
TAG = "E2E_JOB"  # trainer.env name every test job carries: it reaches every rank, so /proc finds them
Obj = dict[str, Any]
T = TypeVar("T")


# -- connecting ------------------------------------------------------------------------------------


def https_client(kubeconfig: Path, timeout: float = 60) -> httpx.Client:
    """An HTTPS client built from a server's kubeconfig, as any Kubernetes client would: its CA, its
    server URL and its bearer token."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return httpx.Client(base_url=cluster["server"], verify=ssl.create_default_context(cadata=ca),
                        headers={"Authorization": f"Bearer {user['token']}"}, timeout=timeout)


# -- objects -----------------------------------------------------------------------------------------


def trainjob(name: str, command: list[str], *, num_nodes: int = 2, env: dict[str, str] | None = None,
             runtime: str = "mpi-distributed") -> Obj:
    """A TrainJob whose trainer.env carries `E2E_JOB=<name>` (see `job_processes`)."""
    variables = [{"name": TAG, "value": name}] + [{"name": k, "value": v} for k, v in (env or {}).items()]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime},
                 "trainer": {"numNodes": num_nodes, "env": variables, "command": command}},
    }


def create(c: httpx.Client, obj: Obj, namespace: str = "default") -> Obj:
    r = c.post(f"{TRAINER}/namespaces/{namespace}/trainjobs", json=obj)
    assert r.status_code == 201, r.text
    return r.json()


def get_trainjob(c: httpx.Client, name: str, namespace: str = "default") -> Obj:
    r = c.get(f"{TRAINER}/namespaces/{namespace}/trainjobs/{name}")
    assert r.status_code == 200, r.text
    return r.json()


def condition(tj: Obj, kind: str) -> Obj | None:
    """The condition of type `kind` when it is True, else None."""
    for c in (tj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind and c["status"] == "True":
            return c
    return None


def finished(tj: Obj) -> bool:
    return condition(tj, "Complete") is not None or condition(tj, "Failed") is not None


# -- waiting -----------------------------------------------------------------------------------------


def wait_for(probe: Callable[[], T], what: str, timeout: float = 60, interval: float = 0.05) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")
        time.sleep(interval)


def wait_finished(c: httpx.Client, name: str, namespace: str = "default", timeout: float = 120) -> Obj:
    def probe() -> Obj | None:
        tj = get_trainjob(c, name, namespace)
        return tj if finished(tj) else None

    try:
        return wait_for(probe, f"TrainJob {namespace}/{name} to finish", timeout)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{job_state(c, name, namespace)}") from e


def job_state(c: httpx.Client, name: str, namespace: str = "default", tail: int = 20) -> str:
    """What a job's pods are doing and last said: the evidence a hung job's test failure should carry."""
    r = c.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"{JOBSET}={name}"})
    out = []
    for pod in r.json().get("items", []) if r.status_code == 200 else []:
        pod_name = pod["metadata"]["name"]
        log = c.get(f"/api/v1/namespaces/{namespace}/pods/{pod_name}/log", params={"tailLines": str(tail)})
        out.append(f"--- pod {pod_name} ({pod.get('status', {}).get('phase')}), its last lines:\n{log.text}")
    return "\n".join(out) or f"no pods of {name} (pods answered {r.status_code})"


def wait_log(c: httpx.Client, pod: str, want: Callable[[str], bool], namespace: str = "default",
             timeout: float = 60) -> str:
    """Poll a pod's log until `want(text)` holds; returns the text."""

    def probe() -> str:
        text = pod_log(c, pod, namespace)
        return text if want(text) else ""

    return wait_for(probe, f"log of {pod} to show the expected lines", timeout)


# -- pods and logs -----------------------------------------------------------------------------------


def wait_launcher(c: httpx.Client, name: str, namespace: str = "default") -> str:
    """The launcher pod's name, once it exists."""

    def probe() -> str | None:
        return next((p["metadata"]["name"] for p in by_role(job_pods(c, name, namespace), "launcher")), None)

    return wait_for(probe, f"the launcher pod of {namespace}/{name}")


def job_pods(c: httpx.Client, name: str, namespace: str = "default") -> list[Obj]:
    r = c.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"{JOBSET}={name}"})
    assert r.status_code == 200, r.text
    return sorted(r.json()["items"], key=lambda p: p["metadata"]["name"])


def by_role(pods: list[Obj], role: str) -> list[Obj]:
    return [p for p in pods if p["metadata"]["labels"].get(RJOB) == role]


def launcher_of(pods: list[Obj]) -> Obj:
    launchers = by_role(pods, "launcher")
    assert len(launchers) == 1, [p["metadata"]["name"] for p in pods]
    return launchers[0]


def pod_log(c: httpx.Client, pod: str, namespace: str = "default", **params: Any) -> str:
    """A pod's log, as `kubectl logs` gets it."""
    r = c.get(f"/api/v1/namespaces/{namespace}/pods/{pod}/log", params=params)
    assert r.status_code == 200, r.text
    return r.text


def resource_version(c: httpx.Client, namespace: str = "default") -> str:
    """The current resourceVersion of the pod list: a watch from it replays every later change."""
    r = c.get(f"/api/v1/namespaces/{namespace}/pods", params={"limit": "1"})
    assert r.status_code == 200, r.text
    return str(r.json()["metadata"]["resourceVersion"])


def terminations(c: httpx.Client, name: str, since: str, namespace: str = "default", timeout: float = 20
                 ) -> dict[str, Obj]:
    """pod name → the `terminated` state its container last reported, for every pod of job `name` that
    was deleted after resourceVersion `since`. Read from a watch that replays the change log, so a
    status a pod held only for a moment before it went (as when its TrainJob is deleted) is seen too."""
    last: dict[str, Obj] = {}
    live: set[str] = set()
    gone: set[str] = set()
    params = {"watch": "true", "resourceVersion": since, "labelSelector": f"{JOBSET}={name}",
              "timeoutSeconds": str(int(timeout))}
    with c.stream("GET", f"/api/v1/namespaces/{namespace}/pods", params=params) as resp:
        assert resp.status_code == 200, resp.read()
        for line in resp.iter_lines():
            if not line.strip():
                continue
            event = json.loads(line)
            pod = event["object"]
            pod_name = pod["metadata"]["name"]
            live.add(pod_name)
            state = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0].get("state") or {}
            if "terminated" in state:
                last[pod_name] = state["terminated"]
            if event["type"] == "DELETED":
                gone.add(pod_name)
                if gone == live:
                    break
    assert live and gone == live, f"pods of {name} seen {sorted(live)}, deleted {sorted(gone)}"
    return last


def events_of(c: httpx.Client, name: str, namespace: str = "default") -> list[Obj]:
    """The Events about object `name` (a TrainJob, say)."""
    r = c.get(f"/api/v1/namespaces/{namespace}/events", params={"fieldSelector": f"involvedObject.name={name}"})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def section(text: str, marker: str) -> str:
    """The lines a job printed between `---<marker>---` and `---end-<marker>---`."""
    start, end = f"---{marker}---\n", f"---end-{marker}---"
    assert start in text and end in text, text
    return text.split(start, 1)[1].split(end, 1)[0]


def status_code(c: httpx.Client, path: str) -> int:
    return c.get(path).status_code


# -- processes ---------------------------------------------------------------------------------------


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def job_processes(name: str, namespace: str = "default", pods: Sequence[str] = (), job_dir: Path | None = None
                  ) -> list[str]:
    """Live processes of one job, as `"<pid> <cmdline>"`: anything whose environment carries the job's
    `E2E_JOB` tag (every rank and orted: trainer.env reaches them) or a pod marker
    `MPIJOB_POD=<ns>/<pod>`, and anything whose command line names the job directory (its sshds)."""
    wanted = {f"{TAG}={name}".encode(), *(f"MPIJOB_POD={namespace}/{p}".encode() for p in pods)}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        stat = _read(entry / "stat")
        if b") Z " in stat or b") X " in stat:
            continue  # a zombie has run its course; only its parent's wait is missing
        cmdline = _read(entry / "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
        env = set(_read(entry / "environ").split(b"\0"))
        if env & wanted or (job_dir is not None and str(job_dir) in cmdline):
            found.append(f"{entry.name} {cmdline[:200]}")
    return found


def wait_no_processes(name: str, namespace: str = "default", pods: Sequence[str] = (), job_dir: Path | None = None,
                      timeout: float = 5) -> None:
    """Every process of the job is gone (a short grace: the kernel tears a PID namespace down after
    its init has been reaped)."""
    deadline = time.monotonic() + timeout
    while left := job_processes(name, namespace, pods, job_dir):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of job {name} still running {timeout:.0f}s after it ended:\n"
                                 + "\n".join(left))
        time.sleep(0.05)


def wait_ranks_seen(name: str, pods: Sequence[str], job_dir: Path, ranks: int, command: str = "sleep 60"
                    ) -> list[str]:
    """Wait until `job_processes` sees `ranks` processes running exactly `command` (remote ranks
    included): proof that the scan finds what it is later asked to find gone."""

    def probe() -> list[str]:
        found = job_processes(name, pods=pods, job_dir=job_dir)
        return found if sum(line.split(" ", 1)[1] == command for line in found) == ranks else []

    return wait_for(probe, f"{ranks} ranks of {name} running {command!r}", timeout=30)


def sshd_of(job_dir: Path, hostname: str) -> int:
    """The pid of the real sshd (not its sandbox wrapper, not a session) of one pod: its command line
    names an sshd_config inside the job directory and the pod's host name."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        words = _read(entry / "cmdline").replace(b"\0", b" ").split()  # sshd rewrites its argv into one
        config = next((w for w in words if w.endswith(b"sshd_config")), b"")
        is_listener = not any(b"@" in w for w in words)  # "sshd: user@notty" is a session
        if Path(exe).name == "sshd" and is_listener and str(job_dir).encode() in config and hostname.encode() in config:
            return int(entry.name)
    raise AssertionError(f"no sshd of {hostname} running under {job_dir}")


def job_dirs(home: Path, name: str, namespace: str = "default") -> list[Path]:
    """The job's working directories under $MPIJOB_HOME/jobs (`<ns>_<name>_<uid8>`)."""
    return sorted((home / "jobs").glob(f"{namespace}_{name}_*"))


# -- kubectl -----------------------------------------------------------------------------------------


def kubectl_runner(kubeconfig: Path, cache: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run(*args, check=True)`: the machine's kubectl against one server, with its own cache dir."""

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        cmd = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args]
        proc = subprocess.run(cmd, check=False, input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    return run


def add_user(home: Path, name: str) -> Path:
    """`mpijob user add NAME` as the admin: the new user's kubeconfig (the last line it prints)."""
    from typer.testing import CliRunner

    from mpijob.cli.main import app

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
