"""Queue-level gates: stop policies, namespaceSelector, missing or inactive queues."""

from dataclasses import replace

from mpijob.api.kueue.scheduler.cycle import Preempt, schedule
from sched_builders import FLAVOR, GPU, admitted, job, pending, preempted, queue, snap


def test_hold_admits_nothing_new_and_keeps_running_workloads():
    q = queue("q", {GPU: 8}, stop_policy="Hold")
    out = schedule(snap([q], [job("running", gpus=2, admitted=FLAVOR), job("new", gpus=2, t=1)]))
    assert admitted(out) == [] and preempted(out) == []
    p = pending(out)["default/new"]
    assert p.message == "ClusterQueue q is stopped"
    assert p.human == "ClusterQueue q is stopped (stopPolicy Hold)"
    assert p.reason == "Suspended"


def test_hold_and_drain_evicts_admitted_workloads():
    q = queue("q", {GPU: 8}, stop_policy="HoldAndDrain")
    out = schedule(snap([q], [job("running", gpus=2, admitted=FLAVOR), job("new", gpus=2, t=1)]))
    (p,) = [d for d in out if isinstance(d, Preempt)]
    assert (p.workload, p.reason, p.message, p.by) == ("default/running", "ClusterQueueStopped",
                                                       "The ClusterQueue is stopped", "")
    assert admitted(out) == []


def test_namespace_selector_match_labels_and_expressions():
    sel = {"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}
    q = queue("q", {GPU: 8}, namespace_selector=sel)
    labels = {"team-a": {"team": "a"}, "team-b": {"team": "b"}, "team-ax": {"team": "a", "tier": "x"}}
    jobs = [job("j", ns=ns, t=i) for i, ns in enumerate(labels)]
    out = schedule(snap([q], jobs, ns_labels=labels))
    assert admitted(out) == ["team-a/j"]
    p = pending(out)
    assert p["team-b/j"].message == "workload namespace doesn't match ClusterQueue selector"
    assert p["team-b/j"].reason == "Misconfigured"
    assert "does not admit workloads from namespace team-ax" in p["team-ax/j"].human


def test_nil_namespace_selector_selects_nothing_and_empty_selects_all():
    none_q = queue("none", {GPU: 8}, namespace_selector=None)
    all_q = queue("all", {GPU: 8}, namespace_selector={})
    out = schedule(snap([none_q, all_q], [job("x", "none"), job("y", "all", t=1)]))
    assert admitted(out) == ["default/y"]
    assert "default/x" in pending(out)


def test_exists_and_in_operators():
    sel = {"matchExpressions": [{"key": "gpu", "operator": "Exists"},
                                {"key": "env", "operator": "In", "values": ["prod", "dev"]}]}
    q = queue("q", {GPU: 8}, namespace_selector=sel)
    labels = {"ok": {"gpu": "", "env": "dev"}, "no-gpu": {"env": "dev"}, "staging": {"gpu": "1", "env": "stg"}}
    out = schedule(snap([q], [job("j", ns=ns, t=i) for i, ns in enumerate(labels)], ns_labels=labels))
    assert admitted(out) == ["ok/j"]


def test_strict_fifo_namespace_mismatch_steps_aside():
    q = queue("q", {GPU: 8}, strategy="StrictFIFO", namespace_selector={"matchLabels": {"ok": "1"}})
    out = schedule(snap([q], [job("bad", ns="other", t=0), job("good", ns="mine", t=1)],
                        ns_labels={"mine": {"ok": "1"}}))
    assert admitted(out) == ["mine/good"]


def test_missing_local_queue():
    out = schedule(snap([queue("q")], [job("j", q="")]))
    p = pending(out)["default/j"]
    assert p.message == "LocalQueue missing-lq doesn't exist"
    assert p.human.startswith("LocalQueue missing-lq not found in namespace default")


def test_missing_cluster_queue():
    out = schedule(snap([queue("q")], [job("j", q="gone")]))
    assert pending(out)["default/j"].message == "ClusterQueue gone doesn't exist"


def test_missing_flavor_makes_the_queue_inactive():
    out = schedule(snap([queue("q")], [job("j")], flavors=set()))
    p = pending(out)["default/j"]
    assert p.message == "ClusterQueue q is inactive"
    assert "ResourceFlavor default-flavor not found" in p.human


def _stopped(policy: str, queues, workloads, lq: str = "lq-q"):
    """A snapshot whose LocalQueue `lq` (namespace default) has stopPolicy `policy`."""
    return replace(snap(queues, workloads), local_queue_stops={("default", lq): policy})


def test_stopped_local_queue_holds_its_workloads_and_not_the_queues_others():
    """Kueue's LocalQueue Hold: its workloads are Inadmissible and step aside, even in a StrictFIFO queue;
    what it has admitted keeps running; other LocalQueues of the ClusterQueue admit as usual."""
    q = queue("q", {GPU: 8}, strategy="StrictFIFO")
    other = replace(job("other", t=1), local_queue="lq-other")
    out = schedule(_stopped("Hold", [q], [job("running", admitted=FLAVOR), job("held", t=0), other]))
    assert admitted(out) == ["default/other"] and preempted(out) == []
    p = pending(out)["default/held"]
    assert (p.reason, p.message) == ("Inadmissible", "LocalQueue lq-q is stopped")
    assert p.human.startswith("LocalQueue lq-q is stopped (stopPolicy Hold); set its spec.stopPolicy to None")
    assert admitted(schedule(snap([q], [job("held")]))) == ["default/held"]  # not stopped: admitted


def test_stopped_local_queue_with_hold_and_drain_evicts_what_it_admitted_once():
    q = queue("q", {GPU: 4}, within_cluster_queue="LowerPriority")
    mine = job("mine", gpus=4, admitted=FLAVOR)
    out = schedule(_stopped("HoldAndDrain", [q], [mine, replace(job("urgent", gpus=4, prio=10, t=1),
                                                                local_queue="lq-other")]))
    drains = [d for d in out if isinstance(d, Preempt)]
    assert [(d.workload, d.reason, d.message, d.by) for d in drains] == [
        ("default/mine", "LocalQueueStopped", "The LocalQueue is stopped", "")]  # not preempted a second time
    assert "default/urgent" in pending(out)  # it fits once the drained workload is gone
    both = replace(q, stop_policy="HoldAndDrain")
    assert [d.reason for d in schedule(_stopped("HoldAndDrain", [both], [mine])) if isinstance(d, Preempt)] == [
        "ClusterQueueStopped"]
    assert preempted(schedule(_stopped("Hold", [q], [mine]))) == []
