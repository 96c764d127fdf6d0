"""The doctor's "could this job ever fit its ClusterQueue" is the scheduler's `never_fits`, asked over a
snapshot of what the doctor read: the same answer in the same words, cohorts included, and no answer
when the cohort's other queues could not be read."""

from __future__ import annotations

from mpijob.api.kueue.fit import never_fits
from mpijob.api.kueue.snapshot import (
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    ResourceGroup,
    ResourceQuota,
    Snapshot,
    Workload,
)
from mpijob.client.doctor.queues import cannot_admit

GPU = "nvidia.com/gpu"


def queue(name: str, flavors: dict[str, int], cohort: str | None = None, lending: int | None = None) -> ClusterQueue:
    return ClusterQueue(name, (ResourceGroup((GPU,), tuple(FlavorQuotas(f, (ResourceQuota(GPU, n, None, lending),))
                                                            for f, n in flavors.items())),), cohort=cohort)


def job(cq: str, launcher: int, nodes: int, per_node: int) -> Workload:
    return Workload("ns/j", "ns", cq, "lq", 0, "", (PodSet("launcher", 1, {GPU: launcher}),
                                                    PodSet("node", nodes, {GPU: per_node})))


def test_pod_sets_are_placed_flavor_by_flavor_as_the_scheduler_places_them() -> None:
    # 5 GPUs in all, but once the launcher takes one of big's 4 the nodes' 4 fit neither flavor: never
    cq = queue("split", {"big": 4, "small": 1})
    why = cannot_admit(cq, [cq], job("split", 1, 2, 2))
    assert why is not None and why == never_fits(Snapshot({"split": cq}, frozenset(), ()), job("split", 1, 2, 2))
    assert why.startswith("nvidia.com/gpu requested 5, but ClusterQueue split can never provide more than")
    assert cannot_admit(cq, [cq], job("split", 0, 2, 2)) is None


def test_a_cohort_lends_what_its_other_queues_may_lend() -> None:
    mine, peer = queue("mine", {"f": 2}, "pool"), queue("peer", {"f": 8}, "pool", lending=3)
    assert cannot_admit(mine, [mine, peer], job("mine", 0, 1, 5)) is None  # 2 own + 3 lent
    why = cannot_admit(mine, [mine, peer], job("mine", 0, 1, 6))
    assert why == ("nvidia.com/gpu requested 6, but ClusterQueue mine can never provide more than 5 (nominal quota "
                   "plus what it may borrow); request at most 5 nvidia.com/gpu or raise the ClusterQueue's quota")


def test_no_answer_when_the_cohort_could_not_be_read() -> None:
    mine = queue("mine", {"f": 2}, "pool")
    assert cannot_admit(mine, None, job("mine", 0, 1, 100)) is None
    alone = queue("alone", {"f": 2})
    assert cannot_admit(alone, None, job("alone", 0, 1, 3)) is not None  # no cohort: its own quota is all there is
