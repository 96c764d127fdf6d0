"""Gang admission, queue order and queueing strategies."""

from mpijob.api.kueue.scheduler.cycle import Admit, schedule
from sched_builders import GPU, admitted, job, pending, queue, snap


def test_all_or_nothing_admits_no_part_of_a_job_that_does_not_fit():
    # 6 GPUs free; a 4-node × 2-GPU job needs 8: neither its launcher nor any node is admitted.
    s = snap([queue("q", {GPU: 8})], [job("running", gpus=2, admitted="default-flavor"), job("gang", gpus=2, nodes=4, t=1)])
    out = schedule(s)
    assert admitted(out) == []
    assert "default/gang" in pending(out)


def test_admission_carries_flavors_and_whole_job_usage():
    s = snap([queue("q", {GPU: 8, "cpu": 4000})], [job("j", gpus=2, nodes=3, cpu=500)])
    (a,) = [d for d in schedule(s) if isinstance(d, Admit)]
    assert a.cluster_queue == "q"
    assert a.assignment.flavors == {"launcher": {"cpu": "default-flavor"}, "node": {GPU: "default-flavor"}}
    assert a.assignment.usage == {("default-flavor", GPU): 6, ("default-flavor", "cpu"): 500}
    assert a.assignment.borrows is False


def test_admissions_in_one_cycle_consume_quota_for_later_ones():
    s = snap([queue("q", {GPU: 8})], [job(f"j{i}", gpus=3, t=i) for i in range(4)])
    out = schedule(s)
    assert admitted(out) == ["default/j0", "default/j1"]
    assert set(pending(out)) == {"default/j2", "default/j3"}


def test_priority_then_creation_order():
    jobs = [job("old-low", gpus=4, prio=0, t=0), job("new-high", gpus=4, prio=100, t=5),
            job("old-high", gpus=4, prio=100, t=1)]
    out = schedule(snap([queue("q", {GPU: 8})], jobs))
    assert admitted(out) == ["default/old-high", "default/new-high"]
    assert list(pending(out)) == ["default/old-low"]


def test_best_effort_fifo_lets_smaller_jobs_past_a_head_that_does_not_fit():
    jobs = [job("running", gpus=6, admitted="default-flavor"), job("big", gpus=4, t=1), job("small", gpus=2, t=2)]
    out = schedule(snap([queue("q", {GPU: 8})], jobs))
    assert admitted(out) == ["default/small"]
    assert pending(out)["default/big"].message


def test_strict_fifo_head_blocks_its_queue():
    q = queue("q", {GPU: 8}, strategy="StrictFIFO")
    jobs = [job("running", gpus=6, admitted="default-flavor"), job("big", gpus=4, t=1), job("small", gpus=2, t=2)]
    out = schedule(snap([q], jobs))
    assert admitted(out) == []
    p = pending(out)
    assert "insufficient unused quota" in p["default/big"].message
    assert p["default/small"].message == ""  # Kueue did not look at it this cycle
    assert "Waiting behind default/big in StrictFIFO ClusterQueue q" in p["default/small"].human


def test_strict_fifo_admits_in_order_while_things_fit():
    q = queue("q", {GPU: 8}, strategy="StrictFIFO")
    out = schedule(snap([q], [job("a", gpus=4, t=0), job("b", gpus=4, t=1), job("c", gpus=1, t=2)]))
    assert admitted(out) == ["default/a", "default/b"]
    assert pending(out)["default/c"].message


def test_second_flavor_used_when_first_is_full():
    q = queue("q", {"a100": {GPU: 4}, "h100": {GPU: 4}})
    out = schedule(snap([q], [job("one", gpus=3), job("two", gpus=3, t=1)]))
    adm = [d for d in out if isinstance(d, Admit)]
    assert [a.assignment.flavors["node"][GPU] for a in adm] == ["a100", "h100"]


def test_a_resource_no_group_covers_never_fits():
    out = schedule(snap([queue("q", {GPU: 8})], [job("j", gpus=1, extra={"example.com/fpga": 1})]))
    p = pending(out)["default/j"]
    assert p.message == "couldn't assign flavors to pod set node: resource example.com/fpga unavailable in ClusterQueue"
    assert p.reason == "NoMatchingFlavor"
    assert p.never_fits


def test_zero_requests_are_admitted_without_quota():
    out = schedule(snap([queue("q", {GPU: 0})], [job("cpu-only", gpus=0)]))
    assert admitted(out) == ["default/cpu-only"]


def test_admitted_workloads_get_no_decision():
    out = schedule(snap([queue("q", {GPU: 8})], [job("running", gpus=2, admitted="default-flavor")]))
    assert out == []
