"""Nothing a job prints is lost, even when it prints fast while the server is busy.

Open MPI 4.1's mpirun drops part of the ranks' output, and still exits 0, when its stdout is read too
slowly; the local cluster reads every pod's output on threads of its own through large pipes. Here a
4-rank job prints 20,000 lines while six other jobs start next to it; every line must be in the
launcher's log, whole, exactly once. (Losing lines needs a slow reader, so this guards the outcome; it
did not reproduce the loss reliably with the old event-loop reader either.)"""

from __future__ import annotations

import re
from collections import Counter

import httpx
from e2e_support import condition, create, job_pods, launcher_of, pod_log, trainjob, wait_finished

LINES = 5000
CHATTY = "ee-chatty"
NEIGHBOURS = [f"ee-busy-{i}" for i in range(6)]


def test_every_line_of_a_fast_printing_job_reaches_its_log(api: httpx.Client) -> None:
    script = f'for i in $(seq {LINES}); do echo "rank $OMPI_COMM_WORLD_RANK line $i of a fast printer"; done'
    for name in NEIGHBOURS:
        create(api, trainjob(name, ["mpirun", "bash", "-c", "echo hi"], num_nodes=2))
    create(api, trainjob(CHATTY, ["mpirun", "bash", "-c", script], num_nodes=4))
    try:
        tj = wait_finished(api, CHATTY, timeout=180)
        assert condition(tj, "Complete") is not None, tj.get("status")
        log = pod_log(api, launcher_of(job_pods(api, CHATTY))["metadata"]["name"])  # tags read, lines rejoined
        seen = Counter(re.findall(r"^rank (\d) line (\d+) of a fast printer$", log, re.MULTILINE))
        expected = {(str(r), str(i)) for r in range(4) for i in range(1, LINES + 1)}
        assert set(seen) == expected, f"{len(expected - set(seen))} lines missing, e.g. {sorted(expected - set(seen))[:3]}"
        assert max(seen.values()) == 1
        for name in NEIGHBOURS:
            assert condition(wait_finished(api, name, timeout=180), "Complete") is not None
    finally:
        for name in [CHATTY, *NEIGHBOURS]:
            api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}")
