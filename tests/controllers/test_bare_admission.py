"""A bare pod's admission at creation over a real store (controllers/kubelet/bare_admission.py): kube's defaults,
the SCC's ids written into it, its ServiceAccount required, LimitRange defaults written into its container,
and ResourceQuota counting it beside the namespace's other bare pods; a pod a job owns left alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mpijob.api.core import rbac
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import LIMIT_RANGES, PODS, RESOURCE_QUOTAS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet.bare_admission import admit
from mpijob.controllers.quota import namespace_usage
from mpijob.server import bootstrap
from mpijob.store.objects import Store

ALICE = rbac.User("alice", "", ("team-a", "system:authenticated"))


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "cluster.db")
    bootstrap.run(s)  # the default roles, and `default` with the first range and its ServiceAccount
    yield s
    s.close()


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "9"]}], **spec}}


def test_a_pod_gets_kubes_defaults_and_the_ids_its_scc_decides(store: Store) -> None:
    p = pod()
    admit(store, p, ALICE, SandboxMode.NAMESPACE)
    spec = p["spec"]
    assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"], spec["serviceAccountName"]) == \
        ("Always", 30, "default")
    assert spec["containers"][0]["securityContext"]["runAsUser"] == 1000000000
    assert spec["securityContext"]["fsGroup"] == 1000000000
    assert p["metadata"]["annotations"]["openshift.io/scc"] == "restricted-v2"


def test_root_is_refused_in_a_pods_words_with_the_fix(store: Store) -> None:
    with pytest.raises(ApiError) as info:
        admit(store, pod(securityContext={"runAsUser": 0}), ALICE, SandboxMode.NAMESPACE)
    assert info.value.code == 403
    assert info.value.message.startswith('pods "p" is forbidden: unable to validate against any security context')
    assert "in the pod" in info.value.message and "--user=alice" in info.value.message


def test_a_missing_service_account_is_refused(store: Store) -> None:
    with pytest.raises(ApiError) as info:
        admit(store, pod(serviceAccountName="nobody"), ALICE, SandboxMode.NAMESPACE)
    assert info.value.code == 403 and 'serviceaccount "nobody" not found' in info.value.message


def test_what_cannot_run_is_a_422_and_volumes_only_where_they_can_be_mounted(store: Store) -> None:
    with pytest.raises(ApiError) as info:
        admit(store, pod(volumes=[{"name": "d", "emptyDir": {}}]), ALICE, SandboxMode.PROCESS)
    assert info.value.code == 422 and [c.field for c in info.value.causes] == ["spec.volumes"]
    admit(store, pod(volumes=[{"name": "d", "emptyDir": {}}]), ALICE, SandboxMode.NAMESPACE)


def test_limit_range_defaults_are_written_and_the_quota_counts_bare_pods(store: Store) -> None:
    store.create(LIMIT_RANGES, {"metadata": {"name": "lr", "namespace": "default"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "64Mi"}}]}})
    store.create(RESOURCE_QUOTAS, {"metadata": {"name": "q", "namespace": "default"},
                                   "spec": {"hard": {"pods": "1", "requests.cpu": "1"}}})
    first = pod("first")
    admit(store, first, ALICE, SandboxMode.NAMESPACE)
    assert first["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m", "memory": "64Mi"},
                                                           "requests": {"cpu": "500m", "memory": "64Mi"}}
    store.create(PODS, first)
    assert namespace_usage(store, "default")["pods"] == 1
    with pytest.raises(ApiError) as info:
        admit(store, pod("second"), ALICE, SandboxMode.NAMESPACE)
    assert info.value.code == 403
    assert info.value.message == ('pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, '
                                  "limited: pods=1")
    done = store.get(PODS, "default", "first")
    done["status"] = {"phase": "Succeeded"}
    store.update(PODS, done, status=True)  # a finished pod no longer counts
    admit(store, pod("second"), ALICE, SandboxMode.NAMESPACE)


def test_a_pod_a_job_owns_is_left_as_it_is(store: Store) -> None:
    owned = pod()
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                             "name": "j", "uid": "u"}]
    owned["spec"]["containers"][0].pop("command")
    before = repr(owned)
    admit(store, owned, ALICE, SandboxMode.NAMESPACE)
    assert repr(owned) == before
