"""Kueue's wording and Kubernetes' quantity format, exactly (PARITY §4)."""

from dataclasses import replace

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.scheduler.cycle import schedule
from mpijob.api.kueue.snapshot import PodSet
from sched_builders import GPU, job, pending, queue, snap


def test_quantities_print_as_kubernetes_does():
    assert msg.quantity("cpu", 500) == "500m"
    assert msg.quantity("cpu", 2000) == "2"
    assert msg.quantity("cpu", 1500) == "1500m"
    assert msg.quantity("memory", 64 * 2**30) == "64Gi"
    assert msg.quantity("memory", 1536 * 2**20) == "1536Mi"
    assert msg.quantity("memory", 1_500_000_000) == "1500M"
    assert msg.quantity("memory", 1000) == "1k"
    assert msg.quantity(GPU, 32) == "32"
    assert msg.quantity(GPU, 0) == "0"
    assert msg.quantity(GPU, 2000) == "2k"


def test_over_capacity_message_matches_parity():
    s = snap([queue("team-a", {GPU: 24})], [job("big", "team-a", gpus=8, nodes=4)])
    p = pending(schedule(s))["default/big"]
    assert p.message == (
        "couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor "
        "default-flavor, previously considered podsets requests (0) + current podset request (32) > "
        "maximum capacity (24)")
    assert p.human == "Waiting for quota: nvidia.com/gpu requested 32, available 24 in ClusterQueue team-a"
    assert p.reason == "ExceedsMaxQuota"
    assert p.never_fits


def test_insufficient_unused_quota_message_matches_parity():
    s = snap([queue("team-a", {"X": {GPU: 16}})],
             [job("running", "team-a", gpus=8, admitted="X"), job("waiting", "team-a", gpus=16, t=5)])
    p = pending(schedule(s))["default/waiting"]
    assert p.message == ("couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu "
                         "in flavor X, 8 more needed")
    assert p.human == "Waiting for quota: nvidia.com/gpu requested 16, available 8 in ClusterQueue team-a"
    assert p.reason == "WaitingForQuota"
    assert not p.never_fits


def test_several_resources_are_listed_sorted_and_joined():
    q = queue("q", {GPU: 4, "cpu": 1000})
    s = snap([q], [job("j", gpus=8, cpu=2000)])
    p = pending(schedule(s))["default/j"]
    # the launcher's cpu fails first: Kueue stops at the first pod set that cannot be assigned
    assert p.message == ("couldn't assign flavors to pod set launcher: insufficient quota for cpu in flavor "
                         "default-flavor, previously considered podsets requests (0) + current podset request (2) "
                         "> maximum capacity (1)")


def test_previously_considered_pod_sets_count():
    q = queue("q", {"cpu": 3000})
    w = job("j", gpus=0, cpu=1000, extra={"cpu": 1000}, nodes=3)
    p = pending(schedule(snap([q], [w])))["default/j"]
    assert "previously considered podsets requests (1) + current podset request (3) > maximum capacity (3)" in p.message
    assert p.message.startswith("couldn't assign flavors to pod set node: ")


def test_the_wait_names_the_whole_jobs_need_not_the_first_pod_sets():
    """A launcher that is a node too asks for a GPU like each node: 2 nodes × 1 GPU need 2, even when the
    launcher's pod set is the one that does not fit (it used to say "requested 1")."""
    holder = job("holder", "team-a", gpus=2, admitted="default-flavor")
    two = replace(job("two", "team-a", t=5), pod_sets=(PodSet("launcher", 1, {GPU: 1}), PodSet("node", 1, {GPU: 1})))
    p = pending(schedule(snap([queue("team-a", {GPU: 2})], [holder, two])))["default/two"]
    assert p.human == "Waiting for quota: nvidia.com/gpu requested 2, available 0 in ClusterQueue team-a"
