"""Why a pending workload waits, in one sentence with numbers, and when it should start (pure: a
snapshot, the cycle's decisions and what is known of run times). Each blocker, then the arithmetic."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from mpijob.api.kueue.scheduler.cycle import schedule
from mpijob.api.kueue.scheduler.waiting import MAX_REPLAYED, Timing, explain
from mpijob.api.kueue.snapshot import PodSet, Snapshot, StopPolicy
from sched_builders import FLAVOR, GPU, job, pending, queue, snap

NOW = 1_000_000.0
UNKNOWN = Timing({}, {})


def why(s: Snapshot, timing: Timing = UNKNOWN) -> dict[str, tuple[str, float | None]]:
    """key → (the sentence's facts, seconds from now to the estimated start, or None)."""
    out = explain(s, pending(schedule(s)), timing, NOW)
    return {k.removeprefix("default/"): (w.reason, w.estimated_start.timestamp() - NOW if w.estimated_start else None)
            for k, w in out.items()}


def test_quota_the_whole_jobs_need_and_what_is_free() -> None:
    s = snap([queue("gpu", {GPU: 16})],
             [job("holder", "gpu", gpus=4, nodes=3, admitted=FLAVOR), job("big", "gpu", gpus=2, nodes=4, t=5)])
    assert why(s, Timing({"default/holder": NOW + 720}, {}))["big"] == (
        "needs 8 nvidia.com/gpu, 4 of 16 free in ClusterQueue gpu; first in line", 720)
    # a launcher that is a node asks like a node: 2 × 1 GPU need 2, though its own pod set needs 1
    two = replace(job("two", "gpu", t=6), pod_sets=(PodSet("launcher", 1, {GPU: 1}), PodSet("node", 1, {GPU: 1})))
    full = snap([queue("gpu", {GPU: 2})], [job("holder", "gpu", gpus=2, admitted=FLAVOR), two])
    assert why(full)["two"] == ("needs 2 nvidia.com/gpu, 0 of 2 free in ClusterQueue gpu; first in line", None)


def test_position_and_the_higher_priority_jobs_ahead() -> None:
    s = snap([queue("gpu", {GPU: 4})],
             [job("holder", "gpu", gpus=4, admitted=FLAVOR), job("old", "gpu", gpus=2, t=1),
              job("vip", "gpu", gpus=2, t=9, prio=10), job("me", "gpu", gpus=2, t=5)])
    said = why(s)
    assert said["vip"][0].endswith("; first in line")
    assert said["old"][0].endswith("; 1 job ahead (1 of higher priority)")
    assert said["me"][0].endswith("; 2 jobs ahead (1 of higher priority)")


def test_the_estimate_replays_releases_and_the_jobs_ahead() -> None:
    """A (4 GPUs) ends in 100 s, B (4) in 500 s; `ahead` (4, runs 200 s) starts at 100 and frees its GPUs
    at 300, so `me` (4) starts at 300, before B ends; `last` (8) waits for everything: 500."""
    s = snap([queue("gpu", {GPU: 8})],
             [job("a", "gpu", gpus=4, admitted=FLAVOR), job("b", "gpu", gpus=4, admitted=FLAVOR),
              job("ahead", "gpu", gpus=4, t=1), job("me", "gpu", gpus=4, t=2), job("last", "gpu", gpus=8, t=3)])
    timing = Timing({"default/a": NOW + 100, "default/b": NOW + 500}, {"default/ahead": 200, "default/me": 900})
    said = why(s, timing)
    assert [said[k][1] for k in ("ahead", "me", "last")] == [100, 300, 1200]  # last: after me's 900 s run too
    # a run whose end is unknown holds its quota for good: whoever needs it gets no estimate
    said = why(s, Timing({"default/a": NOW + 100}, {"default/ahead": 200}))
    assert [said[k][1] for k in ("ahead", "me", "last")] == [100, 300, None]
    # an end already past counts as now
    assert why(s, Timing({"default/a": NOW - 50}, {}))["ahead"][1] == 0


def test_best_effort_lets_a_smaller_job_by_but_strict_fifo_does_not() -> None:
    jobs = [job("a", "gpu", gpus=2, admitted=FLAVOR), job("b", "gpu", gpus=2, admitted=FLAVOR),
            job("big", "gpu", gpus=4, t=1), job("small", "gpu", gpus=2, t=2)]
    timing = Timing({"default/a": NOW + 60, "default/b": NOW + 600}, {"default/big": 100})
    assert why(snap([queue("gpu", {GPU: 4})], jobs), timing)["small"][1] == 60
    strict = why(snap([queue("gpu", {GPU: 4}, strategy="StrictFIFO")], jobs), timing)
    assert strict["small"] == (("needs 2 nvidia.com/gpu, 0 of 4 free in ClusterQueue gpu; Waiting behind default/big "
                               "in StrictFIFO ClusterQueue gpu (position 1); 1 job ahead"), 700)  # after big's 100 s


def test_more_than_the_queue_could_ever_give() -> None:
    s = snap([queue("team-a", {GPU: 24})], [job("huge", "team-a", gpus=8, nodes=4)])
    assert why(s)["huge"] == (
        ("needs 32 nvidia.com/gpu, 24 of 24 free in ClusterQueue team-a; nvidia.com/gpu requested 32, but ClusterQueue "
        "team-a can never provide more than 24 (nominal quota plus what it may borrow); request at most 24 "
        "nvidia.com/gpu or raise the ClusterQueue's quota; first in line"), None)


def test_cohort_other_queues_hold_its_quota_or_it_may_borrow() -> None:
    a, b = queue("a", {GPU: 4}, cohort="research"), queue("b", {GPU: 4}, cohort="research")
    lent = snap([a, b], [job("greedy", "b", gpus=7, admitted=FLAVOR), job("mine", "a", gpus=4, t=5)])
    assert why(lent, Timing({"default/greedy": NOW + 30}, {}))["mine"] == (
        ("needs 4 nvidia.com/gpu, 1 of 4 free in ClusterQueue a (3 of its quota in use by other queues of cohort "
        "research); first in line"), 30)
    small = queue("a", {GPU: 2}, cohort="research")
    borrow = snap([small, b], [job("own", "a", gpus=2, admitted=FLAVOR), job("more", "a", gpus=5, t=5)])
    assert why(borrow)["more"][0] == ("needs 5 nvidia.com/gpu, 4 free to ClusterQueue a (0 of its own 2 and 4 to "
                                      "borrow from cohort research); first in line")


def test_stopped_and_inactive_queues_and_a_missing_local_queue_have_no_estimate() -> None:
    timing = Timing({"default/holder": NOW + 10}, {})
    for stopped, flavor in ((queue("gpu", {GPU: 4}, stop_policy=StopPolicy.HOLD), FLAVOR),
                            (queue("gpu", {"gone": {GPU: 4}}), "gone")):
        s = snap([stopped], [job("holder", "gpu", gpus=4, admitted=flavor), job("me", "gpu", gpus=2, t=5)],
                 flavors={FLAVOR})
        reason, start = why(s, timing)["me"]
        assert start is None
        assert reason.startswith("needs 2 nvidia.com/gpu, 0 of 4 free in ClusterQueue gpu; ClusterQueue gpu is "), reason
        assert ("stopped (stopPolicy Hold)" in reason) != ("inactive: ResourceFlavor gone not found" in reason), reason
    lost = replace(job("lost", "", gpus=2), cluster_queue="", local_queue="nope")
    assert why(snap([queue("gpu", {GPU: 4})], [lost]))["lost"] == (
        ("needs 2 nvidia.com/gpu; LocalQueue nope not found in namespace default; create it or set the "
        "kueue.x-k8s.io/queue-name label to an existing LocalQueue"), None)


def test_a_preemption_under_way_says_so_and_starts_once_the_victims_are_gone() -> None:
    s = snap([queue("gpu", {GPU: 4}, within_cluster_queue="LowerPriority")],
             [job("victim", "gpu", gpus=4, admitted=FLAVOR), job("vip", "gpu", gpus=4, prio=5, t=5)])
    decisions = pending(schedule(s))
    after = snap([queue("gpu", {GPU: 4})], [job("vip", "gpu", gpus=4, prio=5, t=5)])  # the victim's quota freed
    (w,) = explain(after, decisions, UNKNOWN, NOW).values()
    assert w.reason == ("needs 4 nvidia.com/gpu, 4 of 4 free in ClusterQueue gpu; Preempting 1 workload(s) to make "
                        "room in ClusterQueue gpu; starts once they have stopped; first in line")
    assert w.estimated_start == datetime.fromtimestamp(NOW, UTC)
    assert w.sentence(datetime.fromtimestamp(NOW, UTC)).endswith("; estimated start in <1 min")


def test_only_so_many_in_a_queue_get_an_estimate() -> None:
    waiting = [job(f"w{i:03}", "gpu", gpus=1, t=i + 1) for i in range(MAX_REPLAYED + 1)]
    s = snap([queue("gpu", {GPU: 1})], [job("holder", "gpu", gpus=1, admitted=FLAVOR), *waiting])
    durations = {w.key: 1.0 for w in waiting}
    said = why(s, Timing({"default/holder": NOW + 1}, durations))
    assert said["w000"][1] == 1 and said[f"w{MAX_REPLAYED - 1:03}"][1] == MAX_REPLAYED
    assert said[f"w{MAX_REPLAYED:03}"] == (("needs 1 nvidia.com/gpu, 0 of 1 free in ClusterQueue gpu; "
                                           f"{MAX_REPLAYED} jobs ahead"), None)
