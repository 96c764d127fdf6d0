"""Server-side apply's field ownership (pure, `mpijob.api.core.managed_fields`): FieldsV1 as kube writes it, field
sets, merging keyed lists, conflicts worded as kube words them, removal of what an applier stopped applying,
updates taking fields over, and the shapes generated from the CRDs. Through the server with real kubectl:
tests/server/test_server_side_apply.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from mpijob.api.core import managed_fields as mf

from support import UPSTREAM, load_tool

TJ = "trainer.kubeflow.org/v1alpha1"
TJ_SHAPE = mf.crd_shape("trainer.kubeflow.org", "v1alpha1", "TrainJob")
PODS = mf.keyed_lists({"containers": {"l": "map", "k": ["name"]}, "env": {"l": "map", "k": ["name"]},
                       "ports": {"l": "map", "k": ["containerPort", "protocol"], "d": {"protocol": "TCP"}}})
T0, T1, T2 = "2025-01-01T00:00:00Z", "2025-01-01T00:00:01Z", "2025-01-01T00:00:02Z"


def trainjob(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": TJ, "kind": "TrainJob", "metadata": {"name": "tj", "namespace": "default"}, "spec": spec}


def fields(managed: mf.Managed, manager: str, operation: str = mf.APPLY) -> set[str]:
    """What `manager` owns; empty when it has no entry (kube drops an entry that owns nothing)."""
    return {mf.path_string(p) for e in managed.values() if e.manager == manager and e.operation == operation
            for p in e.fields}


def p(*parts: str) -> mf.FieldPath:
    return tuple(("f", part) for part in parts)


# -- FieldsV1 --------------------------------------------------------------------------------------------------


def test_fields_v1_is_kubes_trie_in_kubes_order() -> None:
    env_a = mf.key_element([("name", "A")])
    port = mf.key_element([("protocol", "TCP"), ("containerPort", 80)])  # keys sorted by name
    fs = {p("spec", "suspend"), p("metadata", "labels", "b"), p("metadata", "labels", "a"),
          (*p("spec", "env"), env_a), (*p("spec", "env"), env_a, ("f", "name")), (*p("spec", "ports"), port),
          (*p("metadata", "finalizers"), ("v", '"x"'))}
    encoded = mf.to_fields_v1(fs)
    assert json.dumps(encoded, separators=(",", ":")) == (
        '{"f:metadata":{"f:finalizers":{"v:\\"x\\"":{}},"f:labels":{"f:a":{},"f:b":{}}},'
        '"f:spec":{"f:env":{"k:{\\"name\\":\\"A\\"}":{".":{},"f:name":{}}},'
        '"f:ports":{"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{}},"f:suspend":{}}}')
    assert mf.from_fields_v1(encoded) == fs


def test_fields_v1_orders_fields_keys_values_indexes_and_escapes_as_go() -> None:
    fs = {(("i", "10"),), (("i", "9"),), (("v", "2"),), (("v", '"a"'),), (mf.key_element([("n", "<&>")]),),
          (("f", "z"),)}
    assert list(mf.to_fields_v1(fs)) == ["f:z", 'k:{"n":"\\u003c\\u0026\\u003e"}', "v:2", 'v:"a"', "i:9", "i:10"]


def test_fields_v1_read_as_kube_reads_it() -> None:
    raw = {"f:a": {".": {}, "f:b": {}}, "f:c": {"f:d": {}}, "x:future": {}, "k:{\"b\":1,\"a\":2}": {}}
    assert mf.from_fields_v1(raw) == {p("a"), p("a", "b"), p("c", "d"), (("k", '{"a":2,"b":1}'),)}
    with pytest.raises(ValueError, match="JSON objects"):
        mf.from_fields_v1({"f:a": []})


def test_path_string_names_fields_as_conflicts_do() -> None:
    path = (*p("spec", "containers"), mf.key_element([("name", "main")]), ("f", "ports"),
            mf.key_element([("containerPort", 80), ("protocol", "TCP")]), ("f", "x"))
    assert mf.path_string(path) == '.spec.containers[name="main"].ports[containerPort=80,protocol="TCP"].x'
    assert mf.path_string((*p("metadata", "finalizers"), ("v", '"a"'))) == '.metadata.finalizers[="a"]'


# -- field sets, merging, comparing ----------------------------------------------------------------------------


def test_field_set_owns_leaves_keyed_items_atomic_lists_empty_maps_and_nulls() -> None:
    obj = trainjob(trainer={"command": ["a", "b"], "env": [{"name": "A", "value": "1"}], "numNodes": 2},
                   runtimeRef={}, managedBy=None)
    obj["metadata"]["finalizers"] = ["f1"]
    got = {mf.path_string(q) for q in mf.field_set(obj, TJ_SHAPE)}
    assert got == {".apiVersion", ".kind", ".metadata.name", ".metadata.namespace", '.metadata.finalizers[="f1"]',
                   ".spec.trainer.command", '.spec.trainer.env[name="A"]', '.spec.trainer.env[name="A"].name',
                   '.spec.trainer.env[name="A"].value', ".spec.trainer.numNodes", ".spec.runtimeRef",
                   ".spec.managedBy"}


def test_a_list_the_crd_does_not_key_is_atomic() -> None:
    obj = trainjob(trainer={"args": ["x"]})
    assert (*p("spec", "trainer", "args"),) in mf.field_set(obj, TJ_SHAPE)
    assert mf.merge(obj, trainjob(trainer={"args": ["y", "z"]}), TJ_SHAPE)["spec"]["trainer"]["args"] == ["y", "z"]


def test_keyed_lists_merge_item_by_item_in_structured_merge_diffs_order() -> None:
    live = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}, {"name": "c"}]}}
    config = {"spec": {"containers": [{"name": "c", "image": "2"}, {"name": "d"}, {"name": "a"}]}}
    merged = mf.merge(live, config, PODS)
    assert merged["spec"]["containers"] == [{"name": "b"}, {"name": "c", "image": "2"}, {"name": "d"},
                                            {"name": "a", "image": "1"}]
    assert live["spec"]["containers"][0] == {"name": "a", "image": "1"}  # inputs untouched


def test_a_key_field_left_out_takes_its_schema_default() -> None:
    live = {"ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}
    merged = mf.merge(live, {"ports": [{"containerPort": 80, "hostPort": 8080}]}, PODS)
    assert merged == {"ports": [{"containerPort": 80, "protocol": "TCP", "name": "http", "hostPort": 8080}]}


def test_compare_says_what_was_added_changed_and_removed() -> None:
    old = {"metadata": {"labels": {"a": "1"}}, "spec": {"env": [{"name": "A", "value": "1"}, {"name": "B"}]}}
    new = {"metadata": {"labels": {"a": "2", "b": "1"}}, "spec": {"env": [{"name": "A", "value": "1.0"}]}}
    c = mf.compare(old, new, PODS)
    env_a, env_b = mf.key_element([("name", "A")]), mf.key_element([("name", "B")])
    assert c.added == {p("metadata", "labels", "b")}
    assert c.modified == {p("metadata", "labels", "a"), (*p("spec", "env"), env_a, ("f", "value"))}
    assert c.removed == {(*p("spec", "env"), env_b), (*p("spec", "env"), env_b, ("f", "name"))}
    assert not mf.compare({"n": 1}, {"n": 1.0}, PODS).modified and mf.compare({"n": 1}, {"n": True}, PODS).modified


def test_applied_configurations_with_unkeyed_or_duplicate_items_are_refused() -> None:
    config = {"spec": {"containers": [{"name": "a"}, {"name": "a"}, "x", {"image": "i"}]}}
    assert mf.applied_errors(config, PODS) == [
        '.spec.containers: duplicate entries for key [name="a"]',
        ".spec.containers: element 2: associative list with keys may not have non-map elements",
        (".spec.containers: element 3: associative list with keys has an element that omits all key fields ['name'] "
         "(and doesn't have default values for any key fields)"),
    ]


# -- apply -----------------------------------------------------------------------------------------------------


def applied(live: Any, config: dict[str, Any], managed: mf.Managed, manager: str, now: str = T1,
            **kw: Any) -> tuple[dict[str, Any], mf.Managed]:
    return mf.apply(live, copy.deepcopy(config), managed, manager, TJ, shape=TJ_SHAPE, now=now, **kw)


def test_apply_creates_and_owns_what_it_applied() -> None:
    config = trainjob(suspend=True, trainer={"numNodes": 2, "env": [{"name": "A", "value": "1"}]})
    obj, managed = applied(None, config, {}, "ci", T0)
    assert obj == config
    (entry,) = mf.encode(managed)
    assert entry == {"manager": "ci", "operation": "Apply", "apiVersion": TJ, "time": T0, "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:suspend": {}, "f:trainer": {"f:env": {'k:{"name":"A"}': {
                         ".": {}, "f:name": {}, "f:value": {}}}, "f:numNodes": {}}}}}


def test_a_second_manager_changing_a_field_conflicts_and_force_takes_it() -> None:
    obj, managed = applied(None, trainjob(suspend=True, trainer={"numNodes": 2}), {}, "ci", T0)
    with pytest.raises(mf.Conflicts) as refused:
        applied(obj, trainjob(suspend=False), managed, "other")
    err = mf.conflict_error(refused.value)
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == 'Apply failed with 1 conflict: conflict with "ci": .spec.suspend'
    assert [c.to_dict() for c in err.causes] == [
        {"reason": "FieldManagerConflict", "field": ".spec.suspend", "message": 'conflict with "ci"'}]
    forced, after = applied(obj, trainjob(suspend=False), managed, "other", force=True)
    assert forced["spec"]["suspend"] is False
    assert fields(after, "other") == {".spec.suspend"} and fields(after, "ci") == {".spec.trainer.numNodes"}


def test_applying_the_same_value_shares_the_field() -> None:
    obj, managed = applied(None, trainjob(suspend=True), {}, "ci", T0)
    same, shared = applied(obj, trainjob(suspend=True), managed, "other")
    assert same == obj and fields(shared, "ci") == fields(shared, "other") == {".spec.suspend"}
    times = {e["manager"]: e.get("time") for e in mf.encode(shared)}
    assert times == {"ci": T0, "other": None}  # nothing changed: no time for the new entry
    # the field stays while either still applies it
    kept, _ = applied(same, trainjob(), shared, "ci", T2)
    assert kept["spec"]["suspend"] is True


def test_reapplying_without_a_field_removes_it_unless_someone_else_owns_it() -> None:
    first = trainjob(suspend=True, trainer={"env": [{"name": "A"}, {"name": "B"}]})
    first["metadata"]["labels"] = {"keep": "1", "drop": "1"}
    obj, managed = applied(None, first, {}, "ci", T0)
    other = trainjob()
    other["metadata"]["labels"] = {"keep": "1"}
    obj, managed = applied(obj, other, managed, "other")
    second = trainjob(trainer={"env": [{"name": "A"}]})
    obj, managed = applied(obj, second, managed, "ci", T2)
    assert obj["metadata"]["labels"] == {"keep": "1"}
    assert obj["spec"] == {"trainer": {"env": [{"name": "A"}]}}
    assert fields(managed, "ci") == {".spec.trainer.env[name=\"A\"]", ".spec.trainer.env[name=\"A\"].name"}


def test_removal_spares_what_nobody_applied() -> None:
    """A field a controller wrote straight to the store (owned by nobody) survives an applier's removals."""
    config = trainjob(suspend=True)
    config["metadata"]["labels"] = {"mine": "1"}
    obj, managed = applied(None, config, {}, "ci", T0)
    obj["metadata"]["labels"]["controller"] = "x"
    obj, managed = applied(obj, trainjob(suspend=True), managed, "ci")
    assert obj["metadata"]["labels"] == {"controller": "x"}


def test_an_update_takes_the_fields_it_changes_and_drops_what_it_removes() -> None:
    obj, managed = applied(None, trainjob(suspend=True, trainer={"numNodes": 2}), {}, "ci", T0)
    edited = copy.deepcopy(obj)
    edited["spec"]["trainer"]["numNodes"] = 3
    del edited["spec"]["suspend"]
    edited["metadata"]["annotations"] = {"note": "x"}
    after = mf.update(obj, edited, managed, "kubectl-edit", TJ, shape=TJ_SHAPE, now=T1)
    assert fields(after, "ci") == set() and len(after) == 1
    assert fields(after, "kubectl-edit", mf.UPDATE) == {".spec.trainer.numNodes", ".metadata.annotations",
                                                       ".metadata.annotations.note"}
    assert mf.encode(after)[0]["fieldsV1"] == {"f:metadata": {"f:annotations": {".": {}, "f:note": {}}},
                                               "f:spec": {"f:trainer": {"f:numNodes": {}}}}
    # a write that changes nothing records nothing
    assert mf.update(obj, copy.deepcopy(obj), managed, "noop", TJ, shape=TJ_SHAPE, now=T2) == managed


def test_a_create_is_an_update_from_nothing() -> None:
    created = mf.update(None, trainjob(suspend=True), {}, "kubectl-create", TJ, shape=TJ_SHAPE, now=T0)
    assert mf.encode(created)[0]["fieldsV1"] == {"f:spec": {".": {}, "f:suspend": {}}}


def test_conflicts_with_several_managers_are_listed_by_manager() -> None:
    obj, managed = applied(None, trainjob(suspend=True), {}, "ci", T0)
    edited = copy.deepcopy(obj)
    edited["spec"]["managedBy"] = "x"
    edited["spec"]["activeDeadlineSeconds"] = 5
    managed = mf.update(obj, edited, managed, "kubectl-edit", TJ, shape=TJ_SHAPE, now=T1)
    with pytest.raises(mf.Conflicts) as refused:
        applied(edited, trainjob(suspend=False, managedBy="y", activeDeadlineSeconds=6), managed, "other")
    assert mf.conflict_error(refused.value).message == (
        "Apply failed with 3 conflicts: conflicts with \"ci\":\n- .spec.suspend\n"
        "conflicts with \"kubectl-edit\" using trainer.kubeflow.org/v1alpha1:\n- .spec.activeDeadlineSeconds\n"
        "- .spec.managedBy")


def test_kubectls_first_server_side_apply_takes_over_its_client_side_fields() -> None:
    """kube's lastAppliedManager: `kubectl` may change what its last client-side apply set, and no other
    manager may; the annotation is kept current."""
    csa = trainjob(suspend=True)
    live = copy.deepcopy(csa)
    live["metadata"]["annotations"] = {mf.LAST_APPLIED: json.dumps(csa)}
    managed = mf.update(None, live, {}, "kubectl-client-side-apply", TJ, shape=TJ_SHAPE, now=T0)
    with pytest.raises(mf.Conflicts) as refused:
        applied(live, trainjob(suspend=False), managed, "other")
    assert mf.conflict_error(refused.value).message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using trainer.kubeflow.org/v1alpha1: '
        ".spec.suspend")
    obj, after = applied(live, trainjob(suspend=False), managed, "kubectl")
    assert obj["spec"]["suspend"] is False and fields(after, "kubectl") == {".spec.suspend"}
    assert json.loads(obj["metadata"]["annotations"][mf.LAST_APPLIED]) == trainjob(suspend=False)
    assert obj["metadata"]["annotations"][mf.LAST_APPLIED].endswith("}\n")


def test_status_applies_own_only_status() -> None:
    live = trainjob(suspend=True)
    status = {**trainjob(suspend=False), "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    obj, managed = applied(live, status, {}, "ctl", subresource="status",
                           ignored=lambda path: path[:1] != (("f", "status"),))
    assert obj["status"]["conditions"][0]["type"] == "Complete"
    (entry,) = mf.encode(managed)
    assert entry["subresource"] == "status" and list(entry["fieldsV1"]) == ["f:status"]
    assert entry["fieldsV1"]["f:status"]["f:conditions"] == {'k:{"type":"Complete"}': {
        ".": {}, "f:status": {}, "f:type": {}}}


# -- entries ---------------------------------------------------------------------------------------------------


def test_entries_round_trip_in_kubes_order() -> None:
    raw = [{"manager": "b", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:x": {}}}},
           {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:y": {}}}},
           {"manager": "z", "operation": "Apply", "apiVersion": "v1", "time": T2, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"}]
    assert mf.encode(mf.decode(raw)) == [raw[2], raw[1], raw[0]]
    for bad in ([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
                [{"operation": "Apply", "apiVersion": "", "fieldsType": "FieldsV1"}],
                [{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}], "x"):
        with pytest.raises(ValueError):
            mf.decode(bad)
    assert mf.is_reset([]) and mf.is_reset([{}]) and not mf.is_reset(None) and not mf.is_reset(raw)


def test_past_ten_update_managers_the_oldest_merge_into_ancient_changes() -> None:
    managed: mf.Managed = {}
    obj: dict[str, Any] = {"data": {}}
    for n in range(12):
        new = {"data": {**obj["data"], f"k{n}": "v"}}
        managed = mf.update(obj, new, managed, f"m{n:02}", "v1", shape=PODS, now=f"2025-01-01T00:00:{n:02}Z")
        obj = new
    names = [e["manager"] for e in mf.encode(managed)]
    assert names == ["ancient-changes", *(f"m{n:02}" for n in range(3, 12))]
    assert fields(managed, "ancient-changes", mf.UPDATE) == {".data.k0", ".data.k1", ".data.k2"}


# -- shapes ----------------------------------------------------------------------------------------------------


def test_crd_shapes_come_from_the_crds_list_types() -> None:
    env = TJ_SHAPE.field("spec").field("trainer").field("env")
    assert (env.list_type, env.keys) == ("map", ("name",))
    runtime = mf.crd_shape("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime")
    pod = (runtime.field("spec").field("template").field("spec").field("replicatedJobs").item().field("template")
           .field("spec").field("template").field("spec"))
    ports = pod.field("containers").item().field("ports")
    assert (ports.keys, dict(ports.defaults)) == (("containerPort", "protocol"), {"protocol": "TCP"})
    assert pod.field("tolerations").list_type == "atomic" and pod.field("nodeSelector").atomic
    for group, version, kind in (("kueue.x-k8s.io", "v1beta2", "Workload"), ("kubeflow.org", "v2beta1", "MPIJob")):
        shape = mf.crd_shape(group, version, kind)
        assert shape.field("metadata").field("finalizers").list_type == "set"
    wl = mf.crd_shape("kueue.x-k8s.io", "v1beta2", "Workload")
    assert wl.field("spec").field("podSets").keys == ("name",)


def test_the_generated_shapes_are_current() -> None:
    tool = load_tool("gen_ssa_shapes")
    assert tool.render(UPSTREAM) == tool.OUTPUT.read_text(encoding="utf-8"), \
        "mpijob/api/core/ssa_shapes.json is stale: run .venv/bin/python tools/gen_ssa_shapes.py"
