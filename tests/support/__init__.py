"""What tests share: waits, clients, job builders, process finders and users, each in a module named for
what it holds, all importable from here (`from support import wait_for, trainjob`). Tests have no packages;
tests/ is on `sys.path` (its conftest.py), so `support` is found by name."""

from support.clients import KUBECTL, ca_context, https_client, kubeconfig_token, kubectl_runner
from support.jobs import (
    JOBSET,
    RJOB,
    TAG,
    TRAINER,
    Obj,
    by_role,
    condition,
    create,
    delete_jobs_using,
    events_of,
    finished,
    finished_as,
    get_trainjob,
    job_pods,
    job_state,
    launcher_of,
    pod_log,
    resource_version,
    section,
    status_code,
    terminations,
    trainjob,
    wait_finished,
    wait_launcher,
    wait_log,
)
from support.processes import job_dirs, job_processes, sshd_of, wait_no_processes, wait_ranks_seen
from support.timing import SLOWDOWN, scaled
from support.tools import REPO, load_tool
from support.upstream import UPSTREAM, UPSTREAM_TRAINER
from support.users import add_user, two_tenants
from support.waits import wait_for

__all__ = [
    "JOBSET", "KUBECTL", "REPO", "RJOB", "SLOWDOWN", "TAG", "TRAINER", "UPSTREAM", "UPSTREAM_TRAINER", "Obj",
    "add_user", "by_role", "ca_context", "condition", "create",
    "delete_jobs_using", "events_of", "finished", "finished_as",
    "get_trainjob", "https_client", "job_dirs", "job_pods", "job_processes", "job_state", "kubeconfig_token",
    "kubectl_runner", "launcher_of", "load_tool", "pod_log", "resource_version", "scaled", "section", "sshd_of",
    "status_code", "terminations", "trainjob", "two_tenants", "wait_finished", "wait_for", "wait_launcher",
    "wait_log", "wait_no_processes", "wait_ranks_seen",
]
