"""mpijob.api.core.quota: LimitRanger's defaults and checks, and ResourceQuota's usage, constraints and
`exceeded quota` message, over a TrainJob's whole run plan — with kube-apiserver's words."""

from __future__ import annotations

import pytest
from mpijob.api.core import quota
from mpijob.api.trainer.plan import resolve
from mpijob.api.trainer.runtimes import bundled

GPU = "nvidia.com/gpu"
COUNT = "count/trainjobs.trainer.kubeflow.org"


def limit_range(*items: dict) -> dict:
    return {"metadata": {"name": "limits"}, "spec": {"limits": list(items)}}


def gpu_quota(name: str, gpus: object) -> dict:
    return {"metadata": {"name": name}, "spec": {"hard": {f"requests.{GPU}": gpus}}}


# -- LimitRange defaults -----------------------------------------------------------------------------


def test_a_limit_without_request_becomes_the_request_as_pod_defaulting_does():
    assert quota.defaulted({"limits": {GPU: 4, "cpu": "2"}}) == {"limits": {GPU: 4, "cpu": "2"},
                                                                 "requests": {GPU: 4, "cpu": "2"}}
    assert quota.defaulted({"limits": {"cpu": "2"}, "requests": {"cpu": "1"}})["requests"] == {"cpu": "1"}
    assert quota.defaulted(None) == {} and quota.defaulted({}) == {}


def test_limit_range_default_and_default_request_fill_only_what_a_container_lacks():
    lr = limit_range({"type": "Container", "default": {"cpu": "2", "memory": "1Gi"},
                      "defaultRequest": {"cpu": "500m"}})
    assert quota.defaulted({}, [lr]) == {"limits": {"cpu": "2", "memory": "1Gi"},
                                         "requests": {"cpu": "500m", "memory": "1Gi"}}  # request ← default
    own = quota.defaulted({"limits": {"cpu": "4"}, "requests": {"memory": "2Gi"}}, [lr])
    assert own == {"limits": {"cpu": "4", "memory": "1Gi"}, "requests": {"cpu": "4", "memory": "2Gi"}}


def test_limit_range_item_defaults_follow_set_defaults_limit_range_item():
    # default ← max, defaultRequest ← default, else ← min; Pod items have no defaults
    lr = limit_range({"type": "Container", "max": {"cpu": "4"}, "min": {"memory": "64Mi"}},
                     {"type": "Pod", "max": {"memory": "8Gi"}})
    assert quota.defaulted({}, [lr]) == {"limits": {"cpu": "4"}, "requests": {"cpu": "4", "memory": "64Mi"}}


def test_the_first_limit_range_to_set_a_default_wins():
    first = limit_range({"type": "Container", "default": {"cpu": "1"}})
    second = limit_range({"type": "Container", "default": {"cpu": "3", "memory": "1Gi"}})
    assert quota.defaulted({}, [first, second])["limits"] == {"cpu": "1", "memory": "1Gi"}


# -- LimitRange checks ---------------------------------------------------------------------------------


def test_max_min_and_ratio_are_refused_with_limit_rangers_messages():
    lr = limit_range({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Gi"},
                      "maxLimitRequestRatio": {"cpu": "1.5"}})
    pod = quota.defaulted({"limits": {"cpu": "4"}, "requests": {"cpu": "2", "memory": "512Mi"}}, [lr])
    assert quota.limit_violations([pod], [lr]) == [
        "minimum memory usage per Container is 1Gi, but request is 512Mi",
        "maximum cpu usage per Container is 2, but limit is 4",
        "cpu max limit to request ratio per Container is 1500m, but provided ratio is 2.000000",
    ]
    ratio = quota.defaulted({"limits": {"cpu": "2"}, "requests": {"cpu": "1", "memory": "1Gi"}}, [lr])
    assert quota.limit_violations([ratio], [lr]) == [
        "cpu max limit to request ratio per Container is 1500m, but provided ratio is 2.000000"]
    fine = quota.defaulted({"limits": {"cpu": "2"}, "requests": {"cpu": "1500m", "memory": "2Gi"}}, [lr])
    assert quota.limit_violations([fine], [lr]) == []


def test_a_pod_item_without_limit_and_a_missing_request_are_named():
    lr = limit_range({"type": "Pod", "max": {"memory": "8Gi"}, "min": {"cpu": "100m"}})
    assert quota.limit_violations([quota.defaulted({}, [lr])], [lr]) == [
        "minimum cpu usage per Pod is 100m.  No request is specified",
        "maximum memory usage per Pod is 8Gi.  No limit is specified",
    ]


def test_each_violation_is_said_once_for_the_whole_job_and_several_are_bracketed():
    lr = limit_range({"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}})
    pods = [quota.defaulted({"limits": {"cpu": "4", "memory": "2Gi"}}, [lr])] * 3
    found = quota.limit_violations(pods, [lr])
    assert len(found) == 2
    assert quota.aggregate(found) == ("[maximum cpu usage per Container is 2, but limit is 4, "
                                      "maximum memory usage per Container is 1Gi, but limit is 2Gi]")
    assert quota.aggregate(found[:1]) == "maximum cpu usage per Container is 2, but limit is 4"


# -- usage ---------------------------------------------------------------------------------------------


def test_pod_usage_is_the_pod_evaluators():
    usage = quota.pod_usage(quota.defaulted({"limits": {GPU: 2, "cpu": "1500m", "memory": "2Gi",
                                                        "hugepages-2Mi": "4Mi"}}))
    assert usage == {"pods": 1, "cpu": 1500, "requests.cpu": 1500, "limits.cpu": 1500,
                     "memory": 2 * 2**30, "requests.memory": 2 * 2**30, "limits.memory": 2 * 2**30,
                     "hugepages-2Mi": 4 * 2**20, "requests.hugepages-2Mi": 4 * 2**20, f"requests.{GPU}": 2}
    assert f"limits.{GPU}" not in usage  # extended resources are quota'd by request only


def test_a_job_counts_its_whole_plan_launcher_and_every_node():
    job = {"metadata": {"name": "pi", "namespace": "default", "uid": "u"},
           "spec": {"runtimeRef": {"name": "mpi-distributed"},
                    "trainer": {"numNodes": 3, "resourcesPerNode": {"limits": {GPU: 4}}}}}
    plan = resolve(job, bundled()[0])
    pods = [quota.defaulted(p.resources) for p in plan.pods]
    assert quota.job_usage(pods) == {COUNT: 1, "pods": 3, f"requests.{GPU}": 12}
    assert quota.job_usage(pods, running=False) == {COUNT: 1}  # a finished job: only the object


@pytest.mark.parametrize("key,value,shown", [("requests.cpu", 1500, "1500m"), ("limits.cpu", 2000, "2"),
                                             ("requests.memory", 3 * 2**30, "3Gi"), ("memory", 10**9, "1G"),
                                             (f"requests.{GPU}", 8, "8"), ("pods", 1000, "1k")])
def test_amounts_are_printed_as_kubernetes_prints_a_quantity(key, value, shown):
    assert quota.show(key, value) == shown
    assert quota.amount(key, shown) == value


def test_which_quota_keys_a_trainjob_counts_against():
    for key in ("pods", "cpu", "requests.memory", "limits.cpu", f"requests.{GPU}", COUNT, "requests.hugepages-2Mi"):
        assert quota.tracked(key), key
    for key in ("count/pods", "services", "secrets", f"limits.{GPU}", "requests.storage", "count/configmaps"):
        assert not quota.tracked(key), key


# -- the check -----------------------------------------------------------------------------------------


def gpu_pods(n: int, gpus: int) -> list[dict]:
    return [quota.defaulted({"limits": {GPU: gpus}})] * n


def test_exceeded_quota_names_the_quota_requested_used_and_limited():
    message = quota.check([gpu_quota("gpus", 8)], {f"requests.{GPU}": 4}, gpu_pods(2, 4))
    assert message == (f"exceeded quota: gpus, requested: requests.{GPU}=8, used: requests.{GPU}=4, "
                       f"limited: requests.{GPU}=8")
    assert quota.check([gpu_quota("gpus", 8)], {f"requests.{GPU}": 4}, gpu_pods(1, 4)) is None  # exactly full


def test_only_the_exceeded_keys_are_named_sorted():
    q = {"metadata": {"name": "team"},
         "spec": {"hard": {"requests.cpu": "4", "limits.cpu": "8", "pods": 10, f"requests.{GPU}": 2}}}
    pods = [quota.defaulted({"limits": {"cpu": "3", GPU: 2}})] * 2
    assert quota.check([q], {}, pods) == (f"exceeded quota: team, requested: requests.cpu=6,requests.{GPU}=4, "
                                          f"used: requests.cpu=0,requests.{GPU}=0, "
                                          f"limited: requests.cpu=4,requests.{GPU}=2")


def test_the_trainjob_count_is_counted_for_every_stored_job():
    q = {"metadata": {"name": "jobs"}, "spec": {"hard": {COUNT: "2"}}}
    assert quota.check([q], {COUNT: 1}, []) is None
    assert quota.check([q], {COUNT: 2}, gpu_pods(1, 1)) == (
        f"exceeded quota: jobs, requested: {COUNT}=1, used: {COUNT}=2, limited: {COUNT}=2")


def test_a_quota_without_a_key_the_job_uses_does_not_constrain():
    others = {"metadata": {"name": "objects"}, "spec": {"hard": {"services": "0", "count/configmaps": "0"}}}
    assert not quota.constrains(others)
    assert quota.check([others], {}, gpu_pods(4, 8)) is None
    # a tracked key the job does not use is no refusal either
    assert quota.check([gpu_quota("gpus", 0)], {}, [quota.defaulted({"limits": {"memory": "1Gi"}})]) is None


def test_the_first_quota_that_refuses_is_named():
    quotas = [gpu_quota("roomy", 100), gpu_quota("tight", 2), gpu_quota("tighter", 1)]
    assert quota.check(quotas, {}, gpu_pods(1, 3)).startswith("exceeded quota: tight,")


def test_a_quota_on_cpu_or_memory_requires_every_container_to_state_them():
    q = {"metadata": {"name": "compute"}, "spec": {"hard": {"requests.cpu": "8", "limits.memory": "8Gi"}}}
    assert quota.check([q], {}, [{}]) == ("failed quota: compute: must specify limits.memory for: node; "
                                          "requests.cpu for: node")
    lr = limit_range({"type": "Container", "default": {"cpu": "1", "memory": "1Gi"}})
    assert quota.check([q], {}, [quota.defaulted({}, [lr])] * 2) is None  # the LimitRange states them


def test_scoped_quotas_are_not_evaluated():
    q = gpu_quota("best-effort", 0)
    q["spec"]["scopes"] = ["NotBestEffort"]
    assert quota.scoped(q) and not quota.constrains(q)
    assert quota.check([q], {}, gpu_pods(1, 1)) is None


def test_status_has_hard_as_specified_and_used_for_every_counted_key():
    q = {"metadata": {"name": "q"}, "spec": {"hard": {f"requests.{GPU}": 8, "requests.memory": "2048Mi",
                                                      COUNT: "10", "services": "3"}}}
    assert quota.status(q, {f"requests.{GPU}": 4, COUNT: 2}) == {
        "hard": {f"requests.{GPU}": "8", "requests.memory": "2Gi", COUNT: "10", "services": "3"},
        "used": {COUNT: "2", "requests.memory": "0", f"requests.{GPU}": "4"},
    }
