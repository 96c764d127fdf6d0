"""An inactive ClusterQueue — stopped, or naming a ResourceFlavor, AdmissionCheck or Topology that does not
exist — admits nothing, with Kueue's reasons and messages (pkg/cache/scheduler/clusterqueue.go,
`inactiveReason`; pkg/scheduler/scheduler.go for the workload's message)."""

from dataclasses import replace

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.scheduler.admissibility import inactive, local_queue_active
from mpijob.api.kueue.scheduler.cycle import schedule
from sched_builders import FLAVOR, GPU, admitted, job, pending, preempted, queue, snap


def two_flavors(name: str, flavors: tuple[str, ...], **kw):
    """A queue over GPUs in `flavors`, in that order."""
    q = queue(name, {f: {GPU: 4} for f in flavors}, **kw)
    assert [f.name for f in q.groups[0].flavors] == list(flavors)
    return q


def test_a_missing_admission_check_holds_every_workload_with_kueues_words():
    q = queue("q", {GPU: 8}, admission_checks=("prov",))
    out = schedule(snap([q], [job("a", gpus=1), job("b", gpus=1, t=1)]))
    assert admitted(out) == []
    p = pending(out)["default/a"]
    assert (p.reason, p.message) == ("Suspended", "ClusterQueue q is inactive")
    assert p.human.startswith("ClusterQueue q is inactive: AdmissionCheck prov not found")
    assert "remove it from the ClusterQueue's admission checks" in p.human
    assert pending(out)["default/b"].message == "ClusterQueue q is inactive"
    state = inactive(snap([q], []), q)
    assert state is not None
    assert (state.reason, state.message) == (
        "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): prov.")


def test_it_is_the_missing_object_not_the_reference_that_makes_the_queue_inactive():
    q = queue("q", {GPU: 8}, admission_checks=("prov",))
    s = replace(snap([q], [job("a", gpus=1)]), admission_checks=frozenset({"prov"}))
    assert inactive(s, q) is None
    assert admitted(schedule(s)) == ["default/a"]


def test_missing_admission_checks_are_listed_sorted():
    q = queue("q", admission_checks=("zeta", "alpha"))
    state = inactive(snap([q], []), q)
    assert state is not None
    assert state.message == "Can't admit new workloads: references missing AdmissionCheck(s): alpha,zeta."
    assert "AdmissionCheck alpha, zeta not found" in state.human


def test_a_flavor_naming_a_missing_topology_makes_the_whole_queue_inactive():
    q = queue("q", {GPU: 8})
    s = replace(snap([q], [job("plain", gpus=1)]), flavor_topologies={FLAVOR: "default"})
    state = inactive(s, q)
    assert state is not None
    assert (state.reason, state.message) == (
        "TopologyNotFound",
        "Can't admit new workloads: there is no Topology \"default\" for TAS flavor \"default-flavor\".")
    out = schedule(s)
    assert admitted(out) == []  # not only TAS workloads: a plain one waits too, as in Kueue
    p = pending(out)["default/plain"]
    assert (p.reason, p.message) == ("Suspended", "ClusterQueue q is inactive")
    assert "ResourceFlavor default-flavor names Topology default, which does not exist" in p.human
    assert admitted(schedule(replace(s, topologies=frozenset({"default"})))) == ["default/plain"]


def test_topology_of_a_flavor_the_queue_does_not_list_does_not_matter():
    q = queue("q", {GPU: 8})
    s = replace(snap([q], [job("a", gpus=1)], flavors={FLAVOR, "tas"}), flavor_topologies={"tas": "default"})
    assert inactive(s, q) is None
    assert admitted(schedule(s)) == ["default/a"]


def test_missing_flavor_reason_lists_flavors_in_spec_order():
    q = two_flavors("q", ("zz", "aa"))
    state = inactive(snap([q], [], flavors=set()), q)
    assert state is not None
    assert (state.reason, state.message) == (
        "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): zz,aa.")
    assert "ResourceFlavor zz, aa not found; create it or remove it from the ClusterQueue" in state.human


def test_every_cause_in_kueues_order_and_the_reason_is_the_first():
    q = two_flavors("q", ("tas-b", "gone", "tas-a"), stop_policy="Hold", admission_checks=("prov",))
    s = replace(snap([q], [job("a", gpus=1)], flavors={"tas-a", "tas-b"}),
                flavor_topologies={"tas-b": "rack", "tas-a": "block"})
    state = inactive(s, q)
    assert state is not None and state.stopped
    assert state.reason == "Stopped"
    assert state.message == (
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): gone, references missing "
        "AdmissionCheck(s): prov, there is no Topology \"block\" for TAS flavor \"tas-a\", there is no Topology "
        "\"rack\" for TAS flavor \"tas-b\".")
    p = pending(schedule(s))["default/a"]
    assert p.message == "ClusterQueue q is stopped"  # a stopped queue says so, whatever else is wrong
    assert p.human.startswith("ClusterQueue q is stopped (stopPolicy Hold): ResourceFlavor gone not found")


def test_a_stopped_queue_alone_keeps_its_message_and_gets_kueues_condition():
    q = queue("q", stop_policy="Hold")
    state = inactive(snap([q], []), q)
    assert state is not None
    assert (state.reason, state.message, state.human) == (
        "Stopped", "Can't admit new workloads: is stopped.", "ClusterQueue q is stopped (stopPolicy Hold)")


def test_an_active_queue_has_no_inactive_reason():
    q = queue("q")
    assert inactive(snap([q], []), q) is None


def test_local_queue_mirrors_its_cluster_queue():
    ok, held = queue("ok"), queue("held", admission_checks=("prov",))
    s = snap([ok, held], [])
    assert local_queue_active(s, "ok") == (True, "Ready", "Can submit new workloads to localQueue")
    assert local_queue_active(s, "held") == (False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    assert local_queue_active(s, "gone") == (False, "ClusterQueueDoesNotExist",
                                             "Can't submit new workloads to clusterQueue")


def test_workloads_of_an_inactive_queue_are_not_preemption_candidates():
    """Kueue leaves an inactive queue out of its scheduling snapshot: nobody reclaims from it."""
    lender = queue("lender", {GPU: 4}, cohort="c", reclaim_within_cohort="Any")
    borrower = queue("borrower", {GPU: 0}, cohort="c")
    running = job("running", "borrower", gpus=4, admitted=FLAVOR)
    wants = job("wants", "lender", gpus=4, t=5)
    active_out = schedule(snap([lender, borrower], [running, wants]))
    assert preempted(active_out) == ["default/running"]  # the control: an active borrower is reclaimed from
    held = replace(borrower, admission_checks=("prov",))
    out = schedule(snap([lender, held], [running, wants]))
    assert preempted(out) == [] and admitted(out) == []
    assert pending(out)["default/wants"].reason == "WaitingForQuota"


def test_an_inactive_queue_still_lends_its_quota_to_the_cohort():
    """Its quota and usage stay in Kueue's cohort tree (cloned from the cache, not the snapshot)."""
    lender = queue("lender", {GPU: 4}, cohort="c", admission_checks=("prov",))
    borrower = queue("borrower", {GPU: 4}, cohort="c")
    out = schedule(snap([lender, borrower], [job("big", "borrower", gpus=8)]))
    assert admitted(out) == ["default/big"]


def test_hold_and_drain_still_evicts_though_the_queue_is_out_of_preemption():
    q = queue("q", {GPU: 8}, stop_policy="HoldAndDrain", admission_checks=("prov",))
    out = schedule(snap([q], [job("running", gpus=2, admitted=FLAVOR)]))
    assert preempted(out) == ["default/running"]


def test_condition_messages_are_truncated_as_kueue_truncates_them():
    many = tuple(f"check-{i:03d}-" + "x" * 300 for i in range(120))  # ~37 KiB of names
    q = queue("q", admission_checks=many)
    state = inactive(snap([q], []), q)
    assert state is not None
    assert len(state.message) == msg.MAX_CONDITION_MESSAGE and state.message.endswith(" ...")
    assert msg.truncate_condition("short") == "short"

