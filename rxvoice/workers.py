"""The one worker pool rxvoice's stages share, and the default ``offload``.

Heavy work (an end-of-turn model's verdict, a dedicated summary model, a
speech recognizer) runs here, off the session; its result re-enters the
session through its gate. A stage takes an ``offload`` (see
:mod:`rxvoice.turns.offload`); :func:`default_offload` is what it uses when
none is given. The executors for tests are re-exported here.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from .turns.offload import Offload, SchedulerOffload, inline_offload

__all__ = ["Offload", "SchedulerOffload", "default_offload", "inline_offload", "shared_pool"]

_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_POOL_WORKERS = 4


def shared_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The one worker pool rxvoice's stages share (four threads), created on first use.

    Model calls release the GIL, and a dedicated summary model mostly waits
    on the network: four threads keep a slow summary from holding up an
    end-of-turn verdict. Each stage keeps at most one job of a kind in
    flight per session.
    """
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            pool = _POOL
            if pool is None:
                pool = _POOL = concurrent.futures.ThreadPoolExecutor(_POOL_WORKERS, thread_name_prefix="rxvoice-worker")
    return pool


def default_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on :func:`shared_pool`: the default ``offload`` of every stage."""
    return shared_pool().submit(job)


