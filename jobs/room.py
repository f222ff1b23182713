"""A full data disk is a wait, not a failure: queued jobs stay queued and start once there is
room, a running job keeps solving without its progress writes and keeps its outcome until
it can be stored.

Before, the first write that hit the full disk (a worker marking its job running, a
progress update) raised out of the worker, and the job was marked failed as soon as the
disk had room again: jobs whose inputs were intact were lost to a transient condition.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger("cosolve.jobs")

#: What a worker answers for a job it could not start for lack of room (the job is still
#: queued, its input intact): the executor submits it again later.
NO_ROOM = "no-room"
#: How long a queued job waits before it is tried again on a full disk, in seconds.
RETRY_S = 5.0
#: How long a finished job's worker keeps trying to store its outcome, in seconds (then the
#: executor's own failure path takes over), and how often.
RECORD_WAIT_S = 3600.0
RECORD_PAUSE_S = 2.0
#: The Retry-After of a submission refused for lack of room, in seconds.
RETRY_AFTER_S = 60

_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)

T = TypeVar("T")


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the data directory has no room (SQLite's "database or disk is
    full", or a file write's ENOSPC/EDQUOT)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "full" in str(exc).lower()
    return isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS


def skip_when_full(write: Callable[[], object], what: str) -> None:
    """Run a write that may be dropped (a progress update): on a full disk it is skipped,
    and the job goes on; the next update brings the row up to date once there is room."""
    try:
        write()
    except (sqlite3.Error, OSError) as exc:
        if not disk_full(exc):
            raise
        logger.warning("%s not stored: the data directory is full", what)


def until_stored(write: Callable[[], T], what: str, wait_s: float | None = None,
                 pause_s: float | None = None) -> T:
    """Run a write that must not be lost (a job's outcome) until the disk takes it, for up
    to ``wait_s``; past that the error is raised as it came."""
    deadline = time.monotonic() + (RECORD_WAIT_S if wait_s is None else wait_s)
    pause = RECORD_PAUSE_S if pause_s is None else pause_s
    warned = False
    while True:
        try:
            return write()
        except (sqlite3.Error, OSError) as exc:
            if not disk_full(exc) or time.monotonic() >= deadline:
                raise
            if not warned:
                logger.warning("%s waits for room: the data directory is full", what)
                warned = True
        time.sleep(pause)
