"""Kueue's flavor assigner: for each pod set, the first flavor of each resource group where every
resource of the group fits (borrowing if needed), else the best flavor where preemption could help.

Fungibility is Kueue's default (stop at the first flavor that fits, even borrowing; on preemption try
the next flavor).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import cast

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.ledger import FR, Ledger, Usage
from mpijob.api.kueue.snapshot import (
    Assignment,
    ClusterQueue,
    PodSetAssignment,
    PreemptionPolicy,
    ResourceGroup,
    Workload,
)
from mpijob.api.names import REASON_EXCEEDS_MAX_QUOTA, REASON_NO_MATCHING_FLAVOR, REASON_WAITING_FOR_QUOTA


class Mode(IntEnum):
    """How a flavor (or a whole assignment) fits, worst to best: Kueue's `FlavorAssignmentMode`, with
    the preemption oracle's answer folded in. Ordered, so `min` is the worst of several."""

    NO_FIT = 0  # does not fit, and preempting would not help (or is not allowed)
    NO_CANDIDATES = 1  # would fit without others' usage, but the policies let nobody be preempted
    PREEMPT = 2  # fits once workloads of the same ClusterQueue are preempted
    RECLAIM = 3  # fits once only other ClusterQueues' borrowed quota is reclaimed
    FIT = 4  # fits in what is unused now (possibly borrowing)


NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = Mode

# Kueue's QuotaReserved=False reasons for a workload that does not fit, least severe first.
_SEVERITY = {"": 0, REASON_WAITING_FOR_QUOTA: 1, REASON_EXCEEDS_MAX_QUOTA: 2, REASON_NO_MATCHING_FLAVOR: 3}

# (fr, amount) → (NO_CANDIDATES | PREEMPT | RECLAIM, borrow height after preemption)
Oracle = Callable[[FR, int], tuple[Mode, int]]


@dataclass
class Shortfall:
    """The first resource that did not fit, for the human message (which names the workload's total of it)."""

    resource: str
    available: int
    uncovered: bool = False  # no resource group of the ClusterQueue covers the resource


@dataclass
class FlavorResult:
    mode: Mode
    flavors: dict[str, dict[str, str]]  # pod set → resource → flavor
    usage: Usage  # whole workload, zero amounts dropped
    borrows: bool
    message: str  # Kueue's "couldn't assign flavors to pod set …" ("" when everything fits)
    need_preemption: set[FR] = field(default_factory=set)
    shortfall: Shortfall | None = None
    reason: str = ""  # when mode is NO_FIT: WaitingForQuota | ExceedsMaxQuota | NoMatchingFlavor

    def assignment(self, wl: Workload) -> Assignment:
        """The admission of `wl` (whose pod sets were assigned), with each pod set's usage."""
        pod_sets = tuple(PodSetAssignment(ps.name, ps.count, self.flavors.get(ps.name, {}),
                                          {res: q * ps.count for res, q in ps.requests.items()})
                         for ps in wl.pod_sets if ps.name in self.flavors)
        return Assignment(self.flavors, dict(self.usage), self.borrows, pod_sets)


def group_for(cq: ClusterQueue, resource: str) -> ResourceGroup | None:
    for group in cq.groups:
        if resource in group.covered:
            return group
    return None


def _preferred(a: tuple[Mode, int], b: tuple[Mode, int]) -> bool:
    """Kueue's isPreferred with BorrowingOverPreemption (the default): mode first, then less borrowing."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


# fitsResourceQuota's answer: mode, borrow height, and when it does not fit now the reason and the
# shortfall (resource, available) for the human message
_Fit = tuple[Mode, int, str, tuple[str, int] | None]


class Assigner:
    def __init__(self, ledger: Ledger, cq: ClusterQueue, flavors: frozenset[str], oracle: Oracle | None,
                 fair_sharing: bool, answers: dict[tuple, _Fit] | None = None) -> None:
        """`answers` remembers fitsResourceQuota's answers across assigners of `cq` that see the same
        ledger and whose oracles answer alike (a cycle's workloads of one priority between two decisions)."""
        self.ledger, self.cq, self.flavors, self.oracle, self.answers = ledger, cq, flavors, oracle, answers
        self.can_preempt_while_borrowing = cq.borrow_within_cohort != PreemptionPolicy.NEVER or (
            fair_sharing and cq.reclaim_within_cohort != PreemptionPolicy.NEVER)
        self.shortfall: Shortfall | None = None
        self.group_reason = ""

    def _note(self, res: str, available: int, uncovered: bool = False) -> None:
        if self.shortfall is None:
            self.shortfall = Shortfall(res, available, uncovered)

    def _flavor_reason(self, reason: str) -> None:
        """A group's reason is its least severe flavor's (another flavor might do)."""
        if not self.group_reason or _SEVERITY[reason] < _SEVERITY[self.group_reason]:
            self.group_reason = reason

    def fits_quota(self, fr: FR, assumed: int, request: int, reasons: list[str]) -> tuple[Mode, int]:
        """Kueue's fitsResourceQuota: (mode, borrow height); the reason it does not fit, if any, goes
        to `reasons`. Answers are remembered in `answers` when the caller gives one (see __init__)."""
        key = (fr, assumed, request)
        answer = self.answers.get(key) if self.answers is not None else None
        if answer is None:
            answer = self._fits_quota(fr, assumed, request)
            if self.answers is not None:
                self.answers[key] = answer
        mode, borrow, reason, shortfall = answer
        if reason:
            reasons.append(reason)
            self._note(*cast("tuple[str, int]", shortfall))  # set whenever `reason` is
        return mode, borrow

    def _fits_quota(self, fr: FR, assumed: int, request: int) -> _Fit:
        cq, res = self.cq.name, fr[1]
        available = self.ledger.available(cq, fr)
        maximum = self.ledger.potential(cq, fr)
        val = assumed + request
        if val > maximum:
            return NO_FIT, 0, msg.over_capacity(res, fr[0], assumed, request, maximum), (res, maximum)
        borrow, may_reclaim = self.ledger.borrow_height(cq, fr, val)
        if val <= available:
            return FIT, borrow, "", None
        reason, shortfall = msg.insufficient_unused(res, fr[0], val - available), (res, available)
        nominal = self.ledger.nominal[cq].get(fr, 0)
        if self.oracle is not None and (nominal >= val or may_reclaim or self.can_preempt_while_borrowing):
            return *self.oracle(fr, val), reason, shortfall
        return NO_FIT, borrow, reason, shortfall

    def find_flavor(self, group: ResourceGroup, requests: dict[str, int], assumed: Usage
                    ) -> tuple[dict[str, tuple[str, Mode, int]] | None, list[str]]:
        """Kueue's findFlavorForPodSets: resource → (flavor, mode, borrow) for the group, and reasons."""
        reasons: list[str] = []
        wanted = {r: q for r, q in requests.items() if r in group.covered}
        best: dict[str, tuple[str, Mode, int]] | None = None
        best_mode: tuple[Mode, int] = (NO_FIT, 1 << 30)
        self.group_reason = ""
        for fq in group.flavors:
            if fq.name not in self.flavors:
                reasons.append(msg.flavor_not_found(fq.name))
                self._flavor_reason(REASON_NO_MATCHING_FLAVOR)
                continue
            chosen: dict[str, tuple[str, Mode, int]] = {}
            rep: tuple[Mode, int] = (FIT, 0)
            before = len(reasons)
            for res, q in wanted.items():
                fr = (fq.name, res)
                mode = self.fits_quota(fr, assumed.get(fr, 0), q, reasons)
                if _preferred(rep, mode):
                    rep = mode
                if rep[0] == NO_FIT:
                    continue
                chosen[res] = (fq.name, mode[0], mode[1])
            if rep[0] == FIT:  # stop at the first flavor that fits, borrowing or not
                return chosen, []
            if rep[0] == NO_FIT:
                over = any(r.startswith("insufficient quota") for r in reasons[before:])
                self._flavor_reason(REASON_EXCEEDS_MAX_QUOTA if over else REASON_WAITING_FOR_QUOTA)
            if _preferred(rep, best_mode):
                best, best_mode = chosen, rep
        return best, reasons

    def assign(self, wl: Workload) -> FlavorResult:
        assumed: Usage = {}
        flavors: dict[str, dict[str, str]] = {}
        failures: list[tuple[str, list[str]]] = []
        worst, borrows, need = FIT, False, set[tuple[str, str]]()
        for ps_name, totals in wl.totals:
            got: dict[str, tuple[str, Mode, int]] = {}
            reasons: list[str] = []
            failed, reason = False, ""
            for res, q in totals.items():
                if res in got:
                    continue
                group = group_for(self.cq, res)
                if group is None:
                    if q == 0:
                        continue
                    reasons = [msg.unavailable(res)]
                    self._note(res, 0, uncovered=True)
                    failed, reason = True, REASON_NO_MATCHING_FLAVOR
                    break
                found, why = self.find_flavor(group, totals, assumed)
                if not found:
                    reasons, failed, reason = why, True, self.group_reason or REASON_NO_MATCHING_FLAVOR
                    break
                got.update(found)
                reasons += why
            if failed:
                failures.append((ps_name, reasons))
                return FlavorResult(NO_FIT, flavors, _nonzero(assumed), borrows, msg.pod_set_failures(failures),
                                    need, self.shortfall, reason)
            if reasons:
                failures.append((ps_name, reasons))
            flavors[ps_name] = {res: f for res, (f, _, _) in got.items()}
            for res, (f, mode, borrow) in got.items():
                fr = (f, res)
                assumed[fr] = assumed.get(fr, 0) + totals[res]
                borrows = borrows or borrow > 0
                if mode != FIT:
                    need.add(fr)
                    worst = min(worst, PREEMPT)
        return FlavorResult(worst, flavors, _nonzero(assumed), borrows, msg.pod_set_failures(failures), need,
                            self.shortfall if worst != FIT else None)


def _nonzero(usage: Usage) -> Usage:
    return {fr: v for fr, v in usage.items() if v}
