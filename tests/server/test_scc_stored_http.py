"""Stored SCCs over the real API (a fresh server, since an SCC is cluster-wide): an SCC write gets no
warning any more, and a TrainJob whose pods ask a UID only a stored SCC allows is refused for a creator
who may not use it, in OpenShift's words, and admitted once RBAC grants its `use`."""

from __future__ import annotations

import copy
from collections.abc import Callable

import httpx
from mpijob.api.trainer.runtimes import bundled
from mpijob.store.server_process import ServerInfo

SCCS = "/apis/security.openshift.io/v1/securitycontextconstraints"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
USERS = "/apis/mpijob.io/v1alpha1/users"
NS = "scc-stored"
BAND = {"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints", "metadata": {"name": "band"},
        "allowHostDirVolumePlugin": False, "allowHostIPC": False, "allowHostNetwork": False, "allowHostPID": False,
        "allowHostPorts": False, "allowPrivilegedContainer": False, "readOnlyRootFilesystem": False,
        "runAsUser": {"type": "MustRunAsRange", "uidRangeMin": 5000, "uidRangeMax": 5999},
        "seLinuxContext": {"type": "MustRunAs"}, "fsGroup": {"type": "RunAsAny"},
        "supplementalGroups": {"type": "RunAsAny"}}


def _runtime(uid: int) -> dict:
    rt = copy.deepcopy(bundled()[0])
    rt["kind"], rt["metadata"] = "TrainingRuntime", {"name": f"as-{uid}", "namespace": NS}
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": uid}
    return rt


def _job(name: str, uid: int) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": f"as-{uid}", "kind": "TrainingRuntime"},
                     "trainer": {"numNodes": 1, "command": ["mpirun", "hostname"]}}}


def _ok(resp: httpx.Response) -> httpx.Response:
    assert resp.status_code in (200, 201), resp.text
    return resp


def test_a_stored_scc_admits_the_jobs_of_those_who_may_use_it(new_server: Callable[..., ServerInfo],
                                                              connect: Callable[..., httpx.Client]) -> None:
    info = new_server("scc-stored", controllers=False)
    with connect(info) as admin:
        made = _ok(admin.post(SCCS, json=BAND))
        assert "warning" not in made.headers  # stored SCCs decide now: nothing to warn about
        _ok(admin.post("/api/v1/namespaces", json={"metadata": {"name": NS}}))
        for uid in (5500, 7000):
            _ok(admin.post(f"{TRAINER}/namespaces/{NS}/trainingruntimes", json=_runtime(uid)))
        token = _ok(admin.post(USERS, json={"metadata": {"name": "alice"}, "spec": {"groups": []}})).json()[
            "status"]["token"]
        _ok(admin.post(f"{RBAC}/namespaces/{NS}/rolebindings", json={
            "metadata": {"name": "alice-edit"}, "subjects": [{"kind": "User", "name": "alice"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}))
        with connect(info, token=token) as alice:
            refused = alice.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=_job("in-band", 5500))
            assert refused.status_code == 403, refused.text
            assert 'provider "band": Forbidden: not usable by user or serviceaccount' in refused.json()["message"]
            _ok(admin.post(f"{RBAC}/clusterroles", json={
                "metadata": {"name": "system:openshift:scc:band"},
                "rules": [{"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"],
                           "resourceNames": ["band"], "verbs": ["use"]}]}))
            _ok(admin.post(f"{RBAC}/namespaces/{NS}/rolebindings", json={
                "metadata": {"name": "alice-band"}, "subjects": [{"kind": "User", "name": "alice"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:openshift:scc:band"}}))
            _ok(alice.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=_job("in-band", 5500)))
            outside = alice.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=_job("outside", 7000))
            assert outside.status_code == 403, outside.text
            assert ("provider band: .containers[0].runAsUser: Invalid value: 7000: must be in the ranges: "
                    "[5000, 5999]") in outside.json()["message"]
        named_as_built_in = admin.post(SCCS, json={**BAND, "metadata": {"name": "anyuid"}})
        assert named_as_built_in.status_code == 201 and "is built in" in named_as_built_in.headers["warning"]
