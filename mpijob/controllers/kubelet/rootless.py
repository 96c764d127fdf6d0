"""What the rootless sandbox adds to the namespace sandbox's pod (`sandbox.py`): whether this machine allows
it, a root of the pod's own, and mount points where the server's user may not make them.

In a user namespace of our own, we are root only over what we own: the machine's `/` and `/etc` stay
root's, so a mount point that does not exist (`/etc/mpi`, `/home/mpiuser`, a volume's `/data`) cannot be
made there as the root sandbox makes it. So the pod gets a root of its own, a tmpfs holding a recursive
bind of each of the machine's top-level directories (as bubblewrap builds one), where a new top-level
directory is the pod's alone; a deeper missing one is made in an overlay of its nearest existing
ancestor, mounted in the pod only (unprivileged overlayfs, Linux 5.11+), whose upper layer lies in the
pod's own hidden `/run`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterable
from pathlib import Path

# What a rootless pod needs of the kernel, tried at start: a user namespace owning the others, and inside it
# a user namespace of the pod's own (util-linux 2.38's --map-user)
PROBE = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--uts", "--net", "--fork",
         "unshare", "--user", "--map-user=1", "--map-group=1", "true"]
# The sysctls with which a kernel or distribution turns unprivileged user namespaces off, and the value that
# turns them on (None: any but 0)
SWITCHES = (("kernel.unprivileged_userns_clone", "1"), ("user.max_user_namespaces", None),
            ("kernel.apparmor_restrict_unprivileged_userns", "0"))
NEW_ROOT = "/run/mpijob-root"  # where the pod's root is built, in a /run that its own /run later hides
OVERLAYS = "/run/mpijob-overlay"  # below the new root: each overlay's upper and work directories


def why_not() -> str:
    """"" when a rootless pod can run here; else why not, naming the setting that would allow it."""
    probe = subprocess.run(PROBE, capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return _userns_off(probe.stderr.strip())
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):  # a job network's eth0 is a tun device
        return ("/dev/net/tun is not readable and writable by this user, so a job network has no eth0 (Debian "
                "makes it 0666: chmod 0666 /dev/net/tun)")
    return ""


def _userns_off(said: str, proc: Path = Path("/proc/sys")) -> str:
    for setting, on in SWITCHES:
        try:
            value = (proc / setting.replace(".", "/")).read_text().strip()
        except OSError:
            continue
        if (on is None and value == "0") or (on is not None and value != on):
            return (f"unprivileged user namespaces are off ({setting} = {value}); as root, "
                    f"`sysctl -w {setting}={on or 15000}` enables them (a file in /etc/sysctl.d/ keeps it)")
    hint = " (the kernel refuses them to every process in a chroot)" if "not permitted" in said else ""
    return f"unprivileged user namespaces do not work here: {said or 'unshare failed'}{hint}"


def own_root() -> list[str]:
    """Shell lines, run as the user namespace's root in the pod's new mount and PID namespaces, that move the
    pod into a root of its own (pivot_root) with the machine's top-level directories bound in, and its own
    /proc; /run stays empty for the sandbox's own tmpfs."""
    r = shlex.quote(NEW_ROOT)
    return [
        f"mount -t tmpfs -o mode=0755 tmpfs /run && mkdir {r} && mount -t tmpfs -o mode=0755 tmpfs {r}",
        (f'for e in /*; do n="${{e#/}}"; case "$n" in proc|run) continue;; esac; '
         f'if [ -L "$e" ]; then cp -P "$e" {r}/"$n"; '
         f'elif [ -d "$e" ]; then mkdir {r}/"$n" && mount --rbind "$e" {r}/"$n"; '
         f'else : > {r}/"$n" && mount --bind "$e" {r}/"$n"; fi; done'),
        f"mkdir {r}/proc {r}/run && mount -t proc -o nosuid,nodev,noexec proc {r}/proc",
        f"cd {r} && mkdir .old && pivot_root . .old && cd / && umount -l /.old && rmdir /.old",
    ]


def overlays(targets: Iterable[str]) -> list[str]:
    """Shell lines (after `own_root`) that make each missing mount point's nearest existing ancestor
    writable in the pod, as an overlay, where the server's user may not write it; outermost first, once."""
    needed: set[Path] = set()
    for target in targets:
        path = Path(os.path.realpath(target))  # /var/run/... is the pod's own /run
        if path.exists() or path.is_relative_to("/run") or path.is_relative_to("/proc"):
            continue
        ancestor = next(p for p in path.parents if p.is_dir())
        if ancestor != Path("/") and not os.access(ancestor, os.W_OK | os.X_OK):  # `/` is the pod's own tmpfs
            needed.add(ancestor)
    outermost = sorted(a for a in needed if not any(a.is_relative_to(b) and a != b for b in needed))
    lines = []
    for i, ancestor in enumerate(outermost):
        where, at = f"{OVERLAYS}/{i}", shlex.quote(str(ancestor))
        lines.append(f"mkdir -p {where}/upper {where}/work && mount -t overlay overlay -o "
                     f"lowerdir={at},upperdir={where}/upper,workdir={where}/work,userxattr {at}")
    return lines
