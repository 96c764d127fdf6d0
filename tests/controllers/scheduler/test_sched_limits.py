"""never_fits, positions, queue_usage — and a cycle over 1,000 pending workloads."""

import time

from mpijob.api.kueue.scheduler.cycle import (
    never_fits,
    positions,
    queue_usage,
    schedule,
)
from sched_builders import FLAVOR, GPU, admitted, job, pending, queue, snap


def test_never_fits_over_nominal_without_cohort():
    s = snap([queue("team-a", {GPU: 24})], [])
    assert never_fits(s, job("j", "team-a", gpus=8, nodes=4)) == (
        "nvidia.com/gpu requested 32, but ClusterQueue team-a can never provide more than 24 (nominal quota "
        "plus what it may borrow); request at most 24 nvidia.com/gpu or raise the ClusterQueue's quota")
    assert never_fits(s, job("j", "team-a", gpus=8, nodes=3)) is None


def test_never_fits_ignores_current_usage():
    s = snap([queue("q", {GPU: 8})], [job("running", gpus=8, admitted=FLAVOR)])
    assert never_fits(s, job("j", gpus=8)) is None


def test_never_fits_counts_what_the_cohort_can_lend():
    a = queue("a", {GPU: 4}, cohort="c", borrowing={GPU: 2})
    b = queue("b", {GPU: 8}, cohort="c")
    s = snap([a, b], [])
    assert never_fits(s, job("j", "a", gpus=6)) is None
    assert "can never provide more than 6" in never_fits(s, job("j", "a", gpus=7))


def test_never_fits_uncovered_resource():
    s = snap([queue("q", {GPU: 8})], [])
    msg = never_fits(s, job("j", gpus=1, extra={"example.com/fpga": 1}))
    assert msg == ("ClusterQueue q has no quota for example.com/fpga (it covers nvidia.com/gpu); remove the "
                   "example.com/fpga request or add example.com/fpga to the ClusterQueue's resourceGroups")


def test_never_fits_unknown_queue_is_not_a_refusal():
    assert never_fits(snap([], []), job("j", "nowhere", gpus=100)) is None


def test_positions_in_cluster_queue_and_local_queue():
    a = job("a", prio=0, t=0)
    b = job("b", prio=5, t=1)
    c = job("c", prio=0, t=2, ns="other")
    d = job("d", prio=0, t=3)
    running = job("r", admitted=FLAVOR)
    assert positions(snap([queue("q")], [a, b, c, d, running])) == {
        "default/b": (0, 0), "default/a": (1, 1), "other/c": (2, 0), "default/d": (3, 2)}


def test_queue_usage_total_and_borrowed():
    a = queue("a", {"f1": {GPU: 4, "cpu": 8000}, "f2": {GPU: 2}}, cohort="c")
    b = queue("b", {"f1": {GPU: 4, "cpu": 8000}}, cohort="c")
    s = snap([a, b], [job("x", "a", gpus=6, cpu=1000, admitted="f1"), job("y", "b", gpus=1, admitted="f1")])
    use = queue_usage(s)
    assert use["a"] == {("f1", GPU): (6, 2), ("f1", "cpu"): (1000, 0), ("f2", GPU): (0, 0)}
    assert use["b"] == {("f1", GPU): (1, 0), ("f1", "cpu"): (0, 0)}


def test_a_thousand_pending_workloads(capsys):
    q = queue("q", {GPU: 64, "cpu": 256_000})
    jobs = [job(f"j{i:04d}", gpus=1 + i % 4, nodes=1 + i % 2, cpu=500, prio=i % 3, t=i) for i in range(1000)]
    s = snap([q], jobs)
    start = time.perf_counter()
    out = schedule(s)
    elapsed = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nscheduler: 1,000 pending workloads, one cycle: {elapsed * 1000:.1f} ms")
    got = admitted(out)
    assert len(out) == 1000 and len({d.workload for d in out}) == 1000
    used = sum(w.pod_sets[1].count * w.pod_sets[1].requests[GPU] for w in jobs if w.key in set(got))
    assert used <= 64
    # highest priority first: every admitted workload outranks or ties the first pending one in order
    order = sorted(jobs, key=lambda w: (-w.priority, w.created))
    assert got == [w.key for w in order if w.key in set(got)]
    assert len(pending(out)) == 1000 - len(got)
