"""The Kueue tables of `mpijob.api.trainer.support` against the upstream CRDs: every rule names a real field, every
field has a rule, a refused field reads the same in v1beta1, harmless fields are warned by name, and the
server's own objects pass without a word."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kueue_samples import PLURALS, V1, cluster_queue, cohort, crd_schema, flavor, local_queue, valid_samples
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit
from mpijob.api.kueue.conversion import to_storage
from mpijob.api.trainer.support import check, rule_for
from mpijob.api.trainer.support_rules import REFUSED, RULES
from mpijob.controllers.kueue.workloads import default_objects

KINDS = sorted(PLURALS)
TOP = {"apiVersion", "kind", "metadata", "status"}  # every kind's: honoured, as the Trainer tables do


def _fields(node: dict, path: str = "") -> Iterator[tuple[str, bool]]:
    """(`kubectl explain` path, is a leaf) of every field of a CRD schema."""
    for key, child in (node.get("properties") or {}).items():
        here = f"{path}.{key}" if path else key
        while child.get("type") == "array" and isinstance(child.get("items"), dict):
            here, child = f"{here}[]", child["items"]
        yield here, "properties" not in child
        yield from _fields(child, here)


def _paths(kind: str, version: str = "v1beta2") -> dict[str, bool]:
    return dict(_fields(crd_schema(kind, version)))


@pytest.mark.parametrize("kind", KINDS)
def test_every_rule_names_a_field_of_the_v1beta2_crd(kind: str) -> None:
    known = {p.removesuffix("[]") for p in _paths(kind)}
    assert [p for p in RULES[kind] if p not in TOP and p not in known] == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_of_the_v1beta2_crd_has_a_rule(kind: str) -> None:
    leaves = [p for p, leaf in _paths(kind).items() if leaf]
    assert leaves
    assert [p for p in leaves if rule_for(kind, p) is None] == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_field_has_the_same_name_in_v1beta1(kind: str) -> None:
    """Rules read the stored (v1beta2) form, so a v1beta1 client must recognise the names in a refusal; a
    field v1beta1 lacks is refused by the conversion itself, as an unknown field."""
    v1 = {p.removesuffix("[]") for p in _paths(kind, "v1beta1")}
    v2_only = {"spec.concurrentAdmissionPolicy", "spec.preemptionGates"}
    refused = [p for p, rule in RULES[kind].items() if rule.verdict == REFUSED]
    assert [p for p in refused if p not in v1 and p not in v2_only] == []


def test_a_v1beta1_client_reads_its_own_field_and_value_names() -> None:
    v1_cq = r.for_kind(V1, "ClusterQueue")
    body = {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": "team-a"},
            "spec": {**cluster_queue()["spec"], "flavorFungibility": {"whenCanBorrow": "Borrow",
                                                                       "whenCanPreempt": "Preempt"}}}
    res, obj = to_storage(v1_cq, copy.deepcopy(body))
    with pytest.raises(ApiError) as err:
        admit(res, obj)
    (cause,) = err.value.causes  # Borrow is Kueue's default (MayStopSearch): honoured
    assert cause.field == "spec.flavorFungibility.whenCanPreempt" and "v1beta1: Preempt" in cause.message
    body["spec"]["flavorFungibility"].pop("whenCanPreempt")
    assert admit(*to_storage(v1_cq, copy.deepcopy(body)))["spec"]["flavorFungibility"]["whenCanBorrow"] == \
        "MayStopSearch"


def _warnings(obj: dict) -> list[str]:
    res = r.for_kind(obj["apiVersion"], obj["kind"])
    return check(obj["kind"], admit(res, copy.deepcopy(obj))).warnings


def test_what_is_harmless_on_one_machine_is_warned_by_name() -> None:
    rf = flavor("a100", nodeLabels={"gpu": "a100"}, nodeTaints=[{"key": "gpu", "effect": "PreferNoSchedule"}],
                tolerations=[{"key": "gpu", "operator": "Exists"}])
    warned = _warnings(rf)
    assert {w.split(":")[0] for w in warned} == {"spec.nodeLabels.gpu", "spec.nodeTaints[0].key",
                                                 "spec.tolerations[0].key", "spec.tolerations[0].operator"}, warned
    assert all("every pod runs on this machine" in w for w in warned)
    assert _warnings(local_queue(fairSharing={"weight": 2})) == [
        ("spec.fairSharing.weight: no effect: a LocalQueue's weight is used only by admission fair sharing "
        "(ClusterQueue spec.admissionScope), which the local cluster does not do")]
    assert [w.split(":")[0] for w in _warnings(cohort(fairSharing={"weight": 2}))] == ["spec.fairSharing.weight"]


@pytest.mark.parametrize("sample", [s for s in valid_samples() if s["kind"] not in ("ResourceFlavor", "Cohort")
                                    and s["metadata"]["name"] != "team-b-queue"],
                         ids=lambda s: f"{s['kind']}-{s['metadata']['name']}")
def test_what_kueue_does_and_the_local_cluster_does_too_passes_silently(sample: dict) -> None:
    assert _warnings(sample) == []


def test_the_servers_own_objects_pass_admission_without_a_word() -> None:
    for res, obj in default_objects({"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}):
        body: dict[str, Any] = {"apiVersion": res.api_version, "kind": res.kind, **copy.deepcopy(obj)}
        found = check(res.kind, admit(res, body))
        assert (found.causes, found.warnings) == ([], []), res.kind
