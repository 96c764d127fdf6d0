"""Jobs run as their tenant, never as root unasked (OpenShift's restricted-v2 SCC; docs/security.md,
"Tenant UIDs"). Two tenants, real users (`mpijob user add`) each with `edit` in a namespace of its own,
create 2-node jobs with the real kubectl:

* every rank runs as its namespace's first UID (`id -u`, `id -g`, `id -G`), a different one per tenant,
  and the pod objects say so, as OpenShift's admission writes them;
* a team-b rank cannot read team-a's home (through `/proc/<pid>/root` of a running team-a rank: Unix
  permissions, not only mount namespaces) nor its job directory; team b's launcher reaches its own node's
  sshd but not team a's node at its pod address;
* a job asking for `runAsUser: 0` is refused with OpenShift's words and creates nothing, until an admin
  binds `system:openshift:scc:anyuid` to the tenant: then it runs as root;
* a runtime changed to root after its job was admitted fails the job when it starts, and no pod exists.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api.trainer.runtimes import bundled

from support import (
    TRAINER,
    by_role,
    condition,
    job_dirs,
    job_pods,
    job_processes,
    launcher_of,
    pod_log,
    trainjob,
    two_tenants,
    wait_finished,
    wait_for,
    wait_log,
)

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
UID_RANGE = "openshift.io/sa.scc.uid-range"
IDS = 'echo "ids $(hostname) $(id -u) $(id -g) $(id -G)"'
IDS_LINE = re.compile(r"^ids (\S+) (\d+) (\d+) ([\d ]+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def tenants(server: Any, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return two_tenants(server.home, kubectl, tmp_path_factory.mktemp, "uid", "uids")


def first_uid(api: httpx.Client, ns: str) -> int:
    r = api.get(f"/api/v1/namespaces/{ns}")
    assert r.status_code == 200, r.text
    return int(r.json()["metadata"]["annotations"][UID_RANGE].split("/")[0])


def submit(tenant: dict[str, Any], job: dict[str, Any], check: bool = True) -> subprocess.CompletedProcess[str]:
    return tenant["kubectl"]("create", "-n", tenant["ns"], "-f", "-", input=json.dumps(job), check=check)


def ids(log: str) -> list[tuple[str, int, int, list[int]]]:
    """(host, uid, gid, groups) each rank printed."""
    return [(m[0], int(m[1]), int(m[2]), [int(g) for g in m[3].split()]) for m in IDS_LINE.findall(log)]


@pytest.fixture(scope="module")
def running_a(api: httpx.Client, home: Path, tenants: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Team a's job, running: each rank printed its ids, left a secret in its home, and sleeps."""
    a = tenants["a"]
    rank = f'{IDS}; echo "secret of team a" > "$HOME/secret"; sleep 300'
    submit(a, trainjob("uid-a", ["mpirun", "bash", "-c", rank], num_nodes=2))
    launcher = wait_for(lambda: next((p["metadata"]["name"] for p in by_role(job_pods(api, "uid-a", a["ns"]),
                                                                           "launcher")), None), "uid-a's launcher")
    log = wait_log(api, launcher, lambda text: len(ids(text)) == 2, a["ns"])
    ranks = wait_for(lambda: [int(line.split()[0]) for line in job_processes("uid-a", a["ns"])
                              if line.split(" ", 1)[1] == "sleep 300"], "uid-a's ranks asleep")
    yield {"log": log, "pids": ranks, "job_dir": job_dirs(home, "uid-a", a["ns"])[0]}
    api.delete(f"{TRAINER}/namespaces/{a['ns']}/trainjobs/uid-a")


def test_each_tenants_ranks_run_as_its_namespaces_uid(api: httpx.Client, tenants: dict[str, Any],
                                                      running_a: dict[str, Any]) -> None:
    b = tenants["b"]
    # team b's ranks also try to read what team a's rank left in its home, and team a's job directory, and
    # to reach team a's node (its sshd listens at its pod address) beside their own job's node
    pid, key = running_a["pids"][0], running_a["job_dir"] / "ssh" / "id_rsa"
    assert Path(f"/proc/{pid}/root/home/mpiuser/secret").read_text() == "secret of team a\n"  # root may
    (node_a,) = [p["status"]["podIP"] for p in by_role(job_pods(api, "uid-a", tenants["a"]["ns"]), "node")]
    reach = "timeout 5 bash -c 'exec 3<>/dev/tcp/$0/2222 && head -c 7 <&3' {} 2>&1 | tail -1"
    rank = (f'{IDS}; cat /proc/{pid}/root/home/mpiuser/secret 2>&1 | sed "s/^/home: /"; '
            f'cat {key} 2>&1 | sed "s/^/key: /"')
    launcher = (f'echo "own-node $({reach.format("uid-b-node-0-0.uid-b")})"; '
                f'echo "team-a-node $({reach.format(node_a)})"; mpirun bash -c {shlex.quote(rank)}')
    submit(b, trainjob("uid-b", ["bash", "-c", launcher], num_nodes=2))
    done = wait_finished(api, "uid-b", b["ns"])
    log_b = pod_log(api, launcher_of(job_pods(api, "uid-b", b["ns"]))["metadata"]["name"], b["ns"])
    assert condition(done, "Complete"), (done["status"], log_b)

    seen = {}
    for team, log in (("a", running_a["log"]), ("b", log_b)):
        first = first_uid(api, tenants[team]["ns"])
        ranks = ids(log)
        assert len(ranks) == 2 and len({host for host, *_ in ranks}) == 2, log  # a rank on each of both pods
        for _host, uid, gid, groups in ranks:
            assert first <= uid < first + 10000, log  # inside its namespace's range: its first UID
            assert (uid, gid, groups) == (first, first, [first]), log  # its group is its UID's number
        seen[team] = first
    assert seen["a"] != seen["b"]

    homes = [line for line in log_b.splitlines() if line.startswith("home: ")]
    # a pod's /proc is its own PID namespace's, as a container's: team a's process is not even there
    assert homes == [f"home: cat: /proc/{pid}/root/home/mpiuser/secret: No such file or directory"] * 2, log_b
    keys = [line for line in log_b.splitlines() if line.startswith("key: ")]
    assert len(keys) == 2 and all(k.endswith(("Permission denied", "No such file or directory")) for k in keys), log_b
    assert "secret of team a" not in log_b and "PRIVATE KEY" not in log_b
    assert re.findall(r"^own-node (.*)$", log_b, re.MULTILINE) == ["SSH-2.0"], log_b  # inside the job: works
    (other,) = re.findall(r"^team-a-node (.*)$", log_b, re.MULTILINE)  # the other tenant's pod: refused
    assert "Connection refused" in other and "SSH" not in other, log_b


def test_the_pods_show_what_they_run_as(api: httpx.Client, tenants: dict[str, Any],
                                        running_a: dict[str, Any]) -> None:
    a = tenants["a"]
    first = first_uid(api, a["ns"])
    pods = json.loads(a["kubectl"]("get", "pods", "-n", a["ns"], "-l", "jobset.sigs.k8s.io/jobset-name=uid-a",
                                   "-o", "json").stdout)["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["metadata"]["annotations"]["openshift.io/scc"] == "restricted-v2"
        assert pod["spec"]["containers"][0]["securityContext"] == {"runAsUser": first, "runAsGroup": first}
        assert pod["spec"]["securityContext"] == {"fsGroup": first}


@pytest.fixture(scope="module")
def root_runtime(api: httpx.Client) -> Iterator[str]:
    """A ClusterTrainingRuntime the admin made, whose pods ask for root (tenants cannot make runtimes)."""
    rt = copy.deepcopy(bundled()[0])
    rt["metadata"]["name"] = name = f"uid-root-{uuid.uuid4().hex[:5]}"
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 0}
    assert api.post(f"{TRAINER}/clustertrainingruntimes", json=rt).status_code == 201
    yield name
    api.delete(f"{TRAINER}/clustertrainingruntimes/{name}")


def test_root_is_refused_until_an_admin_grants_anyuid(api: httpx.Client, kubectl: Kubectl,
                                                      tenants: dict[str, Any], root_runtime: str) -> None:
    a = tenants["a"]
    first = first_uid(api, a["ns"])
    job = trainjob("as-root", ["mpirun", "bash", "-c", IDS], num_nodes=2, runtime=root_runtime)
    refused = submit(a, job, check=False)
    assert refused.returncode != 0
    said = " ".join(refused.stderr.split())  # kubectl wraps nothing, but be sure of one line
    assert said.startswith(
        'Error from server (Forbidden): error when creating "STDIN": trainjobs.trainer.kubeflow.org "as-root" is '
        'forbidden: pods "as-root-node-0-0" is forbidden: unable to validate against any security context '
        f"constraint: [provider restricted-v2: .containers[0].runAsUser: Invalid value: 0: must be in the ranges: "
        f'[{first}, {first + 9999}], provider "nonroot-v2": Forbidden: not usable by user or serviceaccount, '
        'provider "anyuid": Forbidden: not usable by user or serviceaccount]; leave runAsUser'), said
    assert f"--clusterrole=system:openshift:scc:anyuid --user={a['user']} -n {a['ns']}" in said
    assert "NotFound" in a["kubectl"]("get", "trainjob", "as-root", "-n", a["ns"], check=False).stderr
    workloads = api.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{a['ns']}/workloads").json()["items"]
    assert not [w for w in workloads if "as-root" in w["metadata"]["name"]]  # nothing created

    kubectl("create", "rolebinding", "scc-anyuid", "--clusterrole=system:openshift:scc:anyuid",
            f"--user={a['user']}", "-n", a["ns"])
    submit(a, job)
    done = wait_finished(api, "as-root", a["ns"])
    pods = job_pods(api, "as-root", a["ns"])
    log = pod_log(api, launcher_of(pods)["metadata"]["name"], a["ns"])
    assert condition(done, "Complete"), (done["status"], log)
    assert [(uid, gid) for _, uid, gid, _ in ids(log)] == [(0, 0), (0, 0)], log
    assert {p["metadata"]["annotations"]["openshift.io/scc"] for p in pods} == {"anyuid"}


def test_a_runtime_changed_to_root_after_admission_fails_the_job(api: httpx.Client, tenants: dict[str, Any]) -> None:
    b = tenants["b"]
    rt = copy.deepcopy(bundled()[0])
    rt["metadata"]["name"] = name = f"uid-flip-{uuid.uuid4().hex[:5]}"
    assert api.post(f"{TRAINER}/clustertrainingruntimes", json=rt).status_code == 201
    try:
        job = trainjob("flip", ["mpirun", "true"], num_nodes=2, runtime=name)
        job["spec"]["suspend"] = True
        submit(b, job)  # admitted: nothing asks for root yet
        stored = api.get(f"{TRAINER}/clustertrainingruntimes/{name}").json()
        for rjob in stored["spec"]["template"]["spec"]["replicatedJobs"]:
            rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 0}
        assert api.put(f"{TRAINER}/clustertrainingruntimes/{name}", json=stored).status_code == 200
        b["kubectl"]("patch", "trainjob", "flip", "-n", b["ns"], "--type=merge", "-p", '{"spec":{"suspend":false}}')
        failed = condition(wait_finished(api, "flip", b["ns"]), "Failed")
        assert failed is not None and failed["reason"] == "FailedJobs"
        assert failed["message"].startswith('trainjobs.trainer.kubeflow.org "flip" is forbidden: pods "flip-node-0-0" '
                                            "is forbidden: unable to validate against any security context "
                                            "constraint: [provider restricted-v2"), failed["message"]
        assert f"--user={b['user']} -n {b['ns']}" in failed["message"]  # the job's creator is who was asked
        assert job_pods(api, "flip", b["ns"]) == []  # no pod was created
    finally:
        api.delete(f"{TRAINER}/namespaces/{b['ns']}/trainjobs/flip")
        api.delete(f"{TRAINER}/clustertrainingruntimes/{name}")
