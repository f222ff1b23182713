"""Gzipped input inflated as a stream: a bomb is refused having held a chunk, not the cap,
and concurrent inflations share one budget."""

from __future__ import annotations

import gzip
import threading
import tracemalloc

import pytest

from app.errors import domain_problem
from solvers.errors import InstanceError
from solvers.inflate import InflateBudget, InflateBusyError, gunzip, inflated_size
from solvers.routing.io.formats import parse_instance_bytes
from solvers.scheduling.workflow import parse_workflow_bytes

TSP = b"NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n" \
      b"1 0 0\n2 3 0\n3 0 4\nEOF\n"


def _peak(fn: object) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    error = None
    try:
        fn()  # type: ignore[operator]
    except Exception as exc:  # the caller checks which
        error = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, error


def test_gzip_bomb_is_refused_without_inflating_up_to_the_cap() -> None:
    bomb = gzip.compress(b"0" * (96 << 20), compresslevel=9)
    for parse in (lambda: parse_instance_bytes(bomb, "bomb.tsp.gz", max_bytes=32 << 20),
                  lambda: parse_workflow_bytes(bomb, "bomb.xml.gz", max_bytes=32 << 20)):
        peak, error = _peak(parse)
        assert isinstance(error, InstanceError) and error.field == "file"
        assert "decompresses to more than" in str(error)
        assert peak < 8 << 20, f"{peak / 2**20:.0f} MiB held refusing a bomb"


def test_gzip_is_read_whole_multi_member_and_truncated_refused() -> None:
    assert parse_instance_bytes(gzip.compress(TSP), "t.tsp.gz").n == 3
    two = gzip.compress(TSP[:40]) + gzip.compress(TSP[40:]) + b"\0\0"
    assert gunzip(two, "t.tsp.gz", 1 << 20) == TSP
    assert inflated_size(two, 1 << 20) == len(TSP)
    with pytest.raises(InstanceError, match="not a readable gzip"):
        parse_instance_bytes(gzip.compress(TSP)[:-12], "t.tsp.gz")
    with pytest.raises(InstanceError, match="not a readable gzip"):
        gunzip(gzip.compress(TSP) + b"junk", "t.tsp.gz", 1 << 20)


def test_concurrent_inflations_share_one_budget() -> None:
    budget = InflateBudget(capacity=len(TSP) + 10, wait_s=0.2)
    data = gzip.compress(TSP)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with budget.reserve(len(TSP)):
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        with pytest.raises(InflateBusyError) as caught:
            gunzip(data, "t.tsp.gz", 1 << 20, budget)
    finally:
        release.set()
        holder.join()
    assert gunzip(data, "t.tsp.gz", 1 << 20, budget) == TSP  # room again
    assert budget.used == 0 and budget.peak == len(TSP)
    # one file larger than the whole budget still goes through alone
    assert gunzip(data, "t.tsp.gz", 1 << 20, InflateBudget(capacity=1, wait_s=0)) == TSP
    problem = domain_problem(caught.value)
    assert problem.status == 503 and problem.field == "file"
    assert problem.headers["Retry-After"] == "1"
