"""A ClusterQueue's admission checks are acted on (a missing one makes the queue inactive), so their shape
is checked as the CRD and Kueue's webhook check it, in both API versions."""

from __future__ import annotations

import copy

import pytest
from kueue_samples import cluster_queue, crd_errors
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit
from mpijob.api.kueue.conversion import up

FIELD = "spec.admissionChecksStrategy.admissionChecks"


def _admit(obj: dict) -> dict:
    res = r.for_kind(obj["apiVersion"], obj["kind"])
    assert res is not None
    return admit(res, obj, None)


def _causes(obj: dict) -> dict[str, str]:
    with pytest.raises(ApiError) as info:
        _admit(obj)
    assert info.value.code == 422
    return {c.field: c.message for c in info.value.causes}


def _with_checks(checks: object) -> dict:
    return cluster_queue(admissionChecksStrategy={"admissionChecks": checks})


def test_a_strategy_naming_checks_on_the_queues_flavors_is_admitted() -> None:
    cq = _with_checks([{"name": "prov"}, {"name": "mk", "onFlavors": ["default-flavor"]}])
    assert crd_errors(cq) == []
    assert _admit(copy.deepcopy(cq))["spec"]["admissionChecksStrategy"] == cq["spec"]["admissionChecksStrategy"]


@pytest.mark.parametrize(("checks", "field", "words"), [
    (["prov"], f"{FIELD}[0]", "object"),  # v1beta1's list of names, sent to v1beta2
    ([{"onFlavors": ["default-flavor"]}], f"{FIELD}[0].name", "Required"),
    ([{"name": ""}], f"{FIELD}[0].name", "at least 1"),
    ([], FIELD, "at least 1"),
    ([{"name": "prov", "when": "always"}], f"{FIELD}[0].when", "unknown field"),
])
def test_malformed_strategies_are_refused_by_the_schema(checks: object, field: str, words: str) -> None:
    cq = _with_checks(checks)
    assert crd_errors(cq) != []  # the upstream CRD refuses them too
    causes = _causes(cq)
    assert field in causes, causes
    assert words in causes[field], causes[field]


def test_a_check_listed_twice_is_refused() -> None:
    causes = _causes(_with_checks([{"name": "prov"}, {"name": "prov"}]))
    assert causes[f"{FIELD}[1]"].startswith('Duplicate value: {"name":"prov"}')


def test_on_flavors_must_name_flavors_of_the_queue() -> None:
    causes = _causes(_with_checks([{"name": "prov", "onFlavors": ["default-flavor", "a100"]}]))
    assert list(causes) == [f"{FIELD}[0].onFlavors[1]"]
    assert causes[f"{FIELD}[0].onFlavors[1]"] == 'Unsupported value: "a100": supported values: "default-flavor"'


def test_v1beta1_admission_checks_are_admitted_as_a_strategy() -> None:
    old = cluster_queue()
    old["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    old["spec"]["admissionChecks"] = ["prov"]
    stored = _admit(up(old))
    assert stored["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
