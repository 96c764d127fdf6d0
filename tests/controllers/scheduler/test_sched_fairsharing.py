"""Fair sharing between ClusterQueues of a cohort: dominant resource share by weight."""

from mpijob.api.kueue.scheduler.cycle import Preempt, schedule, weighted_shares
from sched_builders import FLAVOR, GPU, admitted, job, pending, preempted, queue, snap


def teams(wa: float = 1.0, wb: float = 1.0, **kw):
    return [queue("shared", {GPU: 12}, cohort="c"),
            queue("team-a", {GPU: 0}, cohort="c", fair_weight=wa, **kw),
            queue("team-b", {GPU: 0}, cohort="c", fair_weight=wb, **kw)]


def test_weighted_share_is_borrowed_over_lendable_times_1000_over_weight():
    jobs = [job("a", "team-a", gpus=6, admitted=FLAVOR), job("b", "team-b", gpus=3, admitted=FLAVOR)]
    shares = weighted_shares(snap(teams(wa=2.0), jobs))
    assert shares == {"shared": 0, "team-a": 250, "team-b": 250}  # 6/12*1000/2, 3/12*1000/1


def test_weighted_share_rounds_up_and_zero_weight_borrowing_is_maximal():
    jobs = [job("a", "team-a", gpus=1, admitted=FLAVOR), job("b", "team-b", gpus=1, admitted=FLAVOR)]
    shares = weighted_shares(snap(teams(wa=3.0, wb=0.0), jobs))
    assert shares["team-a"] == 28  # ceil(83.33 / 3)
    assert shares["team-b"] == 2**63 - 1


def test_no_share_without_a_cohort_or_borrowing():
    assert weighted_shares(snap([queue("q", {GPU: 8})], [job("j", "q", gpus=8, admitted=FLAVOR)])) == {"q": 0}


def _contended(wa: float, wb: float):
    # 6 of 12 lendable GPUs free; each team has one 6-GPU job pending: only one can go.
    jobs = [job("a-run", "team-a", gpus=4, admitted=FLAVOR), job("b-run", "team-b", gpus=2, admitted=FLAVOR),
            job("a-next", "team-a", gpus=6, t=0), job("b-next", "team-b", gpus=6, t=1)]
    return snap(teams(wa, wb), jobs)


def test_the_queue_with_the_lower_share_after_admission_goes_first():
    # equal weights: team-a would hold 10 (833), team-b 8 (666) → team-b, though team-a's job is older
    assert admitted(schedule(_contended(1.0, 1.0), fair_sharing=True)) == ["default/b-next"]
    # weight 2 for team-a: 10/12*1000/2 = 416 < 666 → team-a
    assert admitted(schedule(_contended(2.0, 1.0))) == ["default/a-next"]


def test_without_fair_sharing_the_older_job_goes_first():
    assert admitted(schedule(_contended(1.0, 1.0), fair_sharing=False)) == ["default/a-next"]


def test_weights_turn_fair_sharing_on_by_default():
    assert admitted(schedule(_contended(1.0, 1.0))) == ["default/a-next"]  # all weights 1: off
    assert admitted(schedule(_contended(1.0, 0.5))) == ["default/a-next"]  # b: 8/12*1000/0.5 = 1333


def test_heads_of_both_queues_are_admitted_while_they_fit():
    # Kueue takes one head per queue per round: with room for all, both teams progress together.
    jobs = [job(f"a{i}", "team-a", gpus=2, t=i) for i in range(6)] + \
           [job(f"b{i}", "team-b", gpus=2, t=100 + i) for i in range(6)]
    got = admitted(schedule(snap(teams(), jobs), fair_sharing=True))
    assert sum(k.startswith("default/a") for k in got) == 3
    assert sum(k.startswith("default/b") for k in got) == 3


def test_fair_sharing_preempts_from_the_queue_over_its_share():
    # team-a holds all 12 lendable GPUs; team-b (same weight) asks for 4 → team-a gives some back.
    running = [job(f"a{i}", "team-a", gpus=2, admitted=FLAVOR, admitted_at=i) for i in range(6)]
    out = schedule(snap(teams(reclaim_within_cohort="Any"), [*running, job("b0", "team-b", gpus=4, t=50)]),
                   fair_sharing=True)
    victims = [d for d in out if isinstance(d, Preempt)]
    assert len(victims) == 2
    assert {v.reason for v in victims} == {"InCohortFairSharing"}
    assert [v.workload for v in victims] == ["default/a5", "default/a4"]  # most recently admitted first
    assert "Fair Sharing within the cohort" in victims[0].message
    assert "default/b0" in pending(out)


def test_fair_sharing_does_not_preempt_below_the_preemptors_share():
    # team-a holds 4 (share 333), team-b holds 6 and asks for 2 more (would be 666): no preemption.
    running = [job("a0", "team-a", gpus=4, admitted=FLAVOR), job("b0", "team-b", gpus=6, admitted=FLAVOR)]
    out = schedule(snap(teams(reclaim_within_cohort="Any"), [*running, job("b1", "team-b", gpus=4, t=50)]),
                   fair_sharing=True)
    assert preempted(out) == []


def test_fair_sharing_reclaims_nominal_quota_regardless_of_shares():
    qs = [queue("team-a", {GPU: 6}, cohort="c", reclaim_within_cohort="Any"),
          queue("team-b", {GPU: 6}, cohort="c", reclaim_within_cohort="Any")]
    running = [job(f"a{i}", "team-a", gpus=2, admitted=FLAVOR, admitted_at=i) for i in range(5)]
    out = schedule(snap(qs, [*running, job("b0", "team-b", gpus=4, t=50)]), fair_sharing=True)
    victims = [d for d in out if isinstance(d, Preempt)]
    assert [(v.workload, v.reason) for v in victims] == [("default/a4", "InCohortReclamation")]
