"""Kueue semantics on one machine: pure scheduling decisions over a snapshot (this package), applied to
the store by `mpijob.controllers.kueue.queueing`."""

from mpijob.api.kueue import messages  # Kueue's words, for the controllers that write them
from mpijob.api.kueue.fit import never_fits
from mpijob.api.kueue.scheduler.cycle import schedule
from mpijob.api.kueue.scheduler.decisions import Admit, Pending, Preempt
from mpijob.api.kueue.scheduler.fairsharing import weighted_shares
from mpijob.api.kueue.scheduler.limits import queue_usage
from mpijob.api.kueue.scheduler.ordering import positions

__all__ = ["Admit", "Pending", "Preempt", "messages", "never_fits", "positions", "queue_usage", "schedule",
           "weighted_shares"]
