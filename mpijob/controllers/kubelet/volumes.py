"""The kubelet's part of pod volumes (namespace sandbox): each volume set up on this machine, then mounted
at its `mountPath` in the pod's own mount namespace, so its sshd sessions (the ranks) see it too
(docs/volumes.md).

Where each volume lives: a claim's directory is the provisioner's (`controllers/claims.py`); a hostPath is
the machine's path, checked (and made, for the `...OrCreate` types) as the kubelet checks it; an emptyDir
is a fresh directory of the pod's (a tmpfs of the pod's own for `medium: Memory`); configMap, secret,
downwardAPI and projected volumes are files the kubelet writes into the pod's directory. A pod's
`fsGroup` becomes the group of its emptyDirs, claims and file volumes, as the kubelet's
`SetVolumeOwnership` makes it, so the pod's non-root user can use them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mpijob.api import Obj, names
from mpijob.api.core import volumes as v
from mpijob.api.core.quantity import quantity_value
from mpijob.api.core.resources import CONFIGMAPS, PERSISTENT_VOLUME_CLAIMS, SECRETS
from mpijob.api.trainer.plan import PodPlan
from mpijob.controllers.claims import directory
from mpijob.controllers.kubelet.sandbox import JobFiles, User
from mpijob.store.home import Home
from mpijob.store.objects import Store

COMPONENT = "kubelet"  # the source of its Events, as the kubelet names itself
VOLUMES_DIR = "volumes"  # in the pod's directory: its emptyDirs and file volumes
EMPTY_DIR_MODE = 0o777  # the kubelet's mode for an emptyDir
RW_MASK, RO_MASK, EXEC_MASK = 0o660, 0o440, 0o110  # what SetVolumeOwnership adds for the fsGroup


class MountFailed(Exception):
    """A volume the kubelet could not set up: the message its FailedMount Event gives."""


@dataclass(frozen=True)
class Bind:
    """One mount in the pod's namespace: `source` (a file or directory of this machine) at `target`."""

    source: Path
    target: str
    read_only: bool
    is_file: bool = False


@dataclass(frozen=True)
class Tmpfs:
    """An emptyDir of medium Memory: a tmpfs mounted (in the pod's namespace only) over its directory."""

    path: Path
    size: int | None
    group: int | None


def setup(store: Store, home: Home, files: JobFiles, pod: PodPlan, stored: Obj, user: User) -> list[str]:
    """Set up the pod's volumes and return the shell lines that mount them in its namespace; MountFailed."""
    mounts = _mounts(pod)
    if not mounts and not pod.pod_spec.get("volumes"):
        return []
    ns = stored["metadata"]["namespace"]
    claims = {c["metadata"]["name"]: c for c in store.list(PERSISTENT_VOLUME_CLAIMS, ns)[0]}
    objects = {(o["kind"], o["metadata"]["name"]): o for res in (CONFIGMAPS, SECRETS) for o in store.list(res, ns)[0]}
    base = files.pod_dir(pod) / VOLUMES_DIR
    roots: dict[str, tuple[Path, bool]] = {}  # volume → its directory (or file) and whether it is a file
    tmpfs: list[Tmpfs] = []
    binds: list[Bind] = []
    for m in mounts:
        if m.volume not in roots:
            try:
                roots[m.volume] = _prepare(m, base / m.volume, claims, objects, stored, pod, home, tmpfs, user)
            except v.VolumeError as e:
                raise MountFailed(f'MountVolume.SetUp failed for volume "{m.volume}" : {e}') from None
        root, is_file = roots[m.volume]
        in_memory = any(t.path == root for t in tmpfs)
        source = root / m.sub_path if m.sub_path else root
        if m.sub_path and not in_memory:
            source = _sub_path(root, m.sub_path, user, pod.fs_group, m.volume)
            is_file = source.is_file()
        binds.append(Bind(source, m.path, m.read_only, is_file))
    return _script(tmpfs, binds, user, pod.fs_group)


def _mounts(pod: PodPlan) -> list[v.Mount]:
    try:
        return v.mounts(pod.pod_spec)
    except v.VolumeError as e:  # a runtime patch's mount of a volume the pod lacks: kube refuses the pod
        raise MountFailed(f"Pod is invalid: {e}") from None


def _prepare(m: v.Mount, own: Path, claims: Mapping[str, Obj], objects: Mapping[tuple[str, str], Obj], stored: Obj,
             pod: PodPlan, home: Home, tmpfs: list[Tmpfs], user: User) -> tuple[Path, bool]:
    """The volume's root on this machine, made ready; VolumeError in the kubelet's words."""
    if m.kind == v.PVC:
        claim = claims.get(m.source.get("claimName", ""))
        if claim is None or (claim.get("status") or {}).get("phase") != names.CLAIM_BOUND:
            raise v.VolumeError(f'persistentvolumeclaim "{m.source.get("claimName")}" is not bound')
        root = directory(home, claim)
        if not root.is_dir():
            raise v.VolumeError(f"the claim's directory {root} is missing")
        _own(root, pod.fs_group, m.read_only)
        return root, False
    if m.kind == v.HOST_PATH:
        return _host_path(m.source.get("path", ""), m.source.get("type") or "", user, pod.fs_group)
    if m.kind == v.EMPTY_DIR:
        shutil.rmtree(own, ignore_errors=True)  # every pod starts with an empty one
        own.mkdir(parents=True)
        os.chmod(own, EMPTY_DIR_MODE)
        if m.source.get("medium") == names.MEDIUM_MEMORY:
            limit = m.source.get("sizeLimit") or (pod.resources.get("limits") or {}).get("memory")
            tmpfs.append(Tmpfs(own, quantity_value(limit) if limit is not None else None, pod.fs_group))
        else:
            _own(own, pod.fs_group, False)
        return own, False
    shutil.rmtree(own, ignore_errors=True)  # a file volume, written afresh
    own.mkdir(parents=True)
    os.chmod(own, 0o755)
    for path, (content, mode) in v.files(m.kind, m.source, objects, stored).items():
        target = own / path
        if not Path(os.path.normpath(target)).is_relative_to(own) or target == own:
            raise v.VolumeError(f'invalid file name "{path}": it must stay inside the volume')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        os.chmod(target, mode)
    _own(own, pod.fs_group, True)
    return own, False


def _host_path(path: str, kind: str, user: User, fs_group: int | None) -> tuple[Path, bool]:
    """The kubelet's hostPath type check, making what an `...OrCreate` type asks for. The bind is made as
    root, so it would reach past directories closed to the pod's user (its MPIJOB_HOME, say): a hostPath
    gives a pod only what its user may reach, and it makes a missing path only where its user may, as
    its own (the kubelet makes it as root: here the user could not then write it)."""
    real = Path(os.path.realpath(path))
    for parent in reversed(real.parents):
        if parent.exists() and not _may(user, parent, os.X_OK):
            raise v.VolumeError(f"hostPath {path}: uid {user.uid} may not enter {parent}; a hostPath reaches only "
                                "what the pod's user may reach on this machine")
    if kind in (names.HOST_PATH_DIRECTORY_OR_CREATE, names.HOST_PATH_FILE_OR_CREATE) and not real.exists():
        _create(real, kind == names.HOST_PATH_FILE_OR_CREATE, user, fs_group, path)
    found = _what(real)
    if why := v.host_path_problem(path, kind, found):
        raise v.VolumeError(why)
    if not found:
        raise v.VolumeError(f"{path}: no such file or directory")
    return real, found != "directory"


def _may(user: User, path: Path, bit: int) -> bool:
    """Whether the pod's user may read, write or enter (`bit`) `path` by its mode bits."""
    if user.uid == 0:
        return True
    st = path.stat()
    shift = 6 if st.st_uid == user.uid else 3 if st.st_gid in (user.gid, *user.groups) else 0
    return (st.st_mode >> shift) & bit == bit


def _create(real: Path, file: bool, user: User, fs_group: int | None, path: str) -> None:
    """A DirectoryOrCreate's directories (0755) or a FileOrCreate's file (0644, in an existing directory),
    made where the pod's user may write, owned by it."""
    missing = [p for p in [real, *real.parents] if not p.exists()][::-1]
    if file and len(missing) > 1:
        raise v.VolumeError(f"open {path}: no such file or directory")
    if not _may(user, missing[0].parent, os.W_OK | os.X_OK):
        raise v.VolumeError(f"hostPath {path}: uid {user.uid} may not create it in {missing[0].parent}")
    group = fs_group if fs_group is not None else user.gid
    for p in missing:
        if file:
            p.touch(mode=0o644)
        else:
            p.mkdir(mode=0o755)
        os.chown(p, user.uid, group)


def _what(p: Path) -> str:
    try:
        mode = p.stat().st_mode
    except OSError:
        return ""
    for kind, test in (("directory", stat.S_ISDIR), ("file", stat.S_ISREG), ("socket", stat.S_ISSOCK),
                       ("char", stat.S_ISCHR), ("block", stat.S_ISBLK)):
        if test(mode):
            return kind
    return "other"


def _sub_path(root: Path, sub: str, user: User, fs_group: int | None, volume: str) -> Path:
    """`root/sub`, which must stay inside the volume (symbolic links included); missing directories on the
    way are made, owned by the pod's user (and its fsGroup), so it can write there."""
    path = root
    for part in Path(sub).parts:
        path = path / part
        if not path.exists() and not path.is_symlink():
            path.mkdir()
            os.chown(path, user.uid, fs_group if fs_group is not None else user.gid)
            os.chmod(path, 0o2775 if fs_group is not None else 0o755)
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(os.path.realpath(root)):
        raise MountFailed(f'MountVolume.SetUp failed for volume "{volume}" : subpath "{sub}" leads outside the volume')
    return real


def _own(root: Path, fs_group: int | None, read_only: bool) -> None:
    """The kubelet's SetVolumeOwnership (fsGroupChangePolicy OnRootMismatch): the fsGroup owns every file,
    which gets group read (and write, unless read-only); directories get setgid and search."""
    if fs_group is None:
        return
    mask = RO_MASK if read_only else RW_MASK
    st = root.stat()
    want = mask | EXEC_MASK | stat.S_ISGID
    if st.st_gid == fs_group and st.st_mode & want == want:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
            info = os.lstat(name)
            if stat.S_ISLNK(info.st_mode):
                continue
            os.lchown(name, -1, fs_group)
            extra = mask | (EXEC_MASK | stat.S_ISGID if stat.S_ISDIR(info.st_mode) else 0)
            os.chmod(name, stat.S_IMODE(info.st_mode) | extra)


def _script(tmpfs: list[Tmpfs], binds: list[Bind], user: User, fs_group: int | None) -> list[str]:
    """Shell lines run as root in the pod's namespace before it drops to its user."""
    q = shlex.quote
    lines = []
    for t in tmpfs:
        size = f",size={t.size}" if t.size else ""
        lines.append(f"mount -t tmpfs -o mode={EMPTY_DIR_MODE:o},nosuid,nodev{size} tmpfs {q(str(t.path))}")
        if t.group is not None:
            lines.append(f"chgrp {t.group} {q(str(t.path))} && chmod 2777 {q(str(t.path))}")
    for b in binds:
        src, dst = q(str(b.source)), q(b.target)
        if b.is_file:
            lines.append(f"mkdir -p {q(os.path.dirname(b.target))} && {{ [ -e {dst} ] || : > {dst}; }}")
        else:
            # a subPath of a tmpfs, made by the pod's setup as root: given to the pod's user, unless that is
            # the server's own (rootless: root there is the server's user already)
            if any(str(b.source).startswith(str(t.path) + "/") for t in tmpfs) and user.uid != os.geteuid():
                group = fs_group if fs_group is not None else user.gid
                lines.append(f"mkdir -p {src} && chown {user.uid}:{group} {src}")
            lines.append(f"mkdir -p {dst}")
        lines.append(f"mount --bind {'-o ro ' if b.read_only else ''}{src} {dst}")
    return lines
