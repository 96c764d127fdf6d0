"""`mpijob run -f FILE` (or `run trainjob NAME … -- COMMAND`): create a TrainJob, show its progress,
stream the launcher, exit with its fate."""

import sys
import threading
from contextlib import AbstractContextManager, nullcontext
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from mpijob.api import Obj
from mpijob.cli import output
from mpijob.cli.create_cmd import (
    CpuOpt,
    EnvOpt,
    GpusOpt,
    ImageOpt,
    MemoryOpt,
    NodesOpt,
    OptFileOpt,
    PriorityOpt,
    ProcsOpt,
    QueueOpt,
    RuntimeOpt,
    WordsArg,
    create_all,
    objects_to_create,
)
from mpijob.cli.exitcodes import Exit, UsageError
from mpijob.cli.session import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    connect,
    globals_of,
    handles_errors,
)
from mpijob.client.builder import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from mpijob.client.connection import Connection
    from mpijob.client.errors import WaitTimeout
    from mpijob.client.wait import JobEnd

LOG_DRAIN_SECONDS = 10.0  # after the job ends, how long the launcher log may take to finish arriving


class Progress:
    """Phase changes on stderr: a spinner on a terminal, one plain line per change otherwise."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tty = sys.stderr.isatty()
        self._status: Any = None

    def spinner(self) -> AbstractContextManager[Any]:
        if not self.tty:
            return nullcontext()
        self._status = output.stderr().status(f"trainjob {self.name}: submitted")
        return self._status

    def __call__(self, phase: str, message: str) -> None:
        text = f"trainjob {self.name}: {phase}" + (f" ({message})" if message else "")
        if self._status is not None:
            self._status.update(text)
        else:
            output.info(text)


def _copy_log(conn: "Connection", pod: str, out: IO[str]) -> None:
    """Follow one pod's log onto `out` until its container ends: what the ranks printed, as
    `kubectl logs` shows it (`mpijob logs NAME` adds each line's pod and rank)."""
    from mpijob.client.logs import stream_pod

    for line in stream_pod(conn, pod):
        out.write(line.text + "\n")
        out.flush()


def _stream_in_background(conn: "Connection", pod: str, out: IO[str]) -> threading.Thread:
    from mpijob.api.core.errors import ApiError
    from mpijob.client.errors import Unreachable

    def pump() -> None:
        try:
            _copy_log(conn, pod, out)
        except (ApiError, Unreachable, TimeoutError) as exc:  # the job's outcome still decides the exit code
            output.info(f"log stream of {pod} ended early: {exc}")

    thread = threading.Thread(target=pump, name=f"log-{pod}", daemon=True)
    thread.start()
    return thread


def follow_job(conn: "Connection", name: str, timeout: float | None, log_to: IO[str] | None = None) -> "JobEnd":
    """Wait for the launcher, stream its log (to stdout unless `log_to`), and return how the job ended."""
    from mpijob.client.wait import Deadline, wait_for_finish, wait_for_launcher

    deadline = Deadline(timeout)
    progress = Progress(name)
    with progress.spinner():
        launcher = conn.run(wait_for_launcher(conn.namespace, name, deadline.remaining(), progress=progress))
    stream = None
    if launcher is not None:
        output.info(f"trainjob {name}: launcher {launcher['metadata']['name']} started; its log follows")
        stream = _stream_in_background(conn, launcher["metadata"]["name"], log_to or sys.stdout)
    result = conn.run(wait_for_finish(conn.namespace, name, deadline.remaining()))
    if stream is not None:
        stream.join(LOG_DRAIN_SECONDS)
    return result


def run_summary(job: Obj, status: str, message: str) -> Obj:
    """`run -o json|yaml`: where the job is and how it ended (or where it stood when we gave up)."""
    meta = job["metadata"]
    return {"name": meta["name"], "namespace": meta.get("namespace", ""), "status": status, "message": message}


def _timed_out(conn: "Connection", job: Obj, fmt: str, exc: "WaitTimeout") -> None:
    """Print where the job stood, then let the contract's timeout code be the exit."""
    from mpijob.api.core.errors import ApiError
    from mpijob.client.errors import Unreachable
    from mpijob.client.phase import job_phase

    name = job["metadata"]["name"]
    try:
        phase, _ = job_phase(conn.get_trainjob(name), conn.job_pods(name))
    except (ApiError, Unreachable, TimeoutError):
        phase = "Unknown"
    output.dump(run_summary(job, phase, str(exc)), fmt)


@handles_errors
def run(
    ctx: typer.Context,
    words: WordsArg = None,
    filename: OptFileOpt = None,
    nodes: NodesOpt = None,
    procs_per_node: ProcsOpt = None,
    gpus: GpusOpt = None,
    cpu: CpuOpt = None,
    memory: MemoryOpt = None,
    env: EnvOpt = None,
    queue: QueueOpt = None,
    priority: PriorityOpt = None,
    runtime: RuntimeOpt = DEFAULT_RUNTIME,
    image: ImageOpt = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Give up after this many seconds "
                                                     "(exit 7; the job keeps running).", show_default=False)] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Delete an existing TrainJob of the same name "
                                          "first.")] = False,
    output_format: Annotated[str | None, typer.Option(
        "--output", "-o", help="json | yaml: only {name, namespace, status, message} on stdout, at the end "
        "(the launcher's log goes to stderr).", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Create the TrainJob in FILE (or from flags: `mpijob run trainjob NAME --nodes 4 -- mpirun python
    x.py`), stream its launcher's log; exit 0 if it Completes, 1 if it Fails."""
    if output_format is not None and output_format not in ("json", "yaml"):
        raise UsageError(f"run --output {output_format!r} is not supported; use json or yaml")
    from mpijob.api.core.errors import ApiError
    from mpijob.client.core import display_name, resource_for
    from mpijob.client.errors import InvalidArgument, WaitTimeout
    from mpijob.client.wait import wait_until_gone

    objects = objects_to_create(filename, words, "run", num_nodes=nodes, num_proc_per_node=procs_per_node,
                                gpus=gpus, cpu=cpu, memory=memory, env=env, queue=queue, priority=priority,
                                runtime=runtime, image=image)
    jobs = [o for o in objects if isinstance(o, dict) and o.get("kind") == "TrainJob"]
    if len(jobs) != 1:
        raise InvalidArgument("-f", ", ".join(filename or []), f"has {len(jobs)} TrainJobs, and run needs exactly "
                              "one", "use `mpijob create -f` for several")
    with connect(ctx, kubeconfig, context, namespace) as conn:
        name = (jobs[0].get("metadata") or {}).get("name")
        if replace and name:
            ns = (jobs[0].get("metadata") or {}).get("namespace") or conn.namespace
            try:
                conn.delete_trainjob(name, ns)
                output.info(f"trainjob {name}: deleted the previous run (--replace)")
                conn.run(wait_until_gone(ns, name))
            except ApiError as exc:
                if exc.code != 404:
                    raise
        created = create_all(conn, objects, namespace or globals_of(ctx).namespace)
        for obj in created:
            output.info(f"{display_name(resource_for(obj), obj['metadata']['name'])} created")
        job = next(o for o in created if o.get("kind") == "TrainJob")
        name = job["metadata"]["name"]
        conn.namespace = job["metadata"].get("namespace") or conn.namespace
        try:
            result = follow_job(conn, name, timeout, sys.stderr if output_format else None)
        except WaitTimeout as exc:
            if output_format:
                _timed_out(conn, job, output_format, exc)
            raise
        except KeyboardInterrupt:
            output.info(f"interrupted; trainjob {name} keeps running: `mpijob logs {name} -f` to follow it, "
                        f"`mpijob delete trainjob {name}` to stop it")
            raise typer.Exit(130) from None
    if output_format:
        status = "Succeeded" if result.succeeded else "Failed"
        output.dump(run_summary(job, status, result.message or result.reason), output_format)
    if result.succeeded:
        output.info(f"trainjob {name}: Complete ({result.reason or 'ok'})")
        return
    output.info(f"error: trainjob {name} failed ({result.reason}): {result.message}")
    raise typer.Exit(int(Exit.JOB_FAILED))
