"""The on-disk layout of one local cluster, all under `$MPIJOB_HOME`.

Two servers with different homes share nothing, so everything a server writes lives here.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.core.tokens import CA_FILE


def default_home() -> Path:
    """`$MPIJOB_HOME`, else `$XDG_STATE_HOME/mpijob`, else `~/.local/state/mpijob`."""
    if env := os.environ.get("MPIJOB_HOME"):
        return Path(env).expanduser().resolve()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser().resolve() / "mpijob"


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def default(cls) -> Home:
        return cls(default_home())

    def ensure(self) -> Home:
        for d in (self.root, self.logs, self.jobs, self.tls):
            d.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        os.chmod(self.tls, 0o700)
        return self

    @property
    def db(self) -> Path:
        return self.root / "cluster.db"

    @property
    def logs(self) -> Path:
        """Container logs: `logs/<namespace>/<pod>/<container>.log`."""
        return self.root / "logs"

    @property
    def jobs(self) -> Path:
        """Per-TrainJob working directories (keys, hostfile, homes, sshd configs)."""
        return self.root / "jobs"

    def job_dir(self, namespace: str, name: str, uid: str) -> Path:
        """One TrainJob's working directory, `jobs/<namespace>_<name>_<uid[:8]>`: a job re-created under
        the same name gets a directory of its own."""
        return self.jobs / f"{namespace}_{name}_{uid[:8]}"

    @property
    def pods(self) -> Path:
        """Per-bare-pod working directories (a pod no job owns: its sandbox's files, its supervisor's records)."""
        return self.root / "pods"

    def pod_dir(self, namespace: str, name: str, uid: str) -> Path:
        """One bare pod's directory, `pods/<namespace>_<name>_<uid[:8]>`, named as a job's is."""
        return self.pods / f"{namespace}_{name}_{uid[:8]}"

    @property
    def volumes(self) -> Path:
        """PersistentVolumeClaims' data: `volumes/pvc-<claim uid>`, kept while the claim exists
        (`mpijob.controllers.claims`)."""
        return self.root / "volumes"

    @property
    def tls(self) -> Path:
        return self.root / "tls"

    def ca_pem(self) -> str:
        """The cluster CA's certificate (PEM), which the server's TLS set-up writes; "" before it exists."""
        try:
            return (self.tls / CA_FILE).read_text()
        except FileNotFoundError:
            return ""

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def service_account_key_file(self) -> Path:
        return self.tls / "service-account.key"

    def service_account_key(self) -> bytes:
        """The secret ServiceAccount tokens are signed with (`mpijob.api.core.tokens`): the server verifies
        them and the kubelet issues them, so whichever comes first makes it (32 random bytes, mode 0600)."""
        path = self.service_account_key_file
        try:
            return path.read_bytes()
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_bytes()
        key = secrets.token_bytes(32)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return key

    @property
    def tokens(self) -> Path:
        """Static bearer tokens, kube-apiserver's `--token-auth-file` format."""
        return self.root / "tokens.csv"

    @property
    def pidfile(self) -> Path:
        return self.root / "server.pid"

    @property
    def server_log(self) -> Path:
        return self.root / "server.log"

    @property
    def audit_log(self) -> Path:
        """The audit log: `audit.k8s.io/v1` Events, one JSON object a line (mode 0600; rotated to
        `audit.log.1` … `audit.log.N` by size, see `mpijob.store.audit`)."""
        return self.root / "audit.log"

    @property
    def history(self) -> Path:
        """The job history: every TrainJob's record, kept after the job (SQLite, `mpijob.store.history`)."""
        return self.root / "history.db"

    @property
    def state_file(self) -> Path:
        """JSON written once the server is ready: pid, port, sandbox mode."""
        return self.root / "server.json"
