"""Gzipped input inflated as a stream, within a per-file cap and a process-wide memory budget.

A .gz file is read twice: first counted a chunk at a time without keeping anything, so a
bomb is refused past the cap having held a megabyte (reading up to the cap in one go held
512 MiB per bomb: three concurrent ones took a server from 0.5 to 2.0 GB), then inflated
once at its now known size. The second pass reserves its size in one budget shared by every
thread of the process, so concurrent uploads cannot together inflate more than the budget;
one that finds no room waits a bounded time, then is refused with ``InflateBusyError`` (a
503 with Retry-After), since a wait without bound would hold the request and its thread.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from solvers.errors import CosolveError, InstanceError

#: How much is inflated per step while counting.
CHUNK = 1 << 20
#: The budget's default: twice the default per-file cap, so one largest file always fits.
DEFAULT_BUDGET_BYTES = 1 << 30
#: How long an inflation waits for room in the budget before it is refused.
DEFAULT_WAIT_S = 5.0
_GZIP = 31  # zlib's wbits for a gzip header and trailer


class InflateBusyError(CosolveError):
    """Other uploads are being inflated and the process's budget has no room for this one
    now: a temporary refusal, to retry after ``retry_after`` seconds."""

    status = 503
    kind = "server-busy"
    title = "Too much being decompressed at once"
    field = "file"

    def __init__(self, size: int, budget: int, retry_after: int) -> None:
        super().__init__(f"the file inflates to {size:,} bytes and the server is inflating "
                         f"other uploads (COSOLVE_MAX_INFLATING_BYTES: {budget:,} at once); "
                         f"send it again in {retry_after} s")
        self.retry_after = retry_after
        self.budget = budget

    def problem_extra(self) -> dict[str, Any]:
        return {"retry_after": self.retry_after, "limit": self.budget}


class InflateBudget:
    """Bytes being inflated at once, across the process's threads. A reservation larger than
    the whole budget is granted when nothing else is reserved, so one file within the
    per-file cap is never refused for good."""

    def __init__(self, capacity: int = DEFAULT_BUDGET_BYTES, wait_s: float = DEFAULT_WAIT_S
                 ) -> None:
        self.capacity = capacity
        self.wait_s = wait_s
        self.used = 0
        self.peak = 0
        self._cond = threading.Condition()

    @contextmanager
    def reserve(self, size: int) -> Iterator[None]:
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            while self.used and self.used + size > self.capacity:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise InflateBusyError(size, self.capacity, max(1, round(self.wait_s)))
                self._cond.wait(left)
            self.used += size
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._cond:
                self.used -= size
                self._cond.notify_all()


#: The process's budget; ``configure`` sets it from the server's settings.
BUDGET = InflateBudget()


def configure(capacity: int, wait_s: float = DEFAULT_WAIT_S) -> None:
    """Size the process's budget (the server does, from COSOLVE_MAX_INFLATING_BYTES)."""
    BUDGET.capacity = capacity
    BUDGET.wait_s = wait_s


def _members(data: bytes) -> Iterator[tuple[Any, bytes]]:
    """Each gzip member's decompressor with its input (a .gz may hold several, end to end)."""
    rest = data
    while True:
        inflater = zlib.decompressobj(_GZIP)
        yield inflater, rest
        rest = inflater.unused_data
        if not rest.strip(b"\0"):  # trailing zero padding is allowed, as gzip allows it
            return
        if rest[:2] != b"\x1f\x8b":
            raise zlib.error("trailing garbage after the compressed data")


def inflated_size(data: bytes, max_bytes: int) -> int | None:
    """What gzipped ``data`` inflates to, counted a chunk at a time and never kept; None past
    ``max_bytes``. ``zlib.error`` when the data are not (complete) gzip."""
    total = 0
    for inflater, member in _members(data):
        pending = member
        while True:
            total += len(inflater.decompress(pending, CHUNK))
            if total > max_bytes:
                return None
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
            if not pending:
                raise zlib.error("the compressed data end before the end of the stream "
                                 "(a truncated file)")
    return total


def gunzip(data: bytes, filename: str, max_bytes: int,
           budget: InflateBudget | None = None) -> bytes:
    """Gzipped ``data`` inflated: counted first (InstanceError naming ``file`` past
    ``max_bytes`` or when not gzip), then inflated inside a reservation of its size in the
    process's budget (``InflateBusyError`` when there is no room within its wait)."""
    try:
        size = inflated_size(data, max_bytes)
    except zlib.error as exc:
        raise InstanceError("file", f"{filename} is not a readable gzip file ({exc})") from None
    if size is None:
        raise InstanceError("file", f"{filename} decompresses to more than {max_bytes} bytes")
    with (budget or BUDGET).reserve(size):
        # one member (the usual file): one allocation of the counted size, no joining copy
        first = zlib.decompress(data, _GZIP, max(size, 1))
        if len(first) == size:
            return first
        pieces = [inflater.decompress(member) for inflater, member in _members(data)]
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
