"""What kube refuses of claims and pod volumes, what a file volume holds, and what the scheduler says of a
pod whose claim is missing: `mpijob.api.core.volumes`, pure (docs/volumes.md)."""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime

import pytest
from mpijob.api import names
from mpijob.api.core import tables
from mpijob.api.core import volumes as v
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, PERSISTENT_VOLUME_CLAIMS
from mpijob.api.core.validation import admit
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.support import check

POD = "spec.template.spec.replicatedJobs[1].template.spec.template.spec"


def _claim(**spec: object) -> dict:
    base = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"},
            "spec": {**base, **spec}}


def _causes(res, obj, old=None) -> dict[str, str]:
    with pytest.raises(ApiError) as err:
        admit(res, obj, old)
    assert err.value.code == 422
    return {c.field: c.message for c in err.value.causes}


def test_a_claim_needs_access_modes_and_a_storage_request() -> None:
    admit(PERSISTENT_VOLUME_CLAIMS, _claim())
    causes = _causes(PERSISTENT_VOLUME_CLAIMS, _claim(accessModes=[], resources={}))
    assert causes == {"spec.accessModes": "Required value: at least 1 access mode is required",
                      "spec.resources[storage]": "Required value: request the claim's size, e.g. "
                                                 "resources.requests.storage: 10Gi"}
    causes = _causes(PERSISTENT_VOLUME_CLAIMS, _claim(accessModes=["ReadWriteSometimes"],
                                                      resources={"requests": {"storage": "0"}}))
    assert causes["spec.accessModes"].startswith('Unsupported value: "ReadWriteSometimes": supported values: ')
    assert causes["spec.resources[storage]"] == 'Invalid value: "0": must be greater than zero'


def test_what_the_local_cluster_cannot_provide_for_a_claim_is_refused_by_name() -> None:
    causes = _causes(PERSISTENT_VOLUME_CLAIMS, _claim(volumeMode="Block", volumeName="pv-1",
                                                      dataSource={"kind": "PersistentVolumeClaim", "name": "src"}))
    assert set(causes) == {"spec.volumeMode", "spec.volumeName", "spec.dataSource"}, causes
    assert "remove volumeName" in causes["spec.volumeName"]
    admit(PERSISTENT_VOLUME_CLAIMS, _claim(volumeMode="Filesystem"))  # what the local cluster does anyway


def test_a_claims_spec_only_grows_its_request_once_created() -> None:
    old = admit(PERSISTENT_VOLUME_CLAIMS, _claim())
    old["spec"]["volumeName"] = "pvc-1"  # what the provisioner wrote
    old["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    grown = copy.deepcopy(old)
    grown["spec"]["resources"]["requests"]["storage"] = "2Gi"
    admit(PERSISTENT_VOLUME_CLAIMS, grown, old)
    reapplied = copy.deepcopy(old)
    del reapplied["spec"]["volumeName"]  # an apply of the original manifest changes nothing
    admit(PERSISTENT_VOLUME_CLAIMS, reapplied, old)
    shrunk = copy.deepcopy(old)
    shrunk["spec"]["resources"]["requests"]["storage"] = "512Mi"
    assert _causes(PERSISTENT_VOLUME_CLAIMS, shrunk, old) == {
        "spec.resources.requests.storage": "Forbidden: field can not be less than status.capacity"}
    moved = copy.deepcopy(old)
    moved["spec"]["accessModes"] = ["ReadWriteOnce"]
    assert "spec is immutable after creation" in _causes(PERSISTENT_VOLUME_CLAIMS, moved, old)["spec"]


def test_a_claim_warns_that_its_size_is_not_enforced_and_an_unknown_class_is_served_locally() -> None:
    warnings = check(names.PVC_KIND, _claim(storageClassName="nfs-client")).warnings
    assert any(w.startswith("spec.resources.requests.storage: ") and "not enforced" in w for w in warnings), warnings
    assert any(w.startswith('spec.storageClassName: "nfs-client"') for w in warnings), warnings
    quiet = check(names.PVC_KIND, _claim(storageClassName=names.LOCAL_STORAGE_CLASS)).warnings
    assert not any(w.startswith("spec.storageClassName") for w in quiet), quiet


def _runtime_with(volumes: list, mounts: list) -> dict:
    rt = copy.deepcopy(bundled()[0])
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["volumes"] = volumes
    pod["containers"][0]["volumeMounts"] = mounts
    return rt


def test_honoured_volumes_are_admitted_and_others_refused_with_the_fix() -> None:
    honoured = [{"name": "a", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "b", "hostPath": {"path": "/mnt/nas", "type": "Directory"}},
                {"name": "c", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                {"name": "d", "configMap": {"name": "x", "items": [{"key": "k", "path": "k"}]}},
                {"name": "e", "secret": {"secretName": "x", "defaultMode": 0o400}},
                {"name": "f", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "g", "projected": {"sources": [{"configMap": {"name": "x"}}]}}]
    mounts = [{"name": x, "mountPath": f"/m/{x}"} for x in "abcdefg"]
    admit(CLUSTER_TRAINING_RUNTIMES, _runtime_with(honoured, mounts))
    causes = _causes(CLUSTER_TRAINING_RUNTIMES, _runtime_with(
        [{"name": "share", "nfs": {"server": "nas", "path": "/export"}}], [{"name": "share", "mountPath": "/data"}]))
    assert list(causes) == [f"{POD}.volumes[0]"], causes
    assert "mount it on this machine and use a hostPath volume" in causes[f"{POD}.volumes[0]"]


def test_a_pod_templates_volumes_are_checked_as_kube_apiserver_checks_a_pods() -> None:
    causes = _causes(CLUSTER_TRAINING_RUNTIMES, _runtime_with(
        [{"name": "a", "hostPath": {"path": "relative", "type": "Folder"}}, {"name": "a", "emptyDir": {}},
         {"name": "i", "downwardAPI": {"items": [{"path": "../x", "fieldRef": {"fieldPath": "spec.nodeName"}}]}}],
        [{"name": "missing", "mountPath": "/x"}, {"name": "a", "mountPath": "/x", "subPath": "../up"},
         {"name": "a", "mountPath": "rel"}]))
    assert causes[f"{POD}.volumes[0].hostPath.path"].startswith('Invalid value: "relative": must be an absolute path')
    assert causes[f"{POD}.volumes[0].hostPath.type"].startswith('Unsupported value: "Folder"')
    assert causes[f"{POD}.volumes[1].name"] == 'Duplicate value: "a"'
    assert causes[f"{POD}.volumes[2].downwardAPI.items[0].path"] == "Invalid value: \"../x\": must not contain '..'"
    assert causes[f"{POD}.volumes[2].downwardAPI.items[0].fieldRef.fieldPath"].startswith(
        'Unsupported value: "spec.nodeName"')
    assert causes[f"{POD}.containers[0].volumeMounts[0].name"].startswith('Not found: "missing"')
    assert causes[f"{POD}.containers[0].volumeMounts[1].mountPath"] == 'Invalid value: "/x": must be unique'
    assert causes[f"{POD}.containers[0].volumeMounts[1].subPath"] == "Invalid value: \"../up\": must not contain '..'"
    assert causes[f"{POD}.containers[0].volumeMounts[2].mountPath"].startswith('Invalid value: "rel"')


def test_mounts_say_what_each_shows_and_file_volumes_are_read_only() -> None:
    spec = {"containers": [{"name": "node", "volumeMounts": [
        {"name": "d", "mountPath": "/d", "subPath": "part"}, {"name": "ro", "mountPath": "/ro"},
        {"name": "cfg", "mountPath": "/cfg"}]}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "ro", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
                    {"name": "cfg", "configMap": {"name": "x"}}]}
    assert [(m.kind, m.path, m.sub_path, m.read_only) for m in v.mounts(spec)] == [
        ("persistentVolumeClaim", "/d", "part", False), ("persistentVolumeClaim", "/ro", "", True),
        ("configMap", "/cfg", "", True)]
    spec["containers"][0]["volumeMounts"].append({"name": "gone", "mountPath": "/g"})
    with pytest.raises(v.VolumeError, match=r'spec.containers\[0\].volumeMounts\[3\].name: Not found: "gone"'):
        v.mounts(spec)


def test_the_scheduler_waits_for_a_missing_deleted_or_unbound_claim_in_kubes_words() -> None:
    spec = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}
    bound = {"metadata": {"name": "data"}, "status": {"phase": "Bound"}}
    assert v.claim_problem(spec, {}) == 'persistentvolumeclaim "data" not found'
    assert v.claim_problem(spec, {"data": {"metadata": {"deletionTimestamp": "x"}}}) == \
        'persistentvolumeclaim "data" is being deleted'
    assert v.claim_problem(spec, {"data": {"metadata": {}, "status": {"phase": "Pending"}}}) == \
        "pod has unbound immediate PersistentVolumeClaims"
    assert v.claim_problem(spec, {"data": bound}) == ""
    assert v.unschedulable_message('persistentvolumeclaim "data" not found', 1) == (
        '0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/1 nodes are available: '
        "1 Preemption is not helpful for scheduling.")


def test_file_volumes_hold_keys_items_modes_and_downward_fields() -> None:
    cm = {"data": {"a": "1", "b": "2"}, "binaryData": {"bin": base64.b64encode(b"\x00\x01").decode()}}
    secret = {"data": {"token": base64.b64encode(b"s3cret").decode()}}
    objects = {("ConfigMap", "cm"): cm, ("Secret", "s"): secret}
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"b": "2", "a": 'say "hi"'},
                        "annotations": {"note": "x"}}}
    assert v.files("configMap", {"name": "cm"}, objects, pod) == {"a": (b"1", 0o644), "b": (b"2", 0o644),
                                                                 "bin": (b"\x00\x01", 0o644)}
    assert v.files("configMap", {"name": "cm", "defaultMode": 0o600, "items": [{"key": "a", "path": "x/y"}]},
                   objects, pod) == {"x/y": (b"1", 0o600)}
    assert v.files("secret", {"secretName": "s", "items": [{"key": "token", "path": "t", "mode": 0o400}]},
                   objects, pod) == {"t": (b"s3cret", 0o400)}
    with pytest.raises(v.VolumeError, match='configmap "nope" not found'):
        v.files("configMap", {"name": "nope"}, objects, pod)
    assert v.files("secret", {"secretName": "nope", "optional": True}, objects, pod) == {}
    with pytest.raises(v.VolumeError, match="configmap references non-existent config key: c"):
        v.files("configMap", {"name": "cm", "items": [{"key": "c", "path": "c"}]}, objects, pod)
    downward = {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                          {"path": "one", "fieldRef": {"fieldPath": "metadata.annotations['note']"}},
                          {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}
    assert v.files("downwardAPI", downward, objects, pod) == {
        "labels": (b'a="say \\"hi\\""\nb="2"', 0o644), "one": (b"x", 0o644), "name": (b"p", 0o644)}
    projected = {"defaultMode": 0o440, "sources": [{"configMap": {"name": "cm", "items": [{"key": "a", "path": "a"}]}},
                                                   {"secret": {"name": "s"}}, {"downwardAPI": downward}]}
    assert set(v.files("projected", projected, objects, pod)) == {"a", "token", "labels", "one", "name"}
    assert {mode for _, mode in v.files("projected", projected, objects, pod).values()} == {0o440}


def test_kubectl_get_pvc_columns() -> None:
    claim = _claim(storageClassName="fast")
    claim["metadata"]["creationTimestamp"] = "2026-11-24T09:00:00Z"
    claim["spec"]["volumeName"] = "pvc-1"
    claim["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"},
                       "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}
    now = datetime(2026, 11, 24, 9, 5, tzinfo=UTC)
    shown = tables.table(PERSISTENT_VOLUME_CLAIMS, [claim], "1", now=now)
    assert [c["name"] for c in shown["columnDefinitions"]] == [
        "Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age",
        "VolumeMode"]
    assert shown["rows"][0]["cells"] == ["data", "Bound", "pvc-1", "1Gi", "RWO,RWX", "fast", "<unset>", "5m",
                                         "<unset>"]
    pending = _claim()
    pending["metadata"]["creationTimestamp"] = "2026-11-24T09:00:00Z"
    assert tables.table(PERSISTENT_VOLUME_CLAIMS, [pending], "1", now=now)["rows"][0]["cells"][:6] == [
        "data", "", "", "", "", ""]
