"""One server's metrics (docs/metrics.md): a `CollectorRegistry` of its own, never prometheus_client's
global one, so two servers in one process (tests, benches) never count each other's events.

* `kueue` — Kueue's metrics: counters moved by the queueing controller, gauges from the scheduler's
  snapshot at each scrape;
* `jobs` — TrainJobs created, completed, failed, and the phases of their start;
* the usage of pods and of the machine (`usage.Sampler`), added by the controllers' manager, which
  owns the sampler (`observe_usage`).

The server serves the registry at `/metrics` and the sampler's readings at `metrics.k8s.io`.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, disable_created_metrics

from mpijob.controllers.metrics.jobs import JobMetrics
from mpijob.controllers.metrics.kueue import KueueMetrics, QueueCollector
from mpijob.controllers.metrics.usage import Sampler, UsageCollector
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store


class Metrics:
    def __init__(self, store: Store, logs: LogStore) -> None:
        disable_created_metrics()  # no `*_created` series beside counters: Kueue's and the kubelet's have none
        self.store = store
        self.registry = CollectorRegistry()
        self.kueue = KueueMetrics(self.registry)
        self.jobs = JobMetrics(self.registry, store, logs)
        self.registry.register(QueueCollector(store))
        self.sampler: Sampler | None = None  # set by observe_usage: no pod runs without the controllers
        self.node = ""  # the machine's Node name, once registered

    def observe_usage(self, sampler: Sampler, node: str, capacity: dict[str, str]) -> None:
        """Export what `sampler` reads, for the machine registered as Node `node` with `capacity`."""
        self.sampler, self.node = sampler, node
        self.registry.register(UsageCollector(sampler, self.store, node, capacity))
