"""A pod's sandbox: the files it sees and the command line that starts it.

Three modes, chosen once per server (`mpijob server status` shows which, and what holds in it):

* `namespace` (root, and `unshare` works): each pod is a private mount + PID + UTS namespace in its job's
  own network namespace (`network.py`). Inside it the pod sees, like a container, its own empty `/run`
  (with sshd's `/run/sshd`) and `/dev/shm`, its own `/etc/hosts` (Trainer's host names → the job's pod
  addresses), `/etc/passwd` with the job
  user, its own `/proc`, `/etc/ssh/ssh_config`, `/etc/mpi/hostfile` (launcher), the job key at `sshAuthMountPath`, its
  ServiceAccount's token, namespace and the cluster CA at `/var/run/secrets/kubernetes.io/serviceaccount`
  (unless it does not automount them), Trainer's status token and CA at `/var/run/secrets/kubeflow/trainer`
  (`trainer_status.py`) and a private writable home, then drops to `runAsUser`. PID 1 of
  the namespace is the pod; killing it (or the server dying: `--pdeathsig`/`--kill-child`) takes every
  process of the pod with it, including ranks and `orted`s started through its sshd.
* `rootless` (not root, unprivileged user namespaces allowed): the same namespaces, owned by a user namespace
  of the job's own (`network.HeldNetwork`), in which the server's user is root; a pod's setup runs as that
  root, then the pod drops into a user namespace of its own that maps its `runAsUser` to the server's user,
  as rootless Podman's `--userns=keep-id` does: its programs see their uid, and every file they write is
  the server's user's on the machine. Its sshd runs as that user (no privilege separation without root).
* `process` (where neither works): plain process groups running as the server's user. Files stay in
  the job directory; Open MPI is pointed at them through its environment (the hostfile variable, an
  `ssh -F` agent), and the launcher runs an sshd too when it is a host. Programs that hard-code
  `/etc/mpi/hostfile` need the namespace mode. The ServiceAccount files are in the pod's directory,
  `$HOME/../serviceaccount/` of its container, not at kube's path (which the host would share).

Both modes give every process of a pod kube's `KUBERNETES_SERVICE_HOST`/`_PORT` variables (and their
docker-link twins), so `rest.InClusterConfig` works in a pod: the `kubernetes` Service's address in the
job's own network (`network.py`) in namespace mode, the server's own address in process mode.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mpijob.api import names, sandbox_mode
from mpijob.api.core import tokens, volumes
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import mpi_impl
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.controllers.kubelet import cgroups, mpi_installs, rank_agent, rootless
from mpijob.controllers.kubelet.mpi_env import POD_TMP

SSH_PORT = 2222
# The key exchange of mpirun's logins: OpenSSH 9's default (sntrup761x25519, post-quantum) took half of
# each login here (0.28 s against 0.14 s), and a 64-node start makes 64 of them on 2 cores. The logins stay
# on this machine, over its loopback or a job's own network; curve25519 was OpenSSH's default until 9.0.
KEX = "curve25519-sha256"
FSTAB, HIDING_FSTAB = "fstab", "fstab-hiding"  # in the pod's directory: its mounts, for `mount --all` (`argv`)
MKDIR = "X-mount.mkdir"  # util-linux mount's option: the mount point is made when missing
SSHD = shutil.which("sshd", path="/usr/sbin:/usr/bin:/sbin:/bin") or "/usr/sbin/sshd"
STAGE = Path("/run/mpijob-stage")  # mount point for the _reachable() staging binds, in the pod's own /run
HIDING = "mpijob-hiding"  # the source of the tmpfs that hides a directory the pod's user cannot enter (_reachable)
# What Debian's sshd needs and only its service unit creates (tmpfiles.d): the privilege separation
# directory, root-owned and not writable by others. A pod must not rely on the host's.
PRIVSEP_DIR = "/run/sshd"
RESOLV = Path("/etc/resolv.conf")  # a link into /run on systemd-resolved hosts, which a pod's own /run hides
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SERVICE_ACCOUNT_DIR = "serviceaccount"  # in the pod's directory: what is mounted at kube's token path
TRAINER_STATUS_DIR = "trainer-status"  # in the pod's directory: what is mounted at Trainer's (trainer_status.py)
# The job's rank output (`rank_agent.py`): in the job's directory, where each pod sees it in namespace mode
# (in its own /run, as STAGE), and the agent's copy in it, readable by every user of the job's pods
RANK_OUTPUT_DIR = "rank-output"
RANK_OUTPUT_MOUNT = "/run/mpijob-rank-output"
RANK_AGENT_FILE, RANK_LAUNCH_FILE = "rank_agent.py", "rank_agent.sh"


@dataclass(frozen=True)
class ServiceAccountFiles:
    """What the kubelet writes into a pod's projected ServiceAccount volume."""

    token: str  # bound to the pod (`tokens.for_pod`)
    namespace: str
    ca: bytes  # the cluster CA, PEM


def kubernetes_env(host: str, port: int) -> dict[str, str]:
    """The variables the kubelet gives every container for the `kubernetes` Service of `default` (its
    port is named `https`), here the local server's address."""
    tcp = f"tcp://{host}:{port}"
    prefix = f"KUBERNETES_PORT_{port}_TCP"
    return {names.KUBERNETES_SERVICE_HOST: host, names.KUBERNETES_SERVICE_PORT: str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": tcp, prefix: tcp,
            f"{prefix}_PROTO": "tcp", f"{prefix}_PORT": str(port), f"{prefix}_ADDR": host}


@dataclass(frozen=True)
class Detected:
    mode: SandboxMode
    why: str = ""  # why not a stronger mode: what is missing and what would enable it ("" when none is)


def detect_mode() -> Detected:
    """`$MPIJOB_SANDBOX` if set; else `namespace` for root, `rootless` for another user whose kernel
    allows unprivileged user namespaces, the process sandbox where neither works, saying why."""
    if forced := SandboxMode.parse(os.environ.get(sandbox_mode.ENV)):
        return Detected(forced, f"chosen by ${sandbox_mode.ENV}")
    if not shutil.which("unshare"):
        return Detected(SandboxMode.PROCESS, "util-linux's unshare is not installed (apt-get install util-linux)")
    if os.geteuid() == 0:
        probe = subprocess.run(["unshare", "--mount", "--pid", "--uts", "--fork", "--propagation", "private", "true"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return Detected(SandboxMode.NAMESPACE)
        return Detected(SandboxMode.PROCESS, f"root, but unshare failed: {probe.stderr.strip()}")
    if why := rootless.why_not():
        return Detected(SandboxMode.PROCESS, why)
    return Detected(SandboxMode.ROOTLESS)


def guarantees(mode: SandboxMode) -> dict[str, bool]:
    """Whether each of `sandbox_mode.GUARANTEES` holds for this server's pods."""
    held = {key: mode in modes for key, (_, modes) in sandbox_mode.GUARANTEES.items()}
    held["limits"] = held["limits"] and cgroups.available()
    return held


def check_mode(mode: SandboxMode, home: Path) -> None:
    """Refuse, at server start, a set-up whose pods could not start, with the fix."""
    if mode.private:
        for what, path in (("MPIJOB_HOME", home), ("the Python environment", Path(sys.prefix))):
            if path.resolve().is_relative_to("/run"):
                raise RuntimeError(f"{what} ({path}) is under /run, which every pod gets as its own empty "
                                   "directory (as a container does); use a directory elsewhere")
        return
    try:
        pwd.getpwuid(os.geteuid())
    except KeyError:
        raise RuntimeError(
            f"uid {os.geteuid()} has no entry in /etc/passwd, so the process sandbox's sshd cannot log it in; "
            "add the user (useradd), or run the server as root for the namespace sandbox") from None


def pod_path(mpi: Path | None = None) -> str:
    """Pods find the runtime's MPI install first (`mpi_installs.prefix`), then the server's own Python
    environment (the local 'image' is this machine)."""
    first = f"{mpi / 'bin'}:" if mpi else ""
    return f"{first}{Path(sys.executable).parent}:{SYSTEM_PATH}"


@dataclass(frozen=True)
class User:
    uid: int
    gid: int
    name: str
    home: str
    groups: tuple[int, ...] = ()  # supplementary groups (the pod's fsGroup), listed in the pod's /etc/group


def job_user(plan: RunPlan, pod: PodPlan, mode: SandboxMode) -> User:
    """Who the pod runs as, as it sees itself. The namespace and rootless modes honour the ids its SCC
    admission wrote into the plan (`api/openshift/scc.py`: its namespace's first UID unless it asked for another
    and may use it; rootless maps it to the server's user, which has no supplementary groups to give); the
    process mode runs everything as the server's own user (the namespaces' ranges are not applied there)."""
    if mode == SandboxMode.PROCESS:
        pw = pwd.getpwuid(os.geteuid())
        return User(pw.pw_uid, pw.pw_gid, pw.pw_name, pw.pw_dir)
    uid = pod.run_as_user if pod.run_as_user is not None else 0
    gid = pod.run_as_group if pod.run_as_group is not None else uid
    if uid == 0:
        return User(0, gid, "root", "/root")
    mount = plan.ssh_auth_mount_path.rstrip("/")
    home = str(Path(mount).parent) if mount.startswith("/home/") and mount.endswith("/.ssh") else "/home/mpiuser"
    fs_group = pod.fs_group if mode != SandboxMode.ROOTLESS else None  # rootless: no group to give
    groups = (fs_group,) if fs_group is not None and fs_group != gid else ()
    return User(uid, gid, Path(home).name, home, groups)


def on_machine(user: User, mode: SandboxMode) -> User:
    """The pod's user as this machine's files see it: itself, but the server's own user, without groups,
    for a rootless pod (whose user namespace maps its uid there)."""
    if mode != SandboxMode.ROOTLESS:
        return user
    return User(os.geteuid(), os.getegid(), user.name, user.home)


class JobFiles:
    """The job directory: keys, hostfile, per-pod homes and configs. Mode 0700, keys 0600."""

    def __init__(self, root: Path, mode: SandboxMode) -> None:
        self.root, self.mode = root, mode
        # pod name → the shell lines mounting its volumes in its namespace (`volumes.setup`, namespace mode)
        self.volume_mounts: dict[str, list[str]] = {}

    def own(self, path: Path, user: User) -> None:
        """Give `path` to the pod's user. Rootless, every pod's user is the server's user on the machine
        (its own user namespace maps it there), so what the server writes is the pod's already."""
        if self.mode != SandboxMode.ROOTLESS:
            os.chown(path, user.uid, user.gid)

    @property
    def keys(self) -> Path:
        return self.root / "ssh"

    @property
    def hostfile(self) -> Path:
        return self.root / "mpi" / "hostfile"

    @property
    def ssh_config(self) -> Path:
        return self.root / "ssh_config"

    @property
    def host_key(self) -> Path:
        return self.root / "ssh_host_ed25519_key"

    def pod_dir(self, pod: PodPlan) -> Path:
        return self.root / "pods" / pod.hostname

    @property
    def rank_output(self) -> Path:
        return self.root / RANK_OUTPUT_DIR

    def rank_agent_paths(self) -> tuple[str, str, str]:
        """The rank agent's launcher's, the agent's and the rank-output directory's paths, as pods see them."""
        seen = Path(RANK_OUTPUT_MOUNT) if self.mode.private else self.rank_output
        return str(seen / RANK_LAUNCH_FILE), str(seen / RANK_AGENT_FILE), str(seen)

    def write_rank_output(self, captured: bool) -> None:
        """An empty rank-output directory for a run (none when its output is not `captured`), holding the
        agent: sticky and writable by all (1733), so the ranks of each of the job's users add their files
        and none lists or removes another's."""
        d = self.rank_output
        shutil.rmtree(d, ignore_errors=True)
        if not captured:
            return
        d.mkdir(parents=True)
        os.chmod(d, 0o1733)
        shutil.copyfile(rank_agent.__file__, d / RANK_AGENT_FILE)
        _write(d / RANK_LAUNCH_FILE, rank_agent.LAUNCH, 0o644)
        os.chmod(d / RANK_AGENT_FILE, 0o644)

    def service_account_dir(self, pod: PodPlan) -> Path:
        """The pod's ServiceAccount volume: mounted at kube's path in namespace mode, read where it is in
        process mode."""
        return self.pod_dir(pod) / SERVICE_ACCOUNT_DIR

    def trainer_status_dir(self, pod: PodPlan) -> Path:
        """The pod's Trainer status volume (`trainer_status.py`), mounted or read as the ServiceAccount's."""
        return self.pod_dir(pod) / TRAINER_STATUS_DIR

    def write_trainer_status(self, pod: PodPlan, user: User, token: str, ca: bytes) -> None:
        """The job-audience token (0600, the pod's user's, as the ServiceAccount's) and the CA."""
        d = self.trainer_status_dir(pod)
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
        _write(d / names.TRAINER_STATUS_TOKEN_FILE, token, 0o600)
        self.own(d / names.TRAINER_STATUS_TOKEN_FILE, user)
        _write(d / tokens.CA_FILE, ca.decode(), 0o644)

    def write_service_account(self, pod: PodPlan, user: User, files: ServiceAccountFiles | None) -> None:
        """Write (or, for a pod that does not automount its token, remove) the pod's ServiceAccount volume:
        `token` 0600 owned by the pod's user (pods share this machine, so kube's 0644 would show every
        pod's token to every local user), `namespace` and `ca.crt` 0644, the directory 0755."""
        d = self.service_account_dir(pod)
        if files is None:
            shutil.rmtree(d, ignore_errors=True)
            return
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
        token = d / names.SERVICE_ACCOUNT_TOKEN_PATH
        _write(token, files.token, 0o600)
        self.own(token, user)
        _write(d / names.SERVICE_ACCOUNT_NAMESPACE_PATH, files.namespace, 0o644)
        _write(d / tokens.CA_FILE, files.ca.decode(), 0o644)

    def write(self, plan: RunPlan, private_pem: str, public_line: str, ips: dict[str, str], user: User) -> None:
        """Write everything the job's pods need; idempotent."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        self.keys.mkdir(exist_ok=True)
        _write(self.keys / "id_rsa", private_pem, 0o600)
        public_line = public_line.rstrip("\n") + "\n"  # the Secret's bytes, verbatim
        _write(self.keys / "id_rsa.pub", public_line, 0o644)
        _write(self.keys / "authorized_keys", public_line, 0o600)
        self.hostfile.parent.mkdir(exist_ok=True)
        _write(self.hostfile, plan.hostfile, 0o444)
        if not self.host_key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{plan.job}-host", "-f", str(self.host_key)],
                check=True, capture_output=True,
            )
        _write(self.ssh_config, self._ssh_config(plan, ips), 0o644)
        for path in (self.keys, *self.keys.iterdir(), self.hostfile.parent):
            self.own(path, user)

    def _ssh_config(self, plan: RunPlan, ips: dict[str, str]) -> str:
        lines = []
        if self.mode == SandboxMode.PROCESS:  # no private /etc/hosts: name → address here instead
            for pod in plan.pods:
                lines += [f"Host {pod.host} {pod.hostname}", f"  HostName {ips[pod.hostname]}"]
        keys = self.keys if self.mode == SandboxMode.PROCESS else Path(plan.ssh_auth_mount_path)
        identity = keys / "id_rsa"
        lines += [
            "Host *",
            "  StrictHostKeyChecking no",
            "  UserKnownHostsFile /dev/null",
            f"  Port {SSH_PORT}",
            f"  IdentityFile {identity}",
            "  IdentitiesOnly yes",
            "  BatchMode yes",
            "  LogLevel ERROR",
            f"  KexAlgorithms {KEX}",
        ]
        return "\n".join(lines) + "\n"

    def write_pod(self, plan: RunPlan, pod: PodPlan, ips: dict[str, str], user: User,
                  session_env: dict[str, str]) -> Path:
        """Per-pod files: hosts, passwd/group (job user), home, sshd_config."""
        d = self.pod_dir(pod)
        home = d / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.own(home, user)
        if self.mode == SandboxMode.PROCESS:
            (d / POD_TMP).mkdir(mode=0o700, exist_ok=True)
            self.own(d / POD_TMP, user)
        own = ips[pod.hostname]
        hosts = ["127.0.0.1 localhost", f"127.0.0.1 {pod.host} {pod.hostname}"]
        hosts += [f"{ips[p.hostname]} {p.host} {p.hostname}" for p in plan.pods if p.hostname != pod.hostname]
        _write(d / "hosts", "\n".join(hosts) + "\n", 0o644)
        if self.mode.private:
            _write(d / "passwd", _passwd(user), 0o644)
            _write(d / "group", _group(user), 0o644)
            if resolver := _resolver_under_run():  # the pod's own copy, as the kubelet writes one per pod
                _write(d / "resolv.conf", resolver.read_text(), 0o644)
        if self.runs_sshd(plan, pod) or self.launcher_sshd(plan, pod):
            if self.mode == SandboxMode.PROCESS and os.geteuid() == 0:  # no private /run here: make what sshd needs
                os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
            _write(d / "sshd_config", self._sshd_config(plan, user, own, session_env,
                                                        self.launcher_sshd(plan, pod)), 0o600)
        if pod.is_launcher:  # Hydra's default options (rank tags), read from the launcher's home
            config, _ = mpi_impl.IMPLEMENTATIONS[plan.mpi_implementation].launcher_config(user.home)
            if config:
                _write(home / mpi_impl.HYDRA_CONFIG_FILE, config, 0o644)
                self.own(home / mpi_impl.HYDRA_CONFIG_FILE, user)
        return d

    def runs_sshd(self, plan: RunPlan, pod: PodPlan) -> bool:
        """Node pods run our managed sshd; in process mode the launcher too when it is a host,
        because without a private /etc/hosts Open MPI cannot tell that host is itself."""
        return pod.runs_sshd or (self.mode == SandboxMode.PROCESS and pod.is_launcher and pod.in_hostfile)

    def launcher_sshd(self, plan: RunPlan, pod: PodPlan) -> bool:
        """In its own namespaces, a launcher that is a host runs an sshd beside its command when its MPI
        reaches every host over ssh, itself included (`Implementation.ssh_to_itself`)."""
        return (self.mode.private and pod.is_launcher and pod.in_hostfile
                and mpi_impl.IMPLEMENTATIONS[plan.mpi_implementation].ssh_to_itself)

    def _sshd_config(self, plan: RunPlan, user: User, ip: str, session_env: dict[str, str],
                     loopback: bool = False) -> str:
        keys = self.keys if self.mode == SandboxMode.PROCESS else Path(plan.ssh_auth_mount_path)
        setenv = " ".join(f'{k}="{_sshd_quote(v)}"' for k, v in session_env.items())
        lines = [
            f"ListenAddress {ip}:{SSH_PORT}",
            f"ListenAddress 127.0.0.1:{SSH_PORT}" if loopback else "",  # its own name is 127.0.0.1 in its hosts
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {keys / 'authorized_keys'}",
            f"AllowUsers {user.name}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password" if user.uid == 0 else "PermitRootLogin no",
            "PidFile none",
            "PrintMotd no",
            "LogLevel ERROR",
            "MaxStartups 200",
            f"SetEnv {setenv}" if setenv else "",
        ]
        return "\n".join(ln for ln in lines if ln) + "\n"

    def argv(
        self, plan: RunPlan, pod: PodPlan, user: User, command: list[str], env: dict[str, str],
        cgroup_procs: Sequence[Path] = (),
    ) -> list[str]:
        """The command line that starts the pod in its sandbox (in the cgroups whose `cgroup.procs` are given).
        Its bind mounts are made by one `mount --all` from a table written beside its other files (`FSTAB`): a
        `mkdir` and a `mount` per path cost a 4-node job ~60 ms of its start. Not its /run, /dev/shm and
        /proc: `mount --all` skips a file system that seems mounted already, and the machine's are alike."""
        d = self.pod_dir(pod)
        run_sshd = self.runs_sshd(plan, pod)
        if self.mode == SandboxMode.PROCESS:
            if run_sshd and not pod.is_launcher:
                return self.sshd_argv(pod)
            return ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *_in_working_dir(pod, command)]
        mounts = [
            ("bind", d / "hosts", "/etc/hosts"),
            ("bind", d / "passwd", "/etc/passwd"),
            ("bind", d / "group", "/etc/group"),
            ("bind", d / "home", user.home),
        ]
        if plan.ssh_auth_mount_path:  # an MPI job's ssh client config and key (a bare pod has neither)
            mounts[3:3] = [("bind", self.ssh_config, "/etc/ssh/ssh_config")]
            mounts.append(("bind", self.keys, plan.ssh_auth_mount_path))
        if pod.is_launcher:
            mounts.append(("bind", self.hostfile.parent, "/etc/mpi"))
        if self.service_account_dir(pod).is_dir():  # under /var/run, which is /run: made in the pod's own /run
            mounts.append(("bind", self.service_account_dir(pod), names.SERVICE_ACCOUNT_MOUNT_PATH))
        if self.trainer_status_dir(pod).is_dir():
            mounts.append(("bind", self.trainer_status_dir(pod), names.TRAINER_STATUS_MOUNT_PATH))
        if self.rank_output.is_dir():
            mounts.append(("bind", self.rank_output, RANK_OUTPUT_MOUNT))
        # The shell stays PID 1 and runs the container command as its child: it exits with the
        # command's status (128 + signal when killed), which util-linux's `unshare --fork` would
        # otherwise turn into a bare 1 for a child killed by a signal.
        script = ["set -e"]
        script += [f"echo 0 > {shlex.quote(str(procs))}" for procs in cgroup_procs]
        if self.mode == SandboxMode.ROOTLESS:  # a root of its own, where its mount points can be made
            script += rootless.own_root()
            script += rootless.overlays([*(dst for _, _, dst in mounts), *volumes.mount_paths(pod.pod_spec),
                                         *([pod.working_dir] if pod.working_dir else [])])
        script += [  # the pod's own /run and /dev/shm, as a container has: nothing of the host's is relied on
            "mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run",
            f"mkdir -m 0755 {PRIVSEP_DIR}",
            "mkdir -p /dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm",
        ]
        if self.mode != SandboxMode.ROOTLESS:  # (rootless: mounted with its own root, `rootless.own_root`)
            # the pod's own PID namespace's /proc, as a container has: a process that asks /proc about
            # itself by its PID (hwloc, which Intel MPI's Hydra uses) finds itself, not a host process
            script.append("mount -t proc -o nosuid,nodev,noexec proc /proc")
        if resolver := _resolver_under_run():
            real = shlex.quote(str(resolver))
            script.append(f"mkdir -p {shlex.quote(str(resolver.parent))} && : > {real} && "
                          f"mount --bind {shlex.quote(str(d / 'resolv.conf'))} {real}")
        read_only = ("/etc/mpi", names.SERVICE_ACCOUNT_MOUNT_PATH, names.TRAINER_STATUS_MOUNT_PATH,
                     # rootless, the pod's user owns its files (the server's user does): not to be changed
                     *(("/etc/hosts", "/etc/passwd", "/etc/group", "/etc/ssh/ssh_config")
                       if self.mode == SandboxMode.ROOTLESS else ()))
        binds = [(str(src), dst, "none", f"bind,{'ro,' if dst in read_only else ''}{MKDIR}") for _, src, dst in mounts]
        script.append(_mount_all(d / FSTAB, binds))
        script += self.volume_mounts.get(pod.name, [])  # the pod's volumes, at their mountPaths (volumes.py)
        if hiding := self._reachable(user):  # last: what it hides may hold the volumes' sources
            script.append(_mount_all(d / HIDING_FSTAB, hiding))
        script.append(f"hostname {shlex.quote(pod.hostname)}")
        sshd = f"{SSHD} -D -e -f {shlex.quote(str(d / 'sshd_config'))}"
        if run_sshd:
            script.append(f"{self._as_sshd_user(user)}{sshd}")
        else:
            if self.launcher_sshd(plan, pod):  # a child of PID 1, so it ends with the pod
                script.append(f"{self._as_sshd_user(user)}{sshd} &")
            envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
            script.append(f'cd {shlex.quote(user.home)}; {self.drop(user)}env -i {envs} "$@"')
            command = _in_working_dir(pod, command)
        return [
            "setpriv", "--pdeathsig", "KILL", "--",
            "unshare", "--mount", "--pid", "--uts", "--fork", "--kill-child", "--propagation", "private", "--",
            "/bin/sh", "-c", "\n".join(script), pod.hostname, *command,
        ]

    def drop(self, user: User) -> str:
        """The prefix that runs a command as the pod's user: with its groups and no capabilities (root); in
        a user namespace of its own mapping it to the server's user (rootless, where setgroups is denied)."""
        if not user.uid:
            return ""
        if self.mode == SandboxMode.ROOTLESS:
            return f"unshare --user --map-user={user.uid} --map-group={user.gid} "
        return f"setpriv --reuid={user.uid} --regid={user.gid} --init-groups --inh-caps=-all "

    def _as_sshd_user(self, user: User) -> str:
        """Rootless, a pod's sshd runs as the pod's user, as the process sandbox's does: root's sshd drops
        privileges to a user (`sshd`) and sets groups, neither of which a one-uid user namespace allows."""
        return self.drop(user) if self.mode == SandboxMode.ROOTLESS else ""

    def _reachable(self, user: User) -> list[tuple[str, str, str, str]]:
        """Let a non-root pod reach the server's Python and the job directory when they sit under a
        directory it cannot enter (pyenv or MPIJOB_HOME under a 0700 /root): inside the pod only, that
        directory becomes a tmpfs holding just those paths, bound back from a staging mount. Rows of the pod's
        mount table; the tmpfs's source is a name no file system of the machine has, or `mount --all` could
        take the directory for mounted already and leave it open."""
        if self.mode == SandboxMode.ROOTLESS:  # the pod's user is the server's, which reaches them already
            return []
        needed = [Path(sys.base_prefix), Path(sys.prefix), self.root]
        if (installs := mpi_installs.root()).is_dir() and not installs.is_relative_to(sys.prefix):
            needed.append(installs)  # $MPIJOB_MPI_DIR elsewhere
        blocked = {b for p in needed if user.uid and (b := _closed_ancestor(p))}
        rows = []
        for top in sorted(blocked):
            stage = STAGE / top.relative_to("/")
            rows += [(str(top), str(stage), "none", f"bind,{MKDIR}"), (HIDING, str(top), "tmpfs", "mode=0755")]
            rows += [(str(stage / p.relative_to(top)), str(p), "none", f"bind,{MKDIR}")
                     for p in needed if p.is_relative_to(top) and p != top]
        return rows

    def sshd_argv(self, pod: PodPlan) -> list[str]:
        return [SSHD, "-D", "-e", "-f", str(self.pod_dir(pod) / "sshd_config")]

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _in_working_dir(pod: PodPlan, command: list[str]) -> list[str]:
    """`command`, run in the container's `workingDir` when it has one: made if missing, as a container
    runtime makes it, but as the pod's user, on this machine's files; a clear failure otherwise."""
    if not pod.working_dir:
        return command
    enter = ('{ mkdir -p "$0" && cd "$0"; } 2>/dev/null || { echo "mpijob: workingDir $0: uid $(id -u) cannot '
             "create or enter it; a pod on the local cluster uses this machine's files (see Files in the README)\" "
             '>&2; exit 1; }; exec "$@"')
    return ["/bin/sh", "-c", enter, pod.working_dir, *command]


def _resolver_under_run() -> Path | None:
    """The file /etc/resolv.conf leads to, when that lies under /run."""
    real = RESOLV.resolve()
    return real if real.is_relative_to("/run") and real.is_file() else None


def _closed_ancestor(path: Path) -> Path | None:
    """The first directory on the way to `path` that other users cannot enter."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def _write(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _mount_all(path: Path, rows: list[tuple[str, str, str, str]]) -> str:
    """The shell line that makes the mounts `rows` (fstab's first four fields) in their order, from a table
    written at `path`."""
    _write(path, "".join(" ".join(map(_fstab_field, (*row, "0", "0"))) + "\n" for row in rows), 0o644)
    return f"mount --all --fstab {shlex.quote(str(path))}"


def _fstab_field(value: str) -> str:
    """A field of an fstab line: its blanks and backslashes escaped in octal, as fstab(5) reads them."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in value)


def _sshd_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _passwd(user: User) -> str:
    """The host's accounts minus any that clash with the job user, plus the job user."""
    keep = [e for e in pwd.getpwall() if e.pw_uid != user.uid and e.pw_name != user.name]
    lines = [f"{e.pw_name}:x:{e.pw_uid}:{e.pw_gid}:{e.pw_gecos}:{e.pw_dir}:{e.pw_shell}" for e in keep]
    lines.append(f"{user.name}:x:{user.uid}:{user.gid}::{user.home}:/bin/bash")
    return "\n".join(lines) + "\n"


def _group(user: User) -> str:
    """The host's groups minus any that clash with the job user's, plus its own; the user is a member of
    its supplementary groups, so `setpriv --init-groups` and sshd's sessions (ranks) both get them."""
    keep = [g for g in grp.getgrall() if g.gr_gid != user.gid and g.gr_name != user.name]
    lines = [f"{g.gr_name}:x:{g.gr_gid}:{','.join([*g.gr_mem, *([user.name] if g.gr_gid in user.groups else [])])}"
             for g in keep]
    lines.append(f"{user.name}:x:{user.gid}:")
    known = {g.gr_gid for g in keep}
    lines += [f"fsgroup-{gid}:x:{gid}:{user.name}" for gid in user.groups if gid not in known]
    return "\n".join(lines) + "\n"
