"""Preemption within a ClusterQueue: policies, candidate order, minimal victim sets, no double-booking."""

from mpijob.api.kueue.scheduler.cycle import Preempt, schedule
from sched_builders import FLAVOR, GPU, admitted, job, pending, preempted, queue, snap


def q(policy: str = "LowerPriority", gpus: int = 8, **kw):
    return queue("q", {GPU: gpus}, within_cluster_queue=policy, **kw)


def test_lower_priority_preempts_a_lower_priority_workload():
    out = schedule(snap([q()], [job("low", gpus=8, prio=0, admitted=FLAVOR), job("high", gpus=4, prio=10, t=5)]))
    (p,) = [d for d in out if isinstance(d, Preempt)]
    assert (p.workload, p.by, p.reason) == ("default/low", "default/high", "InClusterQueue")
    assert p.message == ("Preempted to accommodate a workload (UID: uid-high, JobUID: UNKNOWN) due to "
                         "prioritization in the ClusterQueue; preemptor path: /q; preemptee path: /q")
    assert admitted(out) == []
    pend = pending(out)["default/high"]
    assert pend.reason == "WaitingForPreemptedWorkloads"
    assert pend.message == ("couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu "
                            "in flavor default-flavor, 4 more needed. Pending the preemption of 1 workload(s)")


def test_lower_priority_never_preempts_equal_priority():
    out = schedule(snap([q()], [job("old", gpus=8, prio=5, admitted=FLAVOR), job("new", gpus=4, prio=5, t=5)]))
    assert preempted(out) == []
    assert pending(out)["default/new"].reason == "WaitingForQuota"


def test_lower_or_newer_equal_priority_preempts_a_newer_equal_one():
    pol = "LowerOrNewerEqualPriority"
    newer = snap([q(pol)], [job("newer", gpus=8, prio=5, t=10, admitted=FLAVOR), job("older", gpus=4, prio=5, t=0)])
    assert preempted(schedule(newer)) == ["default/newer"]
    older = snap([q(pol)], [job("older", gpus=8, prio=5, t=0, admitted=FLAVOR), job("newer", gpus=4, prio=5, t=10)])
    assert preempted(schedule(older)) == []


def test_never_policy_does_not_preempt():
    out = schedule(snap([q("Never")], [job("low", gpus=8, admitted=FLAVOR), job("high", gpus=4, prio=10, t=5)]))
    assert preempted(out) == []


def test_lowest_priority_then_most_recently_admitted_go_first_and_the_set_is_minimal():
    jobs = [
        job("p1-old", gpus=2, prio=1, admitted=FLAVOR, admitted_at=1),
        job("p1-new", gpus=2, prio=1, admitted=FLAVOR, admitted_at=2),
        job("p0-old", gpus=2, prio=0, admitted=FLAVOR, admitted_at=3),
        job("p0-new", gpus=2, prio=0, admitted=FLAVOR, admitted_at=4),
        job("high", gpus=4, prio=10, t=9),
    ]
    assert preempted(schedule(snap([q()], jobs))) == ["default/p0-new", "default/p0-old"]


def test_fill_back_drops_victims_that_are_not_needed():
    # Candidates in order: small (prio 0), big (prio 1). Removing small is not enough, big is; then
    # small is added back because the preemptor fits without evicting it.
    jobs = [job("small", gpus=1, prio=0, admitted=FLAVOR), job("big", gpus=6, prio=1, admitted=FLAVOR),
            job("high", gpus=6, prio=10, t=9)]
    assert preempted(schedule(snap([q()], jobs))) == ["default/big"]


def test_no_double_booking_while_victims_stop():
    # 2 GPUs free; "high" preempts "low" for 4; "filler" (2 GPUs) must not take the free 2 the
    # preemptor counts on.
    jobs = [job("low", gpus=6, prio=0, admitted=FLAVOR), job("high", gpus=4, prio=10, t=5),
            job("filler", gpus=2, prio=0, t=6)]
    out = schedule(snap([q()], jobs))
    assert preempted(out) == ["default/low"]
    assert admitted(out) == []
    assert "default/filler" in pending(out)


def test_two_preemptors_do_not_share_victims():
    jobs = [job("low", gpus=8, prio=0, admitted=FLAVOR), job("high1", gpus=4, prio=10, t=1),
            job("high2", gpus=4, prio=10, t=2)]
    out = schedule(snap([q()], jobs))
    assert preempted(out) == ["default/low"]
    assert [d.workload for d in out].count("default/low") == 1
    assert "default/high2" in pending(out)


def test_preemption_needs_the_request_within_nominal():
    # A 10-GPU request in an 8-GPU queue without a cohort never fits, whatever is preempted.
    out = schedule(snap([q()], [job("low", gpus=2, admitted=FLAVOR), job("huge", gpus=10, prio=10)]))
    assert preempted(out) == []
    assert pending(out)["default/huge"].never_fits


def test_a_second_preemptor_picks_other_victims():
    jobs = [job("low1", gpus=4, prio=0, admitted=FLAVOR, admitted_at=1),
            job("low2", gpus=4, prio=0, admitted=FLAVOR, admitted_at=2),
            job("high1", gpus=4, prio=10, t=1), job("high2", gpus=4, prio=10, t=2)]
    out = schedule(snap([q()], jobs))
    by = {d.workload: d.by for d in out if isinstance(d, Preempt)}
    assert by == {"default/low2": "default/high1", "default/low1": "default/high2"}


def test_a_workload_that_fits_once_victims_are_gone_waits_without_new_victims():
    # high needs 5 of 8 with 4 free: evicting "low" (4) frees 8; "mid" (3) fits in what is left then.
    jobs = [job("low", gpus=4, prio=0, admitted=FLAVOR), job("high", gpus=5, prio=10, t=1),
            job("mid", gpus=3, prio=5, t=2)]
    out = schedule(snap([q()], jobs))
    assert preempted(out) == ["default/low"]
    assert admitted(out) == []
    p = pending(out)["default/mid"]
    assert p.message == ("Workload has overlapping preemption targets with another workload, but will fit after "
                         "these preemptions complete")
    assert p.reason == "WaitingForPreemptedWorkloads"


def test_decisions_do_not_depend_on_input_order():
    jobs = [job(f"r{i}", gpus=1, prio=i % 2, admitted=FLAVOR, admitted_at=i) for i in range(6)] + \
           [job(f"p{i}", gpus=1 + i % 3, prio=i % 4, t=10 + i) for i in range(10)]
    a = schedule(snap([q()], jobs))
    b = schedule(snap([q()], list(reversed(jobs))))
    assert a == b and preempted(a)


def test_borrow_within_cohort_allows_preempting_while_borrowing():
    from sched_builders import queue as mkqueue

    a = mkqueue("a", {GPU: 2}, cohort="c", reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority")
    b = mkqueue("b", {GPU: 6}, cohort="c")
    # b borrows 2 of a's quota; a wants 4 (needs to borrow 2 itself after reclaiming)
    jobs = [job("b-low", "b", gpus=8, prio=0, admitted=FLAVOR), job("a-high", "a", gpus=4, prio=10, t=5)]
    out = schedule(snap([a, b], jobs))
    (p,) = [d for d in out if isinstance(d, Preempt)]
    assert p.reason == "InCohortReclaimWhileBorrowing"
    assert "reclamation within the cohort while borrowing" in p.message
    # without borrowWithinCohort, a preemptor that would borrow cannot evict
    a_never = mkqueue("a", {GPU: 2}, cohort="c", reclaim_within_cohort="LowerPriority")
    assert preempted(schedule(snap([a_never, b], jobs))) == []
