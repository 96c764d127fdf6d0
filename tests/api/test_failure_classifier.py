"""The failure classifier as a table: facts in (pods' exits, OOM kills, the launcher's last lines as Open
MPI 4.1 and 5, Hydra, ssh and the shell really print them, each with the rank that wrote it), class, pod,
rank and host out. The e2e tests (tests/e2e/test_failure_classes.py, test_failure_provenance.py) produce
every class with a real failing job, and programs that print the launch tools' words themselves; this
pins the rules, their order and their provenance, and that every class has its section in
docs/troubleshooting.md."""

from __future__ import annotations

import dataclasses
import re
import signal
from pathlib import Path

from mpijob.api import names
from mpijob.api.trainer import failures
from mpijob.api.trainer.failures import Facts, Line, PodFacts, classify

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
LAUNCHER = PodFacts("j-launcher-0-0-abcde", "j-launcher-0-0.j", launcher=True, exit_code=1)
NODE = PodFacts("j-node-0-0-fghij", "j-node-0-0.j")
NODE1 = PodFacts("j-node-0-1-klmno", "j-node-0-1.j")
RULE = "-" * 74  # Open MPI's help boxes open and close with it


def box(*lines: str) -> list[str]:
    return [RULE, *lines, RULE]


ORTE_BOX = box("ORTE was unable to reliably start one or more daemons.", "This usually is caused by:", "",
               "* not finding the required libraries and/or binaries on")
PRRTE_DAEMON_BOX = [ln.replace(RULE, "-" * 60) for ln in box(  # PRRTE draws this one 60 wide
    "A daemon failed to report back after being spawned. This could", "be due to several factors, including "
    "inability to find the", "", "  Local host:    j-launcher-0-0", "  Remote host:   j-node-0-1.j",
    "  Daemon exit status: 255")]
MPICH_PROXY_FAILED = ("[mpiexec@j-launcher-0-0] ui_cmd_cb (/mpich-5.0.2/src/pm/hydra/mpiexec/pmiserv_pmci.c:51): "
                      "Launch proxy failed.")


def orte_exit(rank: int, code: int) -> list[str]:
    """ORTE's box for a rank's non-zero exit."""
    return box("mpirun detected that one or more processes exited with non-zero status, thus causing",
               "the job to be terminated. The first process to do so was:", "",
               f"  Process name: [[23974,1],{rank}]", f"  Exit code:    {code}")


def prrte_exit(rank: int, code: int) -> list[str]:
    """PRRTE's (Open MPI 5) box for the same: another wrapping, another process name."""
    return box("prterun detected that one or more processes exited with non-zero status,",
               "thus causing the job to be terminated. The first process to do so was:", "",
               f"   Process name: [prterun-j-launcher-0-0-36@1,{rank}]", f"   Exit code:    {code}")


def facts(*lines: str | tuple[int, str], launcher: PodFacts = LAUNCHER, pods: tuple[PodFacts, ...] = (NODE, NODE1),
          culprit: str = LAUNCHER.name, starting: bool = False, ready_timeout: float = 0.0,
          implementation: str = "") -> Facts:
    """Job `j` with 3 hosts of one slot; `lines` are the launcher's last (a rank's as `(rank, text)`)."""
    log = tuple(Line(*ln) if isinstance(ln, tuple) else Line(None, ln) for ln in lines)
    return Facts("j", culprit, (*pods, launcher), log, slots=3, hosts=3, key_dir="/home/mpiuser/.ssh",
                 starting=starting, ready_timeout=ready_timeout,
                 implementation=implementation)


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


def test_a_host_intel_mpi_could_not_start_its_proxy_on() -> None:
    """Intel MPI keeps ssh's words to itself; its own line names the host, and a host that is none of the
    job's pods is the class's. A pod of the job it could not reach says nothing more: the program's class."""
    line = ("[mpiexec@j-launcher-0-0] Error: Unable to run bstrap_proxy on {} (pid 42, exit code 65280)")
    after = ["[mpiexec@j-launcher-0-0] Error setting up the bootstrap proxies", ("[mpiexec@j-launcher-0-0] Possible "
             "reasons:"), "IPL WARN> IPL_init_numa_nodes: can not define numa node num"]
    launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 255)
    found = classify(facts(line.format("x-node-0-7.x"), *after, launcher=launcher, implementation=names.MPI_INTEL))
    assert (found.reason, found.host) == (names.FAILURE_HOST_UNRESOLVABLE, "x-node-0-7.x")
    assert "(Intel MPI: Unable to run bstrap_proxy on x-node-0-7.x)" in found.summary
    own = classify(facts(line.format("j-node-0-1.j"), *after, launcher=launcher, implementation=names.MPI_INTEL))
    assert own.reason == names.FAILURE_PROGRAM
    printed = classify(facts((0, line.format("x-node-0-7.x")), launcher=launcher, implementation=names.MPI_INTEL))
    assert printed.reason == names.FAILURE_PROGRAM


def test_a_node_before_it_was_ready() -> None:
    exited = PodFacts(NODE.name, NODE.host, exit_code=255,
                      last_line="Missing privilege separation directory: /run/sshd")
    found = classify(facts(pods=(exited, NODE1), culprit=NODE.name, starting=True, ready_timeout=60))
    assert found.reason == names.FAILURE_SSHD_NOT_READY and "code 255" in found.summary
    assert "/run/sshd" in found.summary and found.pod == NODE.name
    silent = classify(facts(culprit=NODE.name, starting=True, ready_timeout=0.5))
    assert silent.reason == names.FAILURE_SSHD_NOT_READY and "within 0.5s" in silent.summary


def test_nothing_listening_on_a_node_is_sshd_not_ready() -> None:
    found = classify(facts("ssh: connect to host j-node-0-0.j port 2222: Connection refused", *ORTE_BOX))
    assert (found.reason, found.pod) == (names.FAILURE_SSHD_NOT_READY, NODE.name)


def test_oom_kill_beats_the_signal_it_shows_as_and_gives_peak_and_limit() -> None:
    killed = PodFacts(NODE.name, NODE.host, oom_kills=1, memory_peak=64 << 20, memory_limit=64 << 20)
    found = classify(facts(*box("mpirun noticed that process rank 1 with PID 43 on node j-node-0-0.j exited on "
                                "signal 9 (Killed)."), pods=(killed, NODE1)))
    assert (found.reason, found.pod, found.rank, found.host) == (names.REASON_OOM_KILLED, NODE.name, 1, NODE.host)
    assert "peak 64.0 MiB of a 64.0 MiB limit (1 OOM kill)" in found.summary


def test_signal_names_rank_pod_and_host() -> None:
    found = classify(facts(*box("mpirun noticed that process rank 1 with PID 43 on node j-node-0-0.j exited on "
                                "signal 11 (Segmentation fault).")))
    assert (found.reason, found.pod, found.rank, found.host) == (names.FAILURE_SIGNALED, NODE.name, 1, NODE.host)
    assert "crashed" in found.fix and "mpijob logs j --rank 1" in found.fix
    wrapped = classify(facts(*box("prterun noticed that process rank 1 with PID 47 on node j-node-0-0.j exited on",
                                  "signal 11 (Segmentation fault).")))  # Open MPI 5 wraps the sentence
    assert (wrapped.reason, wrapped.pod, wrapped.rank) == (names.FAILURE_SIGNALED, NODE.name, 1)


def test_signal_as_hydra_reports_it() -> None:
    """MPICH's and Intel MPI's banner of a rank that died badly (untagged, between rules of `=`)."""
    rule = "=" * 83
    mpich = classify(facts("", rule, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
                           "=   PID 38 RUNNING AT j-node-0-0.j", "=   EXIT CODE: 11",
                           "=   CLEANING UP REMAINING PROCESSES", "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES", rule,
                           "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)",
                           "This typically refers to a problem with your application."))
    assert (mpich.reason, mpich.pod, mpich.rank) == (names.FAILURE_SIGNALED, NODE.name, None)
    assert "exited on signal 11 (Segmentation fault)" in mpich.summary
    intel = classify(facts("", rule, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
                           "=   RANK 1 PID 50 RUNNING AT j-node-0-1.j", "=   KILLED BY SIGNAL: 9 (Killed)", rule))
    assert (intel.reason, intel.pod, intel.rank) == (names.FAILURE_SIGNALED, NODE1.name, 1)
    assert "Something outside the program" in intel.fix
    said = classify(facts(*[(0, ln) for ln in ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
                                               "=   KILLED BY SIGNAL: 9 (Killed)")]))
    assert said.reason == names.FAILURE_PROGRAM  # a rank's own banner is its output


def test_command_not_found_from_mpirun_or_the_launchers_own_exit() -> None:
    by_mpirun = classify(facts(*box("mpirun was unable to find the specified executable file, and therefore",
                                    "did not launch the job.  This error was first reported for process",
                                    "rank 0; it may have occurred for other processes as well.", "",
                                    "Node:       j-launcher-0-0", "Executable: trian.py"),
                               "2 total processes failed to start"))
    assert (by_mpirun.reason, by_mpirun.rank, by_mpirun.pod) == (names.FAILURE_COMMAND_NOT_FOUND, 0, LAUNCHER.name)
    assert "'trian.py'" in by_mpirun.summary
    by_prterun = classify(facts(*box("prterun was unable to find the specified executable file, and therefore did",
                                     "not launch the job.  This error was first reported for process rank",
                                     "1; it may have occurred for other processes as well.", "",
                                     "   Node:       j-node-0-0", "   Executable: trian.py")))
    assert (by_prterun.reason, by_prterun.rank, by_prterun.pod) == (names.FAILURE_COMMAND_NOT_FOUND, 1, NODE.name)
    launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 127, last_line="env: 'mpirn': No such file or directory")
    by_launcher = classify(facts("env: 'mpirn': No such file or directory", launcher=launcher))
    assert by_launcher.reason == names.FAILURE_COMMAND_NOT_FOUND and "code 127: env: 'mpirn'" in by_launcher.summary
    assert "spelling" in by_launcher.fix


def test_the_launchers_126_is_found_but_not_executable() -> None:
    launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 126)
    found = classify(facts("bash: line 1: ./train.sh: Permission denied", launcher=launcher))
    assert found.reason == names.FAILURE_COMMAND_NOT_FOUND and "code 126: bash: line 1: ./train.sh" in found.summary
    assert "chmod +x" in found.fix and "spelling" not in found.fix


def test_a_program_open_mpi_could_not_exec() -> None:
    """ORTE's execve box (a file that is there but no program): the launch could not start it."""
    found = classify(facts(*box('Open MPI tried to fork a new process via the "execve" system call but',
                                "failed.  Open MPI checks many things before attempting to launch a", "",
                                "  Local host:        j-node-0-1", "  Working dir:       /home/mpiuser",
                                "  Application name:  /etc/hostname", "  Error:             Exec format error"),
                           *box("mpirun was unable to start the specified application as it encountered an",
                                "error:"), "2 total processes failed to start",
                           launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 131, 3)))
    assert (found.reason, found.pod) == (names.FAILURE_COMMAND_NOT_FOUND, NODE1.name)
    assert "'/etc/hostname'" in found.summary and "(Exec format error)" in found.summary and "chmod" in found.fix


def test_a_program_no_host_has_as_open_mpi_and_hydra_say_it() -> None:
    # Open MPI 4.1 wraps its box's sentence across two lines; Hydra (MPICH, Intel MPI) names the proxy's host
    by_open_mpi = classify(facts(*box("mpirun was unable to launch the specified application as it could not "
                                      "access", "or execute an executable:", "", "Executable: /home/mpiuser/pi",
                                      "Node: j-node-0-0.j", "", "while attempting to start process rank 0."),
                                 "2 total processes failed to start"))
    assert (by_open_mpi.reason, by_open_mpi.pod) == (names.FAILURE_COMMAND_NOT_FOUND, NODE.name)
    assert "'/home/mpiuser/pi'" in by_open_mpi.summary
    hydra = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 255)  # mpiexec's exit when its proxy could not exec
    for line in ((1, ("[proxy:0:1@j-node-0-1.j] HYD_spawn (../../../../../src/pm/i_hydra/libhydra/spawn/intel/"
                     "hydra_spawn.c:177): execvp error on file /home/mpiuser/pi (No such file or directory)")),  # Intel
                 (1, ("[proxy:1@j-node-0-1.j] [1] HYDU_create_process (/mpich-5.0.2/src/pm/hydra/lib/utils/launch.c"
                     ":73): [1] execvp error on file /home/mpiuser/pi (No such file or directory)"))):  # MPICH
        # the proxy writes it into the rank's own stream, so it comes with the rank's tag
        by_hydra = classify(facts(line, "[mpiexec@j-launcher-0-0] wait_proxies_to_terminate: downstream from host "
                                        "j-node-0-0.j exited with status 255", launcher=hydra))
        assert (by_hydra.reason, by_hydra.pod, by_hydra.host) == (names.FAILURE_COMMAND_NOT_FOUND, NODE1.name,
                                                                  "j-node-0-1.j")
        assert "'/home/mpiuser/pi'" in by_hydra.summary and "No such file or directory" in by_hydra.summary
        torn_down = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 128 + signal.SIGPIPE, signal.SIGPIPE)
        assert classify(facts(line, launcher=torn_down)).reason == names.FAILURE_COMMAND_NOT_FOUND
        said = classify(facts(line, (0, "loss is nan"), launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3)))
        assert said.reason == names.FAILURE_PROGRAM, said  # a rank that printed it and exited 3 ran


def test_not_enough_slots_counts_them() -> None:
    found = classify(facts(*box("There are not enough slots available in the system to satisfy the 50",
                                "slots that were requested by the application:", "", "  hostname")))
    assert found.reason == names.FAILURE_NOT_ENOUGH_SLOTS
    assert "asked for 50 processes, but the hostfile offers 3 slots (3 hosts)" in found.summary
    assert "-n 3" in found.fix


def test_daemon_lost_from_mpirun_or_from_a_node_that_ended() -> None:
    found = classify(facts(*box("ORTE has lost communication with a remote daemon.", "",
                                "  HNP daemon   : [[8887,0],0] on node j-launcher-0-0",
                                "  Remote daemon: [[8887,0],2] on node j-node-0-1.j",
                                "", "This is usually due to either a failure of the TCP network")))
    assert (found.reason, found.pod, found.host) == (names.FAILURE_DAEMON_LOST, NODE1.name, "j-node-0-1.j")
    gone = PodFacts(NODE.name, NODE.host, exit_code=137, signal=9)
    node = classify(facts(pods=(gone, NODE1), culprit=NODE.name, launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True)))
    assert (node.reason, node.pod) == (names.FAILURE_DAEMON_LOST, NODE.name) and "SIGKILL" in node.summary


def test_nccl_error_and_timeout_before_the_exit_code_they_cause() -> None:
    warn = "j-node-0-0:4242:4300 [0] include/socket.h:409 NCCL WARN Net : Connect to 10.244.1.2<43215> failed"
    found = classify(facts((1, warn), *orte_exit(1, 1)))
    assert (found.reason, found.rank, found.pod) == (names.FAILURE_NCCL, 1, NODE.name)
    assert "an NCCL error" in found.summary
    timeout = ("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
               "Timeout(ms)=600000) ran for 600321 milliseconds before timing out.")
    assert "an NCCL timeout" in classify(facts((2, timeout))).summary
    torch = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269"
    first = classify(facts((1, torch), (1, warn)))  # stderr before stdout: NCCL's own line still names the host
    assert (first.pod, first.host) == (NODE.name, "j-node-0-0") and "NCCL WARN" in first.summary


WINDOW_RAISED = (0, "mpi4py.MPI.Exception: MPI_ERR_WIN: invalid window")
WINDOW_FATAL = ("[j-node-0-1:4242] *** An error occurred in MPI_Win_allocate",
                "[j-node-0-1:4242] *** reported by process [2815950849,3]",
                "[j-node-0-1:4242] *** on communicator MPI_COMM_WORLD",
                "[j-node-0-1:4242] *** MPI_ERR_WIN: invalid window")


def test_a_window_across_pods_under_open_mpi_4_says_what_can_make_one() -> None:
    """Open MPI 4.1 has no one-sided component between pods: the window's error, as mpi4py raises it in a rank
    or Open MPI's fatal error handler prints it, is the class's, before the exit it causes."""
    found = classify(facts(WINDOW_RAISED, *orte_exit(0, 1), implementation=names.OPEN_MPI))
    assert (found.reason, found.rank) == (names.FAILURE_ONE_SIDED, 0)
    assert "across the job's 3 pods" in found.summary and "MPI_ERR_WIN" in found.summary
    assert f"{names.ANNOTATION_MPI_IMPLEMENTATION}: {names.MPI_OPEN_MPI_5}" in found.fix
    assert "trainer.numNodes: 1 on a runtime with runLauncherAsNode: false" in found.fix
    fatal = classify(facts(*WINDOW_FATAL, implementation=names.OPEN_MPI))
    assert (fatal.reason, fatal.pod, fatal.host) == (names.FAILURE_ONE_SIDED, NODE1.name, "j-node-0-1")


def test_a_window_error_is_the_programs_where_open_mpi_4_is_not_its_cause() -> None:
    """Under another MPI (whose windows span pods), or with one host (where Open MPI 4.1's osc/sm serves), the
    error is the program's own."""
    other = classify(facts(WINDOW_RAISED, *prrte_exit(0, 1), implementation=names.MPI_OPEN_MPI_5))
    assert other.reason == names.FAILURE_PROGRAM
    one_host = dataclasses.replace(facts(WINDOW_RAISED, *orte_exit(0, 1), implementation=names.OPEN_MPI), hosts=1)
    assert classify(one_host).reason == names.FAILURE_PROGRAM


def test_what_is_left_is_the_program_failing() -> None:
    found = classify(facts((1, "loss is nan, giving up"), *orte_exit(1, 3)))
    assert (found.reason, found.rank) == (names.FAILURE_PROGRAM, 1)
    assert "rank 1 exited with code 3: loss is nan, giving up" in found.summary
    plain = classify(facts(launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3, last_line="doomed")))
    assert plain.reason == names.FAILURE_PROGRAM and "exited with code 3: doomed" in plain.summary
    untagged = classify(facts("[j-launcher-0-0:00036] plm:ssh: Warning: setpgid(39,39) failed", "loss is nan",
                              *prrte_exit(1, 3)))  # Open MPI 5 tags no rank: its last words are the untagged ones
    assert (untagged.reason, untagged.rank) == (names.FAILURE_PROGRAM, 1)
    assert "rank 1 exited with code 3: loss is nan;" in untagged.summary


# What mpirun, ssh and the MPI daemons print, printed by the program instead (api/trainer/launch_log.py): each line
# whole, as its tool prints it; the boxes' first sentences as a program would echo them.
LAUNCH_WORDS = (
    "mpiuser@j-node-0-1.j: Permission denied (publickey).",
    "ssh: Could not resolve hostname x: Name or service not known",
    "ssh: connect to host j-node-0-0.j port 2222: Connection refused",
    "There are not enough slots available in the system to satisfy the 9 slots",
    "mpirun was unable to find the specified executable file, and therefore",
    "bash: line 1: trian.py: command not found",
    "ORTE has lost communication with a remote daemon.",
    "mpirun noticed that process rank 1 with PID 43 on node j-node-0-0.j exited on signal 9 (Killed).",
    "[proxy:0:1@j-node-0-1.j] HYD_spawn (hydra_spawn.c:177): execvp error on file pi (No such file or directory)",
    "ls: cannot access '/x': No such file or directory",
)


def test_a_rank_that_prints_the_launch_tools_words_failed_itself() -> None:
    """Tagged (Open MPI 4, Hydra): the line is the rank's, whatever it says; the class is the program's, with
    the rank's exit code and last line."""
    for words in LAUNCH_WORDS:
        for exits in (orte_exit(1, 3), ()):  # Open MPI 4 reports the rank; Hydra passes its code on silently
            launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3)
            found = classify(facts((0, "step 1"), (1, words), *exits, launcher=launcher))
            assert found.reason == names.FAILURE_PROGRAM, (words, found)
            assert words in found.summary and "code 3" in found.summary, found.summary
            assert found.rank == (1 if exits else None)


def test_untagged_launch_words_need_the_tools_own_shape() -> None:
    """Untagged (Open MPI 5's ranks, the launcher's own command): the same line with no box around it, or
    followed by mpirun's report of a rank's exit rather than of a daemon that never started, is the program's."""
    for words in LAUNCH_WORDS:
        under_prterun = classify(facts(words, *prrte_exit(0, 3)))
        assert (under_prterun.reason, under_prterun.rank) == (names.FAILURE_PROGRAM, 0), (words, under_prterun)
        assert f"rank 0 exited with code 3: {words}" in under_prterun.summary
        alone = classify(facts(words, launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3)))
        assert alone.reason == names.FAILURE_PROGRAM and f"exited with code 3: {words}" in alone.summary, alone


def test_ssh_needs_the_mpi_launchers_word_that_a_daemon_never_started() -> None:
    refused = "mpiuser@j-node-0-1.j: Permission denied (publickey)."
    for after in (PRRTE_DAEMON_BOX, [MPICH_PROXY_FAILED], ORTE_BOX):
        found = classify(facts(refused, *after))
        assert (found.reason, found.pod) == (names.FAILURE_SSH_AUTH, NODE1.name), after
    unknown = classify(facts("ssh: Could not resolve hostname j-node-0-7.j: Name or service not known",
                             *PRRTE_DAEMON_BOX))
    assert unknown.reason == names.FAILURE_HOST_UNRESOLVABLE
    said_by_rank = classify(facts((1, refused), *PRRTE_DAEMON_BOX))  # a rank's line never counts
    assert said_by_rank.reason == names.FAILURE_PROGRAM


def test_one_mpis_words_do_not_count_under_another() -> None:
    """Untagged, Hydra's line has Hydra's shape whoever printed it: once the runner says Open MPI 5 ran, it is
    a program's; Open MPI's boxes likewise under Hydra."""
    refused = "mpiuser@j-node-0-1.j: Permission denied (publickey)."
    for impl in ("", names.MPI_MPICH, names.MPI_INTEL):
        assert classify(facts(refused, MPICH_PROXY_FAILED, implementation=impl)).reason == names.FAILURE_SSH_AUTH
    untagged = classify(facts(refused, MPICH_PROXY_FAILED, *prrte_exit(1, 3), implementation=names.MPI_OPEN_MPI_5))
    assert (untagged.reason, untagged.rank) == (names.FAILURE_PROGRAM, 1)
    assert classify(facts(refused, *ORTE_BOX, implementation=names.OPEN_MPI)).reason == names.FAILURE_SSH_AUTH
    slots = box("There are not enough slots available in the system to satisfy the 9", "slots")
    under_hydra = classify(facts(*slots, implementation=names.MPI_MPICH,
                                 launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 3)))
    assert under_hydra.reason == names.FAILURE_PROGRAM and "exited with code 3" in under_hydra.summary


def test_the_launchers_127_is_the_programs_when_ranks_ran() -> None:
    """Hydra passes a rank's exit code on as mpiexec's own, without a word: once a rank has printed, a 127 is
    not the launcher's command missing."""
    launcher = PodFacts(LAUNCHER.name, LAUNCHER.host, True, 127)
    found = classify(facts((0, "/etc/hostname: 1: vm: not found"), "IPL WARN> IPL_init_numa_nodes", launcher=launcher))
    assert found.reason == names.FAILURE_PROGRAM and "code 127: rank 0: /etc/hostname: 1: vm" in found.summary
    ls = classify(facts("ls: cannot access '/x': No such file or directory",
                        launcher=PodFacts(LAUNCHER.name, LAUNCHER.host, True, 2)))
    assert ls.reason == names.FAILURE_PROGRAM and "code 2: ls: cannot access '/x'" in ls.summary


def test_a_tail_that_begins_inside_a_box() -> None:
    """The classifier reads the log's last lines: a box cut at the top leaves an odd rule, and the boxes are
    paired from the end, where Open MPI never leaves one open."""
    found = classify(facts("  2. The --host command line parameter", "launch.", RULE,
                           *box("There are not enough slots available in the system to satisfy the 9",
                                "slots that were requested by the application:")))
    assert found.reason == names.FAILURE_NOT_ENOUGH_SLOTS


def test_the_message_is_class_summary_fix_and_link() -> None:
    found = classify(facts(*box("There are not enough slots available in the system to satisfy the 9", "slots")))
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
