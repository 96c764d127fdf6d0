"""TrainJob metrics: how many jobs were created, completed and failed, and how long each phase of a
job's start and its run took.

The counters and the end-to-end duration take the names proposed for Trainer's controller in
kubeflow/trainer#3433 (`kubeflow_trainer_trainjobs_{created,completed,failed}_total`,
`kubeflow_trainer_trainjob_duration_seconds` with its buckets; after MPI Operator's
`mpi_operator_jobs_{created,successful,failed}_total`), labelled by namespace and runtime, the failures
by their condition's reason too. `runtime` is the runtime's name, where #3433 puts its kind
(ClusterTrainingRuntime or TrainingRuntime): a queue's dashboard asks "which runtime fails", not "which kind".
Trainer has no names for the phases of an MPI start (nodes' sshd ready, first rank output), so those histograms
are mpijob's own (`mpijob_trainjob_*`).

A job is counted once when the Trainer controller first sees it (`created`) and once when it ends
(`finished`, from `TrainJobController.finish`); the durations are then read from what the store holds
(`mpijob.api.trainer.metrics.startup_phases`), so no timer runs beside the job.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time
from mpijob.api.core.resources import PODS, WORKLOADS
from mpijob.api.core.selectors import parse_labels
from mpijob.api.kueue.adapters import workload_name
from mpijob.api.trainer.metrics import ADMISSION, launcher_started, startup_phases
from mpijob.controllers.metrics.kueue import exponential_buckets
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

# A pod sandbox, an sshd and a first line take seconds, not hours: finer buckets than Kueue's waits
STARTUP_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
DURATION_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800, 21600)  # #3433's, tiny CI jobs to fine-tunes
JOB = ("namespace", "runtime")


def runtime_of(tj: Obj) -> str:
    return str(((tj.get("spec") or {}).get("runtimeRef") or {}).get("name") or "")


def _true(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind and c.get("status") == "True"), None)


class JobMetrics:
    def __init__(self, registry: CollectorRegistry, store: Store, logs: LogStore) -> None:
        self.store, self.logs = store, logs
        self.created_total = Counter("kubeflow_trainer_trainjobs_created_total",
                                     "TrainJobs created, per namespace and runtime", JOB, registry=registry)
        self.completed_total = Counter("kubeflow_trainer_trainjobs_completed_total",
                                       "TrainJobs that completed, per namespace and runtime", JOB, registry=registry)
        self.failed_total = Counter("kubeflow_trainer_trainjobs_failed_total",
                                    "TrainJobs that failed, per namespace, runtime and the Failed condition's reason",
                                    (*JOB, "reason"), registry=registry)
        self.phases = Histogram(
            "mpijob_trainjob_startup_phase_seconds",
            "How long each phase of a TrainJob's start on its pods took: nodes_ready (first pod created to every "
            "node's sshd accepting the job key), first_output (launcher started to the first line a rank printed)",
            (*JOB, "phase"), registry=registry, buckets=STARTUP_BUCKETS)
        self.admission = Histogram(
            "mpijob_trainjob_admission_wait_seconds",
            "The first phase of a TrainJob's start: created (or requeued) to its Workload admitted; Kueue's "
            "buckets, as a wait can last hours", JOB, registry=registry,
            buckets=exponential_buckets(16))
        self.duration = Histogram("kubeflow_trainer_trainjob_duration_seconds",
                                  "TrainJobs' end-to-end duration, created to their terminal condition, per result "
                                  "(Complete, Failed)", (*JOB, "result"), registry=registry, buckets=DURATION_BUCKETS)
        self.run = Histogram("mpijob_trainjob_run_seconds",
                             "Launcher started to the TrainJob's end, per outcome (Complete, Failed)",
                             (*JOB, "outcome"), registry=registry, buckets=exponential_buckets(16))

    def created(self, tj: Obj) -> None:
        self.created_total.labels(tj["metadata"]["namespace"], runtime_of(tj)).inc()

    def finished(self, tj: Obj) -> None:
        """Count a TrainJob that has just ended, and observe the phases its last run went through."""
        meta = tj["metadata"]
        ns, runtime = meta["namespace"], runtime_of(tj)
        failed = _true(tj, names.FAILED)
        if failed is not None:
            self.failed_total.labels(ns, runtime, str(failed.get("reason") or "")).inc()
        else:
            self.completed_total.labels(ns, runtime).inc()
        if created := parse_time(meta.get("creationTimestamp")):
            result = names.FAILED if failed is not None else names.COMPLETE
            self.duration.labels(ns, runtime, result).observe(max(time.time() - created.timestamp(), 0.0))
        pods = self.store.list(PODS, ns, parse_labels(f"{names.LABEL_JOBSET_NAME}={meta['name']}"))[0]
        launcher = next((p for p in pods if p["metadata"]["labels"].get(names.LABEL_RJOB_NAME) == names.LAUNCHER), None)
        first = self.logs.first_rank_output(ns, launcher["metadata"]["name"], names.CONTAINER) if launcher else None
        workload = self.store.try_get(WORKLOADS, ns, workload_name(tj))
        for phase, seconds in startup_phases(tj, workload, pods, first).items():
            if phase == ADMISSION:
                self.admission.labels(ns, runtime).observe(seconds)
            else:
                self.phases.labels(ns, runtime, phase).observe(seconds)
        started = launcher_started(pods)
        if started is not None:
            outcome = names.FAILED if failed is not None else names.COMPLETE
            self.run.labels(ns, runtime, outcome).observe(max(time.time() - started, 0.0))
