"""A temporary local cluster for a bench: a fresh home, a server for the length of a block, stopped with
drain (its jobs' pods go too) whatever happens. Benches never touch the user's cluster."""

from __future__ import annotations

import signal
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType

from mpijob.store import server_process
from mpijob.store.home import Home


@contextmanager
def temp_home(prefix: str) -> Iterator[Home]:
    """A fresh mpijob home in a temporary directory (`home.root.parent`, free for the bench's own files),
    removed on exit: a bench never touches the user's cluster."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Home(Path(tmp) / "home").ensure()


@contextmanager
def serving(home: Home, env: dict[str, str] | None = None, controllers: bool = True,
            timeout: float = 60.0, stop_timeout: float = 30.0) -> Iterator[server_process.ServerInfo]:
    """A server for `home` for the length of the block, then stopped with drain, so its jobs' pods go too —
    also when the block (or the start itself) fails or is interrupted, by Ctrl-C or by SIGTERM (`timeout`
    sends that: a bench it ended left its server running); a second Ctrl-C during the drain still stops it,
    without draining. `controllers=False`: an API server only (no pods run)."""
    extra = dict(env or {}) | ({} if controllers else {"MPIJOB_NO_CONTROLLERS": "1"})
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield server_process.start(home, timeout=timeout, env=extra)
    finally:
        try:
            server_process.stop(home, timeout=stop_timeout, drain=True)
        except KeyboardInterrupt:
            server_process.stop(home, timeout=5)
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as an exception, so the `finally` blocks that stop servers and remove homes run."""
    raise SystemExit(128 + signum)


@contextmanager
def temp_cluster(prefix: str, env: dict[str, str] | None = None, controllers: bool = True,
                 timeout: float = 60.0, stop_timeout: float = 30.0) -> Iterator[tuple[Home, server_process.ServerInfo]]:
    """`serving` on a `temp_home`: the one set-up of every bench that needs one local cluster."""
    with temp_home(prefix) as home, serving(home, env, controllers, timeout, stop_timeout) as info:
        yield home, info


@contextmanager
def temp_clusters(prefix: str, envs: dict[str, dict[str, str]],
                  controllers: bool = True) -> Iterator[dict[str, server_process.ServerInfo]]:
    """One `temp_cluster` per side of an A/B bench (side → its server's env), all running at once; every
    one started is stopped, the last first, whatever happens."""
    with ExitStack() as stack:
        yield {side: stack.enter_context(temp_cluster(f"{prefix}{side}-", env, controllers))[1]
               for side, env in envs.items()}
