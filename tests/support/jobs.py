"""TrainJobs and their pods through the API: builders, reads, and the waits a job's test needs. A wait
that times out carries the job's pods and their last lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from support.timing import scaled
from support.waits import wait_for

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
JOBSET = "jobset.sigs.k8s.io/jobset-name"
RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
TAG = "E2E_JOB"  # trainer.env name every test job carries: it reaches every rank, so /proc finds them
Obj = dict[str, Any]


def trainjob(name: str, command: list[str], *, num_nodes: int = 2, env: dict[str, str] | None = None,
             runtime: str = "mpi-distributed", suspend: bool = False, labels: dict[str, str] | None = None) -> Obj:
    """A TrainJob whose trainer.env carries `E2E_JOB=<name>` (see `processes.job_processes`)."""
    variables = [{"name": TAG, "value": name}] + [{"name": k, "value": v} for k, v in (env or {}).items()]
    spec: Obj = {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": num_nodes, "env": variables, "command": command}}
    if suspend:
        spec["suspend"] = True
    meta: Obj = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


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


def finished_as(tj: Obj) -> str:
    """'Complete' or 'Failed' once the job ended, else ''."""
    return next((kind for kind in ("Complete", "Failed") if condition(tj, kind) is not None), "")


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
              "timeoutSeconds": str(int(scaled(timeout)))}
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


def delete_jobs_using(c: httpx.Client, runtimes: set[str], namespace: str = "default") -> None:
    """Delete the namespace's TrainJobs that name one of `runtimes`, and wait until they are gone: a module
    deletes its jobs before its runtimes, since a TrainJob whose runtime is gone makes the upstream SDK's
    `list_jobs` fail for the whole namespace (whichever test runs next)."""
    r = c.get(f"{TRAINER}/namespaces/{namespace}/trainjobs")
    assert r.status_code == 200, r.text
    doomed = [tj["metadata"]["name"] for tj in r.json()["items"]
              if (tj.get("spec", {}).get("runtimeRef") or {}).get("name") in runtimes]
    for name in doomed:
        c.delete(f"{TRAINER}/namespaces/{namespace}/trainjobs/{name}")
    for name in doomed:
        wait_for(lambda n=name: c.get(f"{TRAINER}/namespaces/{namespace}/trainjobs/{n}").status_code == 404 or None,
                 f"TrainJob {namespace}/{name} gone")
