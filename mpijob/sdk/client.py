"""`Client`: the synchronous Python SDK, for notebooks and scripts.

It picks the cluster exactly as the CLI does (`mpijob.client.config.choose_cluster`: `kubeconfig=`,
else `$KUBECONFIG`, else the local cluster of `$MPIJOB_HOME`, started on demand) and runs the client
core's operations on a `mpijob.client.connection.Connection`, as the CLI does. Every failure surfaces
as one of the typed exceptions in `mpijob.sdk.errors`, whose categories are the CLI's exit codes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TypeVar

from mpijob.api import Obj, names
from mpijob.api.trainer.progress import Progress
from mpijob.api.trainer.waiting import Waiting
from mpijob.client import core
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.core import Op
from mpijob.client.logs import read_pod, stream_pod
from mpijob.client.wait import POLL
from mpijob.sdk import _core
from mpijob.sdk.errors import translated
from mpijob.sdk.trainjob import TrainJob

T = TypeVar("T")


class Client:
    """A connection to one cluster: `Client()` for the local one, `Client(context="prod")` for another.

    Methods take a TrainJob's name in the client's namespace (`namespace=` or the context's)."""

    def __init__(self, context: str | None = None, namespace: str | None = None,
                 kubeconfig: str | os.PathLike[str] | None = None) -> None:
        with translated():
            self.target = choose_cluster(kubeconfig, context, namespace)
            self._conn = Connection(self.target)
        self.namespace = self.target.namespace

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, op: Op[T]) -> T:
        with translated():
            return self._conn.run(op)

    def create(self, job: TrainJob | Obj) -> Obj:
        """Create a TrainJob (a `TrainJob` builder or a manifest dict); returns the stored object."""
        return self._run(core.create(_core.trainjob_object(job), self.namespace))

    def get(self, name: str) -> Obj:
        """The TrainJob as stored, status included; `NotFound` when it does not exist."""
        return self._run(core.get_trainjob(self.namespace, name))

    def list(self, label_selector: str | None = None) -> list[Obj]:
        """The namespace's TrainJobs, optionally filtered by a label selector."""
        return self._run(core.list_trainjobs(self.namespace, label_selector))

    def delete(self, name: str) -> None:
        """Delete a TrainJob; its pods, keys and workload go with it (logs stay on the local cluster)."""
        self._run(core.delete_trainjob(self.namespace, name))

    def suspend(self, name: str) -> Obj:
        """Stop a TrainJob and free its quota (`spec.suspend=true`); returns the updated object."""
        return self._run(core.set_suspend(self.namespace, name, True))

    def resume(self, name: str) -> Obj:
        """Put a suspended TrainJob back in its queue (`spec.suspend=false`)."""
        return self._run(core.set_suspend(self.namespace, name, False))

    def wait(self, name: str, for_: str = names.COMPLETE, timeout: float | None = 600, poll: float = POLL,
             show_progress: bool = False) -> Obj:
        """Block until the TrainJob is `Complete`, `Failed`, `Running` or `Finished` (either end); returns it.

        Raises `JobFailed` when it fails while waiting for Complete or Running, `Timeout` after `timeout`
        seconds (None: no limit). `show_progress=True` shows a live bar while it waits — HTML in a
        notebook, a terminal bar elsewhere — with the phase and what the program reports (percentage,
        metrics, ETA: docs/progress.md)."""
        with _core.shown(show_progress) as show:
            return self._run(_core.wait(self.namespace, name, for_, timeout, poll, show))

    def logs(self, name: str, follow: bool = False, pod: str | None = None, rank: int | None = None,
             timeout: float | None = 600) -> Iterator[str]:
        """The lines of the launcher's log (or of `pod`) as the ranks printed them; `rank=N` keeps
        what rank N printed. `follow=True` waits for the launcher to start and streams until it ends.
        Lines come without their newline."""
        self.get(name)  # NotFound now, not on the first next()
        return self._log_lines(name, follow, pod, rank, timeout)

    def _log_lines(self, name: str, follow: bool, pod: str | None, rank: int | None, timeout: float | None
                   ) -> Iterator[str]:
        with translated():
            target = self._conn.run(_core.log_target(self.namespace, name, pod, follow, timeout))
            lines = (stream_pod(self._conn, target, self.namespace) if follow
                     else read_pod(self._conn, target, self.namespace))
            yield from (line.text for line in lines if _core.keep(line, rank))

    def progress(self, name: str) -> Progress | None:
        """How far the job has got, as its program last reported it (`update_trainjob_status()` or a POST
        to `$KUBEFLOW_TRAINER_SERVER_URL`): percentage, seconds left, metrics; None before its first report."""
        return self._run(_core.progress(self.namespace, name))

    def waiting(self, name: str) -> Waiting | None:
        """Why the job still waits for admission, in one sentence with numbers (`.sentence()`), and when it
        should start (`.estimated_start`, None without a basis); None once it is admitted."""
        return self._run(_core.waiting(self.namespace, name))

    def events(self, name: str) -> list[Obj]:  # type: ignore[valid-type]  # the `list` method shadows the builtin; docs/sdk.md shows this spelling
        """Events about the TrainJob, its pods and its Workload, oldest first."""
        return self._run(core.job_events(self.namespace, name))
