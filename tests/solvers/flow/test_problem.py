"""The flow domain: validation names the field at fault, the core transform, the checker."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solvers.errors import InstanceError
from solvers.flow.dual import dual_bound, label_correct
from solvers.flow.io import network_from_dict, network_to_dict
from solvers.flow.solution import check_flow
from tests.solvers.flow.conftest import HAND_CHECKED


def _base() -> dict[str, Any]:
    return {"nodes": [1, 2, 3], "supplies": [2, 0, -2], "arcs": [
        {"tail": 1, "head": 2, "cost": 1, "capacity": 5},
        {"tail": 2, "head": 3, "cost": 1, "capacity": 5},
        {"tail": 1, "head": 3, "cost": 4}]}


def _error(obj: dict[str, Any]) -> InstanceError:
    with pytest.raises(InstanceError) as exc:
        network_from_dict(obj)
    return exc.value


def test_unbalanced_supplies_name_the_sums() -> None:
    err = _error({**_base(), "supplies": [5, 0, -2]})
    assert err.field == "supplies"
    assert "total supply 5" in err.message and "total demand 2" in err.message


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda o: o["arcs"][1].update(capacity=-3), "arcs[1].capacity", "negative capacity -3"),
    (lambda o: o["arcs"][2].update(tail=9), "arcs[2].tail", "unknown node id 9"),
    (lambda o: o["arcs"][0].update(head=7), "arcs[0].head", "unknown node id 7"),
    (lambda o: o["arcs"][0].update(cost=1.5), "arcs[0].cost", "must be an integer"),
    (lambda o: o["arcs"][0].update(capacity="5"), "arcs[0].capacity", "must be an integer"),
    # text among numbers names the text, not the first number (before: "got '1'")
    (lambda o: o["arcs"][2].update(cost="x"), "arcs[2].cost", "got 'x'"),
    (lambda o: o.update(supplies=[2, 0, "-2"]), "supplies[2]", "got '-2'"),
    (lambda o: o["arcs"][0].update(cost=True), "arcs[0].cost", "must be an integer"),
    (lambda o: o.update(supplies=[2, 0.5, -2.5]), "supplies[1]", "must be an integer"),
    (lambda o: o["arcs"].append({"tail": 2, "head": 2, "cost": 1}), "arcs[3]", "self-loop"),
    (lambda o: o.update(nodes=[1, 2, 1]), "nodes[2]", "appears twice"),
    (lambda o: o.update(supplies=[2, -2]), "supplies", "2 supplies for 3 nodes"),
    (lambda o: o["arcs"][0].update(lower=7), "arcs[0].lower", "above the capacity"),
    (lambda o: o["arcs"][0].update(lower=-1), "arcs[0].lower", "negative lower bound"),
    (lambda o: o.update(node_capacities=[None, -1, None]), "node_capacities[1]", "negative"),
    (lambda o: o["arcs"][0].pop("tail"), "arcs[0].tail", "missing"),
    (lambda o: o["arcs"][0].update(weight=3), "arcs[0].weight", "unknown field"),
    (lambda o: o["arcs"][0].update(cost=10**10), "arcs[0].cost", "larger in magnitude"),
    # int64's own extremes and huge floats: |−2⁶³| wraps in int64, 1e300 wraps in the cast
    (lambda o: o["arcs"][1].update(cost=-(2**63)), "arcs[1].cost", "larger in magnitude"),
    (lambda o: o["arcs"][1].update(cost=2**64 - 1), "arcs[1].cost", "larger in magnitude"),
    (lambda o: o["arcs"][0].update(cost=-1e300), "arcs[0].cost", "larger in magnitude"),
    (lambda o: o.update(supplies=[-(2**63), 0, 2**63 - 1]), "supplies[0]", "larger in magnitude"),
    # beside a null the values are read one by one: quoted short all the same (before: a
    # 300-digit integer for 1e300)
    (lambda o: o.update(node_capacities=[1e300, None, None]), "node_capacities[0]",
     "capacity 1e+300 is larger"),
    (lambda o: o.update(node_capacities=[None, -(10**5000), None]), "node_capacities[1]",
     "about -1e+5000 is larger"),
])
def test_invalid_networks_name_the_field(change: Any, field: str, words: str) -> None:
    obj = _base()
    change(obj)
    err = _error(obj)
    assert err.field == field, err
    assert words in err.message, err.message


def test_json_round_trip_keeps_everything() -> None:
    for obj, _, _ in HAND_CHECKED.values():
        net = network_from_dict(obj)
        again = network_from_dict(network_to_dict(net))
        for attr in ("node_ids", "supplies", "tails", "heads", "costs", "capacities",
                     "capacitated", "lower", "node_capacities", "node_capacitated"):
            assert np.array_equal(getattr(net, attr), getattr(again, attr)), attr


def test_core_network_splits_nodes_and_shifts_lower_bounds() -> None:
    net = network_from_dict(HAND_CHECKED["node_capacity"][0])
    core = net.core()
    assert (core.n, core.m) == (5, 5)  # node 2 split in two, one arc between the halves
    assert core.caps[-1] == 2 and core.costs[-1] == 0
    flow = np.array([2, 2, 3, 3])
    core_flow = core.from_original(flow)
    assert core_flow[-1] == 2  # the split arc carries node 2's throughput
    assert np.array_equal(core.original_flow(core_flow), flow)
    assert core.cost(core_flow) == 34

    lb = network_from_dict(HAND_CHECKED["lower_bound"][0]).core()
    assert lb.cost_offset == 2 * 5
    assert lb.supplies.tolist() == [3 - 2, -3, 2]  # 2 units already sent along 1→3
    assert lb.caps[1] == 3


def test_checker_accepts_the_optimum_and_catches_broken_flows() -> None:
    obj, optimum, flow = HAND_CHECKED["two_paths"]
    net = network_from_dict(obj)
    assert flow is not None
    cost, violations = check_flow(net, flow)
    assert (cost, violations) == (optimum, [])

    unbalanced = [3, 2, 1, 1]
    _, violations = check_flow(net, unbalanced)
    assert any("node 2: out − in = -1" in v for v in violations)
    over = [4, 4, 0, 0]
    _, violations = check_flow(net, over)
    assert any("above its capacity 3" in v for v in violations)
    _, violations = check_flow(net, [3, 3, -1, -1])
    assert any("below its lower bound" in v for v in violations)
    assert check_flow(net, [3.5, 3, 1, 1])[0] is None
    assert check_flow(net, [3, 3, 1])[0] is None


def test_checker_catches_node_capacity_and_lower_bounds() -> None:
    net = network_from_dict(HAND_CHECKED["node_capacity"][0])
    _, violations = check_flow(net, [5, 5, 0, 0])
    assert violations == ["node 2: throughput 5 above its node capacity 2"]
    lb = network_from_dict(HAND_CHECKED["lower_bound"][0])
    _, violations = check_flow(lb, [3, 0, 0])
    assert any("below its lower bound 2" in v for v in violations)


def test_weak_duality_holds_for_any_potentials() -> None:
    """The certificate's bound never exceeds the optimum, whatever the potentials."""
    rng = np.random.default_rng(0)
    for obj, optimum, _ in HAND_CHECKED.values():
        core = network_from_dict(obj).core()
        for _ in range(50):
            pi = rng.integers(-20, 20, core.n)
            assert dual_bound(core, pi) <= optimum


def test_label_correcting_finds_shortest_paths_and_negative_cycles() -> None:
    tails, heads = np.array([0, 1, 0, 2]), np.array([1, 2, 2, 3])
    weights = np.array([1, 1, 5, 1])
    init = np.array([0, 10**9, 10**9, 10**9])
    res = label_correct(4, tails, heads, weights, init)
    assert res.status == "converged" and res.labels.tolist() == [0, 1, 2, 3]
    cyc = label_correct(3, np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1, 1, -3]),
                        np.zeros(3, dtype=np.int64))
    assert cyc.status == "negative_cycle"


def test_the_uncapacitated_bound_is_summed_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: numpy's int64 sum wrapped (9.3M arcs of capacity 10¹²), the bound
    came out negative, slipped past the overflow guard and a feasible network was reported
    infeasible. The sum is exact now, and a bound past the safe limit is refused (shown with
    the limit lowered, which 9.3M arcs would take to reach)."""
    import solvers.flow.problem as problem

    caps = np.full(4, 2**61, dtype=np.int64)  # int64 sum: 2⁶³ wraps to −2⁶³
    none = np.zeros(0, dtype=np.int64)
    assert problem.uncapacitated_bound(np.array([1, -1]), caps, none, none) == 2**63 + 2
    monkeypatch.setattr(problem, "INT64_SAFE", 2 * 10**12)
    with pytest.raises(InstanceError) as err:
        network_from_dict({"nodes": [1, 2, 3], "supplies": [1, 0, -1], "arcs": [
            *({"tail": 1, "head": 2, "cost": 0, "capacity": 10**12} for _ in range(3)),
            {"tail": 2, "head": 3, "cost": 0}]})
    assert err.value.field == "arcs" and "64-bit" in err.value.message
