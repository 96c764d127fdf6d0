"""The failure classifier as a table: facts in (pods' exits, OOM kills, the launcher's last lines as Open
MPI 4.1, ssh and the shell really print them), class, pod, rank and host out. The e2e tests
(tests/e2e/test_failure_classes.py) produce every class with a real failing job; this pins the rules
and their order, and that every class has its section in docs/troubleshooting.md."""

from __future__ import annotations

import re
from pathlib import Path

from mpijob.api import failures, names
from mpijob.api.failures import Facts, Line, PodFacts, classify

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
LAUNCHER = PodFacts("j-launcher-0-0-abcde", "j-launcher-0-0.j", launcher=True, exit_code=1)
NODE = PodFacts("j-node-0-0-fghij", "j-node-0-0.j")
NODE1 = PodFacts("j-node-0-1-klmno", "j-node-0-1.j")
ORTE_BOX = ["-" * 74, "ORTE was unable to reliably start one or more daemons.", "This usually is caused by:"]


def facts(*lines: str | tuple[int, str], launcher: PodFacts = LAUNCHER, pods: tuple[PodFacts, ...] = (NODE, NODE1),
          culprit: str = LAUNCHER.name, starting: bool = False, ready_timeout: float = 0.0,
          sshd_answered: bool = False) -> Facts:
    """Job `j` with 3 hosts of one slot; `lines` are the launcher's last (a rank's as `(rank, text)`)."""
    log = tuple(Line(*ln) if isinstance(ln, tuple) else Line(None, ln) for ln in lines)
    return Facts("j", culprit, (*pods, launcher), log, slots=3, hosts=3, key_dir="/home/mpiuser/.ssh",
                 starting=starting, ready_timeout=ready_timeout, sshd_answered=sshd_answered)


def test_ssh_key_refused_names_the_node_that_refused_it() -> None:
    found = classify(facts("identity_sign: private key /home/mpiuser/.ssh/id_rsa contents do not match public",
                           "mpiuser@j-node-0-1.j: Permission denied (publickey).", *ORTE_BOX))
    assert (found.reason, found.pod, found.host) == (names.FAILURE_SSH_AUTH, NODE1.name, "j-node-0-1.j")
    assert "j-mpi-ssh-auth" in found.fix and "/home/mpiuser/.ssh" in found.fix


def test_unknown_host_is_not_a_pod_of_the_job() -> None:
    found = classify(facts("ssh: Could not resolve hostname j-node-0-7.j: Temporary failure in name resolution",
                           *ORTE_BOX))
    assert (found.reason, found.pod, found.host) == (names.FAILURE_HOST_UNRESOLVABLE, LAUNCHER.name, "j-node-0-7.j")
    assert "Temporary failure in name resolution" in found.summary


def test_a_node_before_it_was_ready() -> None:
    exited = PodFacts(NODE.name, NODE.host, exit_code=255,
                      last_line="Missing privilege separation directory: /run/sshd")
    found = classify(facts(pods=(exited, NODE1), culprit=NODE.name, starting=True, ready_timeout=60))
    assert found.reason == names.FAILURE_SSHD_NOT_READY and "code 255" in found.summary
    assert "/run/sshd" in found.summary and found.pod == NODE.name
    silent = classify(facts(culprit=NODE.name, starting=True, ready_timeout=0.5))
    assert silent.reason == names.FAILURE_SSHD_NOT_READY and "within 0.5s" in silent.summary
    refused = classify(facts(culprit=NODE.name, starting=True, ready_timeout=60, sshd_answered=True))
    assert refused.reason == names.FAILURE_SSH_AUTH and "answered" in refused.summary


def test_nothing_listening_on_a_node_is_sshd_not_ready() -> None:
    found = classify(facts("ssh: connect to host j-node-0-0.j port 2222: Connection refused", *ORTE_BOX))
    assert (found.reason, found.pod) == (names.FAILURE_SSHD_NOT_READY, NODE.name)


def test_oom_kill_beats_the_signal_it_shows_as_and_gives_peak_and_limit() -> None:
    killed = PodFacts(NODE.name, NODE.host, oom_kills=1, memory_peak=64 << 20, memory_limit=64 << 20)
    found = classify(facts("mpirun noticed that process rank 1 with PID 43 on node j-node-0-0.j exited on signal 9 "
                           "(Killed).", pods=(killed, NODE1)))
    assert (found.reason, found.pod, found.rank, found.host) == (names.REASON_OOM_KILLED, NODE.name, 1, NODE.host)
    assert "peak 64.0 MiB of a 64.0 MiB limit (1 OOM kill)" in found.summary


def test_signal_names_rank_pod_and_host() -> None:
    found = classify(facts("mpirun noticed that process rank 1 with PID 43 on node j-node-0-0.j exited on signal "
                           "11 (Segmentation fault)."))
    assert (found.reason, found.pod, found.rank, found.host) == (names.FAILURE_SIGNALED, NODE.name, 1, NODE.host)
    assert "crashed" in found.fix and "mpijob logs j --rank 1" in found.fix


def test_command_not_found_three_ways() -> None:
    by_mpirun = classify(facts("mpirun was unable to find the specified executable file, and therefore",
                               "did not launch the job.  This error was first reported for process", "rank 0; it may "
                               "have occurred for other processes as well.", "Node:       j-launcher-0-0",
                               "Executable: trian.py"))
    assert (by_mpirun.reason, by_mpirun.rank, by_mpirun.pod) == (names.FAILURE_COMMAND_NOT_FOUND, 0, LAUNCHER.name)
    assert "'trian.py'" in by_mpirun.summary
    by_rank = classify(facts((0, "bash: line 1: trian.py: command not found"), "Process name: [[1234,1],0]",
                             "Exit code:    127"))
    assert (by_rank.reason, by_rank.rank) == (names.FAILURE_COMMAND_NOT_FOUND, 0)
    launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 127, last_line="env: 'mpirn': No such file or directory")
    by_launcher = classify(facts(launcher=launcher))
    assert by_launcher.reason == names.FAILURE_COMMAND_NOT_FOUND and "mpirn" in by_launcher.summary


def test_a_program_no_host_has_as_open_mpi_and_hydra_say_it() -> None:
    # Open MPI 4.1 wraps its box's sentence across two lines; Hydra (MPICH, Intel MPI) names the proxy's host
    by_open_mpi = classify(facts("mpirun was unable to launch the specified application as it could not access",
                                 "or execute an executable:", "", "Executable: /home/mpiuser/pi",
                                 "Node: j-node-0-0.j", "", "while attempting to start process rank 0.",
                                 "2 total processes failed to start"))
    assert (by_open_mpi.reason, by_open_mpi.pod) == (names.FAILURE_COMMAND_NOT_FOUND, NODE.name)
    assert "'/home/mpiuser/pi'" in by_open_mpi.summary
    for line in ("[proxy:0:1@j-node-0-1.j] [1] HYD_spawn (../../hydra_spawn.c:177): [1] execvp error on file "
                 "/home/mpiuser/pi (No such file or directory)",  # Intel MPI
                 "[proxy:1@j-node-0-1.j] HYDU_create_process (/mpich-5.0.2/src/pm/hydra/lib/utils/launch.c:73): "
                 "[1] execvp error on file /home/mpiuser/pi (No such file or directory)"):  # MPICH
        by_hydra = classify(facts(line, "[mpiexec@j-launcher-0-0] wait_proxies_to_terminate: downstream from host "
                                        "j-node-0-0.j exited with status 255"))
        assert (by_hydra.reason, by_hydra.pod, by_hydra.host) == (names.FAILURE_COMMAND_NOT_FOUND, NODE1.name,
                                                                  "j-node-0-1.j")
        assert "'/home/mpiuser/pi'" in by_hydra.summary and "No such file or directory" in by_hydra.summary


def test_not_enough_slots_counts_them() -> None:
    found = classify(facts("There are not enough slots available in the system to satisfy the 50",
                           "slots that were requested by the application:"))
    assert found.reason == names.FAILURE_NOT_ENOUGH_SLOTS
    assert "asked for 50 processes, but the hostfile offers 3 slots (3 hosts)" in found.summary
    assert "-n 3" in found.fix


def test_daemon_lost_from_mpirun_or_from_a_node_that_ended() -> None:
    found = classify(facts("ORTE has lost communication with a remote daemon.", "",
                           "  HNP daemon   : [[8887,0],0] on node j-launcher-0-0",
                           "  Remote daemon: [[8887,0],2] on node j-node-0-1.j"))
    assert (found.reason, found.pod, found.host) == (names.FAILURE_DAEMON_LOST, NODE1.name, "j-node-0-1.j")
    gone = PodFacts(NODE.name, NODE.host, exit_code=137, signal=9)
    node = classify(facts(pods=(gone, NODE1), culprit=NODE.name, launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True)))
    assert (node.reason, node.pod) == (names.FAILURE_DAEMON_LOST, NODE.name) and "SIGKILL" in node.summary


def test_nccl_error_and_timeout_before_the_exit_code_they_cause() -> None:
    warn = "j-node-0-0:4242:4300 [0] include/socket.h:409 NCCL WARN Net : Connect to 10.244.1.2<43215> failed"
    found = classify(facts((1, warn), "Process name: [[1234,1],1]", "Exit code:    1"))
    assert (found.reason, found.rank, found.pod) == (names.FAILURE_NCCL, 1, NODE.name)
    assert "an NCCL error" in found.summary
    timeout = ("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
               "Timeout(ms)=600000) ran for 600321 milliseconds before timing out.")
    assert "an NCCL timeout" in classify(facts((2, timeout))).summary
    torch = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269"
    first = classify(facts((1, torch), (1, warn)))  # stderr before stdout: NCCL's own line still names the host
    assert (first.pod, first.host) == (NODE.name, "j-node-0-0") and "NCCL WARN" in first.summary


def test_what_is_left_is_the_program_failing() -> None:
    found = classify(facts((1, "loss is nan, giving up"), "Process name: [[43469,1],1]", "Exit code:    3"))
    assert (found.reason, found.rank) == (names.FAILURE_PROGRAM, 1)
    assert "rank 1 exited with code 3: loss is nan, giving up" in found.summary
    plain = classify(facts(launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3, last_line="doomed")))
    assert plain.reason == names.FAILURE_PROGRAM and "exited with code 3: doomed" in plain.summary


def test_the_message_is_class_summary_fix_and_link() -> None:
    found = classify(facts("There are not enough slots available in the system to satisfy the 9", "slots"))
    assert found.message.startswith(f"{names.FAILURE_NOT_ENOUGH_SLOTS}: mpirun on launcher pod ")
    assert ". Fix: Ask for at most 3" in found.message
    assert found.message.endswith("See docs/troubleshooting.md#not-enough-slots")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_every_class_has_its_section_in_the_guide() -> None:
    anchors = {_slug(line[3:]) for line in GUIDE.read_text().splitlines() if line.startswith("## ")}
    assert set(failures.ANCHORS.values()) <= anchors, set(failures.ANCHORS.values()) - anchors
    classes = {v for k, v in vars(names).items() if k.startswith("FAILURE_")} | {names.REASON_OOM_KILLED}
    assert classes == set(failures.ANCHORS)
