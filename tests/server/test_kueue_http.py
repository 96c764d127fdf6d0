"""Kueue objects over real HTTPS and kubectl: both versions served from one storage, converted both ways
on reads, writes, patches and watches; 422 causes for bad objects; discovery and printer columns."""

from __future__ import annotations

import json
import uuid

import httpx
import yaml

G = "/apis/kueue.x-k8s.io"
V2, V1 = f"{G}/v1beta2", f"{G}/v1beta1"
MERGE = {"Content-Type": "application/merge-patch+json"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def cq_body(name: str, api: str = "v1beta2", cohort: str | None = None) -> dict:
    spec: dict = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu", "nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 8},
                                                              {"name": "nvidia.com/gpu", "nominalQuota": 4}]}]}]}
    if cohort:
        spec["cohort" if api == "v1beta1" else "cohortName"] = cohort
    return {"apiVersion": f"kueue.x-k8s.io/{api}", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def test_discovery_lists_both_versions_v1beta2_preferred(http: httpx.Client) -> None:
    group = http.get(G).json()
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1beta2"
    for version in (V2, V1):
        entries = {e["name"]: e for e in http.get(version).json()["resources"]}
        assert {"resourceflavors", "clusterqueues", "clusterqueues/status", "localqueues", "localqueues/status",
                "workloadpriorityclasses", "workloads", "workloads/status", "cohorts", "cohorts/status"} <= set(entries)
        assert entries["clusterqueues"]["shortNames"] == ["cq"] and not entries["clusterqueues"]["namespaced"]
        assert entries["localqueues"]["namespaced"] and "lq" in entries["localqueues"]["shortNames"]


def test_v1beta1_create_is_stored_as_v1beta2_and_read_back_in_either(http: httpx.Client) -> None:
    name = uid("cq")
    created = http.post(f"{V1}/clusterqueues", json=cq_body(name, "v1beta1", cohort="research"))
    assert created.status_code == 201, created.text
    assert created.json()["apiVersion"] == "kueue.x-k8s.io/v1beta1" and created.json()["spec"]["cohort"] == "research"
    new = http.get(f"{V2}/clusterqueues/{name}").json()
    assert new["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert new["spec"]["cohortName"] == "research" and "cohort" not in new["spec"]
    assert new["spec"]["queueingStrategy"] == "BestEffortFIFO"  # defaulted on the v1beta2 form
    old = http.get(f"{V1}/clusterqueues/{name}").json()
    assert old["spec"]["cohort"] == "research" and "cohortName" not in old["spec"]
    assert old["metadata"]["uid"] == new["metadata"]["uid"]
    listed = http.get(f"{V1}/clusterqueues").json()
    assert listed["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert [i["spec"]["cohort"] for i in listed["items"] if i["metadata"]["name"] == name] == ["research"]
    deleted = http.delete(f"{V1}/clusterqueues/{name}").json()
    assert deleted["apiVersion"] == "kueue.x-k8s.io/v1beta1" and deleted["spec"]["cohort"] == "research"
    assert http.get(f"{V2}/clusterqueues/{name}").status_code == 404


def test_v1beta1_patch_and_update_use_v1beta1_field_names(http: httpx.Client) -> None:
    name = uid("cq")
    assert http.post(f"{V2}/clusterqueues", json=cq_body(name)).status_code == 201
    patched = http.patch(f"{V1}/clusterqueues/{name}", content=json.dumps({"spec": {"cohort": "east"}}),
                         headers=MERGE)
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["cohort"] == "east"
    assert http.get(f"{V2}/clusterqueues/{name}").json()["spec"]["cohortName"] == "east"
    old = http.get(f"{V1}/clusterqueues/{name}").json()
    old["spec"]["cohort"] = "west"
    updated = http.put(f"{V1}/clusterqueues/{name}", json=old)
    assert updated.status_code == 200, updated.text
    assert http.get(f"{V2}/clusterqueues/{name}").json()["spec"]["cohortName"] == "west"
    # a v1beta2 field name sent to v1beta1 is unknown there: refused, naming the field
    bad = http.patch(f"{V1}/clusterqueues/{name}", content=json.dumps({"spec": {"cohortName": "x"}}), headers=MERGE)
    assert bad.status_code == 422
    assert [c["field"] for c in bad.json()["details"]["causes"]] == ["spec.cohortName"]


def test_v1beta1_watch_sees_converted_objects(http: httpx.Client) -> None:
    start = http.get(f"{V1}/clusterqueues").json()["metadata"]["resourceVersion"]
    name = uid("cq")
    assert http.post(f"{V2}/clusterqueues", json=cq_body(name, cohort="research")).status_code == 201
    params = {"watch": "true", "timeoutSeconds": "10", "resourceVersion": start,
              "fieldSelector": f"metadata.name={name}"}
    with http.stream("GET", f"{V1}/clusterqueues", params=params) as resp:
        line = next(x for x in resp.iter_lines() if x.strip())
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "kueue.x-k8s.io/v1beta1" and event["object"]["spec"]["cohort"] == "research"


def test_workload_status_round_trips_through_the_status_subresource(http: httpx.Client) -> None:
    name = uid("trainjob-pi")
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name},
          "spec": {"queueName": "user-queue", "priority": 10,
                   "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
                   "podSets": [{"name": "node", "count": 2, "template": {"spec": {"containers": [
                       {"name": "node", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    path = f"{V2}/namespaces/default/workloads"
    assert http.post(path, json=wl).status_code == 201
    status = {"status": {"accumulatedPastExecutionTimeSeconds": 7,
                         "conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                         "message": "couldn't assign flavors to pod set node",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    resp = http.patch(f"{path}/{name}/status", content=json.dumps(status), headers=MERGE)
    assert resp.status_code == 200, resp.text
    old = http.get(f"{V1}/namespaces/default/workloads/{name}").json()
    assert old["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
    assert old["spec"]["priorityClassName"] == "high"
    assert old["status"]["accumulatedPastExexcutionTimeSeconds"] == 7
    assert old["status"]["conditions"][0]["reason"] == "Pending"


def test_invalid_objects_get_422_with_field_causes(http: httpx.Client) -> None:
    body = cq_body(uid("cq"))
    body["spec"]["queueingStrategy"] = "FIFO"
    resp = http.post(f"{V2}/clusterqueues", json=body)
    assert resp.status_code == 422
    status = resp.json()
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "ClusterQueue"
    assert status["details"]["group"] == "kueue.x-k8s.io"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert "supported values" in causes["spec.queueingStrategy"]
    body = cq_body(uid("cq"))
    body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["name"] = "gpu"
    resp = http.post(f"{V1}/clusterqueues", json={**body, "apiVersion": "kueue.x-k8s.io/v1beta1"})
    causes = {c["field"]: c["message"] for c in resp.json()["details"]["causes"]}
    assert "must match the name in coveredResources" in causes["spec.resourceGroups[0].flavors[0].resources[1].name"]
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": uid("lq")},
          "spec": {"clusterQueue": "Bad Name"}}
    resp = http.post(f"{V1}/namespaces/default/localqueues", json=lq)
    assert resp.status_code == 422 and resp.json()["details"]["causes"][0]["field"] == "spec.clusterQueue"


def test_kubectl_apply_v1beta1_then_get_by_short_names(kubectl) -> None:  # type: ignore[no-untyped-def]
    name, lq = uid("cq"), uid("lq")
    docs = [cq_body(name, "v1beta1", cohort="research"),
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
             "metadata": {"name": lq, "namespace": "default"}, "spec": {"clusterQueue": name}}]
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs)).stdout
    assert f"clusterqueue.kueue.x-k8s.io/{name} created" in out and f"localqueue.kueue.x-k8s.io/{lq} created" in out
    again = kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs)).stdout
    assert f"clusterqueue.kueue.x-k8s.io/{name} unchanged" in again
    table = kubectl("get", "cq", name).stdout.splitlines()
    assert table[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert table[1].split()[:2] == [name, "research"]
    wide = kubectl("get", "clusterqueues", name, "-o", "wide").stdout.splitlines()[0]
    assert "STRATEGY" in wide and "ADMITTED WORKLOADS" in wide
    stored = json.loads(kubectl("get", "clusterqueues.v1beta2.kueue.x-k8s.io", name, "-o", "json").stdout)
    assert stored["spec"]["cohortName"] == "research"
    lqs = kubectl("get", "localqueues", "-A").stdout
    assert "CLUSTERQUEUE" in lqs.splitlines()[0] and lq in lqs and name in lqs
    assert lq in kubectl("get", "lq", "-n", "default", "-o", "name").stdout
    kubectl("delete", "lq", lq, "-n", "default")
    kubectl("delete", "cq", name)


def test_kubectl_other_kinds_and_invalid_apply(kubectl) -> None:  # type: ignore[no-untyped-def]
    wpc, rf = uid("prio"), uid("flavor")
    docs = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": wpc},
             "value": 1000},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": rf},
             "spec": {"nodeLabels": {"gpu": "a100"}}}]
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    rows = kubectl("get", "wpc", wpc).stdout.splitlines()
    assert rows[0].split() == ["NAME", "VALUE"] and rows[1].split() == [wpc, "1000"]
    assert f"resourceflavor.kueue.x-k8s.io/{rf}" in kubectl("get", "rf", "-o", "name").stdout
    kubectl("get", "workloads", "-A")
    kubectl("get", "cohorts")
    bad = cq_body(uid("cq"), "v1beta1")
    bad["spec"]["queueingStrategy"] = "FIFO"
    proc = kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert proc.returncode != 0
    assert 'spec.queueingStrategy: Unsupported value: "FIFO": supported values: "StrictFIFO"' in proc.stderr
    kubectl("delete", "wpc", wpc)
    kubectl("delete", "rf", rf)
