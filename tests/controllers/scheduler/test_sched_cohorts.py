"""Cohorts: borrowing up to borrowingLimit, lending up to lendingLimit, and reclaiming lent quota."""

from mpijob.api.kueue.scheduler.cycle import Admit, Preempt, queue_usage, schedule
from sched_builders import FLAVOR, GPU, admitted, job, pending, preempted, queue, snap


def test_borrow_unused_quota_of_the_cohort():
    a, b = queue("a", {GPU: 4}, cohort="c"), queue("b", {GPU: 4}, cohort="c")
    out = schedule(snap([a, b], [job("wide", "a", gpus=6)]))
    (adm,) = [d for d in out if isinstance(d, Admit)]
    assert adm.workload == "default/wide" and adm.assignment.borrows
    assert queue_usage(snap([a, b], [job("wide", "a", gpus=6, admitted=FLAVOR)]))["a"][(FLAVOR, GPU)] == (6, 2)


def test_no_borrowing_without_a_cohort():
    out = schedule(snap([queue("a", {GPU: 4}), queue("b", {GPU: 4})], [job("wide", "a", gpus=6)]))
    assert admitted(out) == []
    assert pending(out)["default/wide"].never_fits


def test_borrowing_limit_caps_what_may_be_borrowed():
    a = queue("a", {GPU: 4}, cohort="c", borrowing={GPU: 1})
    b = queue("b", {GPU: 8}, cohort="c")
    out = schedule(snap([a, b], [job("six", "a", gpus=6), job("five", "a", gpus=5, t=1)]))
    assert admitted(out) == ["default/five"]
    p = pending(out)["default/six"]
    assert "maximum capacity (5)" in p.message and p.never_fits


def test_lending_limit_keeps_quota_for_the_owner():
    a = queue("a", {GPU: 4}, cohort="c")
    b = queue("b", {GPU: 8}, cohort="c", lending={GPU: 2})  # b keeps 6 to itself
    out = schedule(snap([a, b], [job("seven", "a", gpus=7), job("six", "a", gpus=6, t=1)]))
    assert admitted(out) == ["default/six"]
    assert "maximum capacity (6)" in pending(out)["default/seven"].message


def test_borrowed_quota_is_used_up_across_queues_in_one_cycle():
    a, b = queue("a", {GPU: 4}, cohort="c"), queue("b", {GPU: 4}, cohort="c")
    out = schedule(snap([a, b], [job("a1", "a", gpus=6, t=0), job("b1", "b", gpus=4, t=1)]))
    # b1 fits b's own quota and goes first (non-borrowing first); a1 would then need 2 of b's 0 left
    assert admitted(out) == ["default/b1"]
    assert "insufficient unused quota" in pending(out)["default/a1"].message


def test_reclaim_within_cohort_preempts_the_borrower():
    a = queue("a", {GPU: 4}, cohort="c", reclaim_within_cohort="Any")
    b = queue("b", {GPU: 4}, cohort="c")
    borrower = job("borrower", "b", gpus=8, admitted=FLAVOR)
    out = schedule(snap([a, b], [borrower, job("owner", "a", gpus=4, t=5)]))
    assert preempted(out) == ["default/borrower"]
    (p,) = [d for d in out if isinstance(d, Preempt)]
    assert p.reason == "InCohortReclamation" and p.by == "default/owner" and p.by_uid == "uid-owner"
    assert p.message == ("Preempted to accommodate a workload (UID: uid-owner, JobUID: UNKNOWN) due to reclamation "
                         "within the cohort; preemptor path: /c/a; preemptee path: /c/b")
    assert admitted(out) == []  # admitted in a later cycle, once the borrower is gone
    assert pending(out)["default/owner"].message.endswith(". Pending the preemption of 1 workload(s)")


def test_no_reclaim_when_policy_is_never():
    a = queue("a", {GPU: 4}, cohort="c")
    b = queue("b", {GPU: 4}, cohort="c")
    out = schedule(snap([a, b], [job("borrower", "b", gpus=8, admitted=FLAVOR), job("owner", "a", gpus=4, t=5)]))
    assert preempted(out) == []
    assert pending(out)["default/owner"].reason == "WaitingForQuota"


def test_reclaim_lower_priority_spares_equal_priority():
    a = queue("a", {GPU: 4}, cohort="c", reclaim_within_cohort="LowerPriority")
    b = queue("b", {GPU: 4}, cohort="c")
    out = schedule(snap([a, b], [job("borrower", "b", gpus=8, prio=5, admitted=FLAVOR),
                                 job("owner", "a", gpus=4, prio=5, t=5)]))
    assert preempted(out) == []


def test_reclaim_takes_only_borrowing_workloads_minimal_set():
    a = queue("a", {GPU: 4}, cohort="c", reclaim_within_cohort="Any")
    b = queue("b", {GPU: 8}, cohort="c")
    # b uses 11 of its 8: borrows 3 of a's 4. a needs 2: one 2-GPU workload of b is enough.
    jobs = [job("b-big", "b", gpus=7, admitted=FLAVOR, admitted_at=1),
            job("b-small1", "b", gpus=2, admitted=FLAVOR, admitted_at=2),
            job("b-small2", "b", gpus=2, admitted=FLAVOR, admitted_at=3),
            job("owner", "a", gpus=3, t=10)]
    out = schedule(snap([a, b], jobs))
    # most recently admitted first
    assert preempted(out) == ["default/b-small2"]
