"""Simulator invariants, a hand-computed case, arrivals, determinism and the stale-time quirk."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from solvers.errors import InstanceError
from solvers.scheduling.heuristics import EFT, HEFT, HEURISTICS, EFTStale
from solvers.scheduling.simulator import (
    Arrivals,
    SimResult,
    make_stream,
    parse_pool,
    simulate,
)
from solvers.scheduling.workflow import SIZE_FACTOR, Workflow, workflow_from_dict


def check_schedule(templates: list[Workflow], res: SimResult, speeds: tuple[float, ...],
                   arrivals: Arrivals, seed: int) -> None:
    """Recompute everything the simulator claims from its recorded schedule."""
    times, kinds = make_stream(templates, arrivals, seed)
    assert res.schedule is not None
    finish: dict[tuple[int, int], float] = {}
    start: dict[tuple[int, int], float] = {}
    by_vm: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for uid, task, vm, ready, s, f in res.schedule:
        wf = templates[kinds[uid]]
        assert s >= ready - 1e-9 and ready >= times[uid] - 1e-9
        assert f - s == pytest.approx(wf.sizes[task] / speeds[vm])
        start[uid, task], finish[uid, task] = s, f
        by_vm[vm].append((s, f))
    for (uid, task), s in start.items():
        for p in templates[kinds[uid]].parents[task]:
            assert s >= finish[uid, p] - 1e-9, "a task started before its parent finished"
    for spans in by_vm.values():  # FIFO, one task at a time: dispatch order is start order
        for (s0, f0), (s1, _) in itertools.pairwise(spans):
            assert s1 >= f0 - 1e-9 and s1 >= s0, "a task started before its VM was free"
    assert len(start) == sum(templates[k].n for k in kinds)
    flow = [max(finish[uid, t] for t in range(templates[k].n)) - times[uid]
            for uid, k in enumerate(kinds)]
    assert res.flowtimes.tolist() == pytest.approx(flow)
    assert res.makespan == pytest.approx(max(finish.values()))
    busy = sum(finish[k] - start[k] for k in start)
    assert res.utilization == pytest.approx(busy / (len(speeds) * res.makespan))


@pytest.mark.parametrize("policy", sorted(HEURISTICS))
def test_invariants_hold_for_every_heuristic(classic: list[Workflow], policy: str) -> None:
    pool = parse_pool("5x2")
    arrivals = Arrivals(40, (30.0, 200.0))  # busy enough that queues form
    res = simulate(classic, pool, arrivals, HEURISTICS[policy](), seed=5, record=True)
    check_schedule(classic, res, pool.speeds, arrivals, 5)


def test_hand_computed_diamond(diamond: Workflow) -> None:
    # two 8-vCPU VMs: every runtime second takes 16/8 = 2 s. a 0–2; b 2–6 and c 2–4 on
    # different VMs (each VM can start at 2); d waits for b: 6–8.
    res = simulate([diamond], parse_pool("1x2"), Arrivals(1), HEFT(), record=True)
    assert res.flowtimes.tolist() == [8.0]
    assert res.makespan == 8.0 and res.utilization == pytest.approx(10 / 16)
    spans = {diamond.ids[t]: (s, f) for _, t, _, _, s, f in res.schedule or []}
    assert spans == {"a": (0, 2), "b": (2, 6), "c": (2, 4), "d": (6, 8)}


def test_hand_computed_queueing(diamond: Workflow) -> None:
    # One 8-vCPU VM (2 s per runtime second), two diamonds arriving at (almost) 0, one FIFO
    # queue: a1 0–2, a2 2–4; at 2 b1, c1 join the queue: b1 4–8, c1 8–10; at 4 b2, c2: 10–14,
    # 14–16; d1 is ready at 10 and queues behind c2: 16–18; d2 ready at 16: 18–20.
    res = simulate([diamond], parse_pool("8"), Arrivals(2, (1e9,)), EFT(), seed=0,
                   record=True)
    assert res.makespan == pytest.approx(20.0)
    assert res.flowtimes.tolist() == pytest.approx([18.0, 20.0], abs=1e-3)
    order = [(uid, diamond.ids[t], round(s, 3)) for uid, t, _, _, s, _ in res.schedule or []]
    assert order == [(0, "a", 0), (1, "a", 2), (0, "b", 4), (0, "c", 8), (1, "b", 10),
                     (1, "c", 14), (0, "d", 16), (1, "d", 18)]


def test_stale_idle_time_picks_the_long_idle_slow_vm() -> None:
    # VM 0: 8 vCPU, VM 1: 16 vCPU. Workflow 1 (2 s of runtime) runs on VM 1 from 0 to 2.
    # Workflow 2 (1 s) arrives much later: the correct rule sees both VMs free now and picks
    # the fast one (1 s); the stale rule compares 0 + 2 with 2 + 1 and picks the slow one.
    long = workflow_from_dict({"tasks": [{"id": "t", "runtime": 2}]})
    short = workflow_from_dict({"tasks": [{"id": "t", "runtime": 1}]})
    pool = parse_pool("8,16")
    arrivals = Arrivals(2, (1.0,))
    import solvers.scheduling.simulator as sim

    orig = sim.make_stream
    # workflow 1 is ``long`` at t = 0, workflow 2 ``short`` at t = 100
    sim.make_stream = lambda t, a, s: (np.array([0.0, 100.0]), np.array([0, 1]))  # type: ignore[assignment]
    try:
        good = simulate([long, short], pool, arrivals, EFT())
        stale = simulate([long, short], pool, arrivals, EFTStale())
    finally:
        sim.make_stream = orig  # type: ignore[assignment]
    assert good.flowtimes.tolist() == [2.0, 1.0]
    assert stale.flowtimes.tolist() == [2.0, 2.0]


def test_deterministic_under_a_seed(classic: list[Workflow]) -> None:
    pool = parse_pool("6x4")
    a = simulate(classic, pool, Arrivals(200, (9.0,)), EFT(), seed=11)
    b = simulate(classic, pool, Arrivals(200, (9.0,)), EFT(), seed=11)
    c = simulate(classic, pool, Arrivals(200, (9.0,)), EFT(), seed=12)
    assert np.array_equal(a.flowtimes, b.flowtimes)
    assert not np.array_equal(a.flowtimes, c.flowtimes)


def test_rate_change_mid_stream() -> None:
    arrivals = Arrivals(4000, (3.6, 36.0))  # one per 1000 s, then one per 100 s
    times, _ = make_stream([workflow_from_dict({"tasks": [{"id": "t", "runtime": 1}]})],
                           arrivals, seed=0)
    gaps = np.diff(times)
    assert times[0] == 0.0
    assert gaps[:1999].mean() == pytest.approx(1000, rel=0.1)
    assert gaps[2000:].mean() == pytest.approx(100, rel=0.1)


def test_pools() -> None:
    assert parse_pool("6x4").speeds == tuple(float(v) for v in (8, 16, 32, 48, 64, 96)
                                             for _ in range(4))
    assert parse_pool("5×5").size == 25 and max(parse_pool("5x5").speeds) == 64
    assert parse_pool("8, 16,96").speeds == (8.0, 16.0, 96.0)
    for bad in ("7x2", "0x3", "6x0", "fast", "8,-1", ""):
        with pytest.raises(InstanceError) as info:
            parse_pool(bad)
        assert info.value.field == "pool"


def test_ten_thousand_workflows_fast(classic: list[Workflow]) -> None:
    arrivals = Arrivals(10_000, (5.4,))
    res = simulate(classic, parse_pool("6x4"), arrivals, EFT(), seed=1)
    _, kinds = make_stream(classic, arrivals, seed=1)
    assert len(res.flowtimes) == 10_000
    assert res.decisions == sum(classic[k].n for k in kinds)
    assert res.wall_time < 30.0  # about 2 s on the development machine
    # every workflow takes at least its critical path on the fastest VM
    assert res.flowtimes.min() >= min(w.critical_path(96) for w in classic) - 1e-9


def test_size_factor_is_goodrls() -> None:
    assert SIZE_FACTOR == 16.0


def test_a_deadline_stops_a_burst_of_slow_decisions() -> None:
    """The deadline was read once per 1,024 events; a burst of ready tasks is decided within
    one event, and a GOODRL decision on a dense DAG takes a good part of a second (before:
    a request ran 5 minutes past its client). It is now read every 16 decisions too."""
    import time

    wide = workflow_from_dict({"tasks": [{"id": f"t{i}", "runtime": 1} for i in range(400)]})

    class Slow(EFT):
        def choose(self, state, run, task):  # type: ignore[no-untyped-def]
            time.sleep(0.005)
            return super().choose(state, run, task)

    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        simulate([wide], parse_pool("6x4"), Arrivals(1), Slow(), deadline=t0 + 0.2)
    assert time.perf_counter() - t0 < 0.5  # 400 decisions would take 2 s


def test_a_sessions_automatic_workflow_ids_take_the_first_free_number() -> None:
    """Its schema says wf1, wf2, ...: after client-named workflows the first automatic id
    was wf<count + 1> while wf1 was free."""
    from solvers.scheduling.session import Session
    from solvers.scheduling.simulator import parse_pool

    session = Session(parse_pool("1x2"), HEURISTICS["heft"]())
    chain = workflow_from_dict({"tasks": [{"id": "a", "runtime": 1}]})
    for name in ("mine", "wf2", "other"):
        session.workflow_arrived(chain, 0.0, name)
    got = [session.workflow_arrived(chain, 0.0)[0] for _ in range(3)]
    assert got == ["wf1", "wf3", "wf4"]
    # an id a later event of the same request names is skipped too
    assert session.workflow_arrived(chain, 0.0, avoid={"wf5", "wf6"})[0] == "wf7"
    assert session.workflow_arrived(chain, 0.0, "wf5")[0] == "wf5"


def test_every_rate_gets_a_segment_or_the_stream_is_refused() -> None:
    """Regression: arange(count) * len(rates) // count skipped rates when there were more rates
    than workflows; now each rate needs at least one workflow."""
    with pytest.raises(InstanceError) as info:
        Arrivals(2, (1.0, 2.0, 3.0, 4.0, 5.0))
    assert info.value.field == "rates"
    assert Arrivals(5, (1.0, 2.0, 3.0, 4.0, 5.0)).count == 5  # one workflow per rate is fine
