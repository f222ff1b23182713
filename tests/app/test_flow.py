"""The min-cost-flow endpoints over a real uvicorn server: JSON and DIMACS uploads, compare,
infeasible answers and problem details that name the field."""

from __future__ import annotations

import copy
import gzip
import json
from typing import Any

import httpx
import pytest

from tests.app.conftest import STRICT_LIMITS
from tests.app.helpers import assert_problem
from tests.solvers.flow.conftest import HAND_CHECKED, NETGEN_OPTIMA, netgen_path

SOLVE = "/v1/flow/min-cost"
COMPARE = "/v1/flow/min-cost/compare"


def _network(name: str) -> dict[str, Any]:
    return copy.deepcopy({"name": name, **HAND_CHECKED[name][0]})


def _local_check(network: dict[str, Any], flow: list[int]) -> int:
    """Balance and capacities checked here, not by the server; returns the cost."""
    nodes = network["nodes"]
    ids = list(range(1, nodes + 1)) if isinstance(nodes, int) else nodes
    balance = dict.fromkeys(ids, 0)
    cost = 0
    for arc, x in zip(network["arcs"], flow, strict=True):
        assert arc.get("lower", 0) <= x <= arc.get("capacity", x)
        balance[arc["tail"]] += x
        balance[arc["head"]] -= x
        cost += arc["cost"] * x
    assert [balance[i] for i in ids] == network["supplies"]
    return cost


@pytest.mark.parametrize("solver", ["ortools_mcf", "networkx_simplex", "oft_sinkhorn"])
def test_json_solve(api: httpx.Client, solver: str) -> None:
    network = _network("two_paths")
    response = api.post(SOLVE, json={"network": network, "solver": solver, "time_limit": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["network"], body["nodes"], body["arcs"], body["solver"]) == (
        "two_paths", 4, 4, solver)
    assert body["status"] == "optimal" and body["feasible"] is True and body["violations"] == []
    assert body["cost"] == HAND_CHECKED["two_paths"][1] == _local_check(network, body["flow"])
    assert body["certificate"]["gap"] == 0 and body["certificate"]["dual_bound"] == body["cost"]
    assert body["infeasibility"] is None and isinstance(body["stats"], dict)


def test_oft_sinkhorn_stats_report_the_entropic_stage(api: httpx.Client) -> None:
    network = _network("transport")
    body = api.post(SOLVE, json={"network": network, "solver": "oft_sinkhorn"}).json()
    stats = body["stats"]
    assert body["cost"] == 16 == _local_check(network, body["flow"])
    for key in ("entropic_cost", "entropic_gap_percent", "iterations", "eps_schedule",
                "marginal_error", "repair_certificate", "rounded_cost"):
        assert key in stats, key
    assert stats["eps_schedule"] == sorted(stats["eps_schedule"], reverse=True)


def test_dimacs_upload(api: httpx.Client) -> None:
    path = netgen_path("netgen_8_08a")
    response = api.post(SOLVE, files={"file": (path.name, path.read_bytes())},
                        data={"solver": "ortools_mcf", "time_limit": "10"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["cost"] == NETGEN_OPTIMA["netgen_8_08a"] and body["status"] == "optimal"
    assert (body["nodes"], body["arcs"]) == (256, 2048) and len(body["flow"]) == 2048


def test_json_file_upload_and_compare(api: httpx.Client) -> None:
    import json

    network = _network("node_capacity")
    data = gzip.compress(json.dumps(network).encode())
    response = api.post(COMPARE, files={"file": ("net.json.gz", data)},
                        data={"solvers": "ortools_mcf,oft_sinkhorn", "time_limit": "5"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["agree"] is True and body["best_cost"] == HAND_CHECKED["node_capacity"][1]
    assert [r["solver"] for r in body["rows"]] == ["ortools_mcf", "oft_sinkhorn"]
    assert all(r["gap_to_best"] == 0 and r["status"] == "optimal" for r in body["rows"])


def test_compare_runs_all_three_by_default(api: httpx.Client) -> None:
    body = api.post(COMPARE, json={"network": _network("negative_cycle")}).json()
    assert [r["solver"] for r in body["rows"]] == ["ortools_mcf", "networkx_simplex",
                                                   "oft_sinkhorn"]
    assert body["agree"] is True and body["best_cost"] == -8
    # a form's blank solvers field is the default too (before: 422 "at least 1 item")
    import json

    upload = {"file": ("net.json", json.dumps(_network("negative_cycle")).encode())}
    response = api.post(COMPARE, files=upload, data={"solvers": " , "})
    assert response.status_code == 200, response.text
    assert len(response.json()["rows"]) == 3


def test_infeasible_network_is_an_answer_with_its_cut(api: httpx.Client) -> None:
    network = {"nodes": [1, 2], "supplies": [5, -5],
               "arcs": [{"tail": 1, "head": 2, "cost": 1, "capacity": 3}]}
    body = api.post(SOLVE, json={"network": network, "solver": "oft_sinkhorn"}).json()
    assert body["status"] == "infeasible" and body["feasible"] is False
    assert body["cost"] is None and body["flow"] is None
    cut = body["infeasibility"]
    assert (cut["nodes"], cut["net_supply"], cut["capacity"], cut["arcs"]) == ([1], 5, 3, [0])
    compared = api.post(COMPARE, json={"network": network}).json()
    assert compared["infeasibility"]["capacity"] == 3
    assert {r["status"] for r in compared["rows"]} == {"infeasible"}


@pytest.mark.parametrize(("change", "field"), [
    (lambda n: n.update(supplies=[5, 0, 0, -4]), "network.supplies"),
    (lambda n: n["arcs"][1].update(tail=99), "network.arcs[1].tail"),
    (lambda n: n["arcs"][0].update(capacity=-1), "network.arcs[0].capacity"),
    (lambda n: n["arcs"].append({"tail": 1, "head": 1, "cost": 0}), "network.arcs[4]"),
    (lambda n: n["arcs"][0].update(cost=2.5), "network.arcs[0].cost"),
    (lambda n: n["arcs"][0].update(costs=2), "network.arcs[0].costs"),
])
def test_invalid_networks_are_422_naming_the_field(api: httpx.Client, change: Any,
                                                   field: str) -> None:
    network = _network("two_paths")
    change(network)
    assert_problem(api.post(SOLVE, json={"network": network}), 422, field=field)


def test_unbounded_network_is_422(api: httpx.Client) -> None:
    network = {"nodes": 2, "supplies": [0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -1}, {"tail": 2, "head": 1, "cost": 0}]}
    body = assert_problem(api.post(SOLVE, json={"network": network}), 422, field="network.arcs")
    assert "unbounded" in body["detail"]


def test_dimacs_errors_name_the_line(api: httpx.Client) -> None:
    text = b"p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 3 x\n"
    body = assert_problem(api.post(SOLVE, files={"file": ("bad.min", text)}), 422,
                          field="file")
    assert body["line"] == 4 and "line 4" in body["detail"]


def test_solver_errors(api: httpx.Client) -> None:
    network = _network("two_paths")
    assert_problem(api.post(SOLVE, json={"network": network, "solver": "nope"}), 404,
                   field="solver")
    body = assert_problem(api.post(SOLVE, json={"network": network, "solver": "ortools"}), 422,
                          field="solver")
    assert "mincostflow" in body["detail"]
    routing = api.post("/v1/routing/tsp/solve", json={
        "instance": {"coords": [[0, 0], [1, 0], [0, 1]]}, "solver": "oft_sinkhorn"})
    assert_problem(routing, 422, field="solver")
    assert_problem(api.post(COMPARE, json={"network": network,
                                           "solvers": ["ortools_mcf", "ortools_mcf"]}),
                   422, field="solvers[1]")
    assert_problem(api.post(SOLVE, json={"network": network, "tolerance": 1.5}), 422,
                   field="tolerance")
    assert_problem(api.post(SOLVE, content=b"x", headers={"content-type": "text/plain"}), 415)


def test_solver_catalogue_lists_the_flow_solvers(api: httpx.Client) -> None:
    listed = api.get("/v1/solvers", params={"problem": "mincostflow"}).json()["solvers"]
    assert {s["name"] for s in listed} == {"ortools_mcf", "networkx_simplex", "oft_sinkhorn"}
    assert all(s["family"] == "flow" for s in listed)
    spec = api.get("/openapi.json").json()
    content = spec["paths"][SOLVE]["post"]["requestBody"]["content"]
    assert set(content) == {"application/json", "multipart/form-data"}
    assert "FlowSolveRequest" in spec["components"]["schemas"]


def test_a_huge_declared_node_count_is_refused_before_it_is_allocated(
        api: httpx.Client) -> None:
    """A 43-byte file (or a one-field JSON) may declare 10^11 nodes: 413 naming the source,
    answered at once, not an attempt to allocate 745 GiB (a 500)."""
    header = b"p min 99999999999 1\nn 1 1\nn 2 -1\na 1 2 0 5 3\n"
    body = assert_problem(api.post(SOLVE, files={"file": ("big.min", header)},
                                   data={"solver": "ortools_mcf"}), 413, field="file")
    assert body["nodes"] == 99999999999
    network = {"nodes": 99999999999, "supplies": [1, -1],
               "arcs": [{"tail": 1, "head": 2, "cost": 1}]}
    assert_problem(api.post(SOLVE, json={"network": network, "solver": "ortools_mcf"}), 413,
                   field="network")
    assert_problem(api.post(COMPARE, json={"network": network}), 413, field="network")
    # the same files in the CLI's reader: a clear error naming the line, not a MemoryError
    from solvers.errors import InstanceError
    from solvers.flow.io import MAX_NODES, parse_network_bytes

    with pytest.raises(InstanceError, match=f"line 1: 99999999999 nodes; at most {MAX_NODES}"):
        parse_network_bytes(header, "big.min")


def test_strict_limits(strict_api: httpx.Client) -> None:
    too_many = int(STRICT_LIMITS["COSOLVE_MAX_SYNC_NODES"]) + 1
    network = {"nodes": too_many, "supplies": [0] * too_many, "arcs": []}
    assert_problem(strict_api.post(SOLVE, json={"network": network}), 413, field="network")
    body = assert_problem(strict_api.post(COMPARE, json={
        "network": _network("two_paths"), "time_limit": 4}), 422, field="solvers")
    assert "at most" in body["detail"]
    # two solvers × 4 s past the 5 s a request may run: the CLI it points to is the comparing
    # one (before: it said cosolve flow solve)
    body = assert_problem(strict_api.post(COMPARE, json={
        "network": _network("two_paths"), "time_limit": 4,
        "solvers": ["ortools_mcf", "networkx_simplex"]}), 422, field="time_limit")
    assert "cosolve flow compare" in body["detail"], body


def test_too_many_arcs_are_refused_before_they_are_read(strict_api: httpx.Client) -> None:
    """Regression: only nodes were capped, and a 58 KB gzipped DIMACS file of a
    million arcs took 270 MB and 3 s to read (the decompression cap allows 44 million). The
    'p' line's count, the arc lines as they come, and a JSON network's list are checked."""
    limit = int(STRICT_LIMITS["COSOLVE_MAX_SYNC_ARCS"])
    lines = ["n 1 1", "n 2 -1"] + ["a 1 2 0 1 1"] * (limit + 1)
    for declared in (limit + 1, 1):  # honest, and a 'p' line that understates
        text = "\n".join([f"p min 2 {declared}", *lines]) + "\n"
        body = assert_problem(strict_api.post(SOLVE, files={
            "file": ("many.min.gz", gzip.compress(text.encode()))}), 413, field="file")
        assert body["arcs"] == limit + 1 and body["limit"] == limit
        assert "cosolve flow solve" in body["detail"]
    arcs = [{"tail": 1, "head": 2, "cost": 0}] * (limit + 1)
    assert_problem(strict_api.post(SOLVE, json={"network": {
        "nodes": 2, "supplies": [1, -1], "arcs": arcs}}), 413, field="network")


def test_a_json_body_with_too_many_arcs_is_refused_before_its_arcs_are_validated(
        strict_api: httpx.Client) -> None:
    """Regression: a JSON body's 413 came after pydantic had built and checked every arc (1M + 1
    arcs: 6.6 s), while the README promises it "before the arcs are read", as for DIMACS. An
    arc pydantic would refuse past the limit shows the arcs are not validated; the cheaper
    checks of the options still come first."""
    limit = int(STRICT_LIMITS["COSOLVE_MAX_SYNC_ARCS"])
    arcs: list[dict[str, Any]] = [{"tail": 1, "head": 2, "cost": 0}] * limit
    arcs = [*arcs, {"tail": "one", "head": 2, "cost": 0}]
    network = {"nodes": 2, "supplies": [1, -1], "arcs": arcs}
    for path, extra in ((SOLVE, {"solver": "ortools_mcf"}),
                        (COMPARE, {"solvers": ["ortools_mcf"]})):
        body = assert_problem(strict_api.post(path, json={"network": network, **extra}), 413,
                              field="network")
        assert body["arcs"] == limit + 1 and body["limit"] == limit, body
    # options, solver names and the time limit are still checked first (cheapest first)
    assert_problem(strict_api.post(SOLVE, json={"network": network, "seed": -1}), 422,
                   field="seed")
    assert_problem(strict_api.post(SOLVE, json={"network": network, "solver": "nope"}), 404,
                   field="solver")
    assert_problem(strict_api.post(COMPARE, json={"network": network, "time_limit": 4,
                                                  "solvers": ["ortools_mcf", "ortools_mcf"]}),
                   422, field="solvers[1]")
    assert_problem(strict_api.post(SOLVE, json={"network": network, "time_limit": 60}), 422,
                   field="time_limit")
    # at the limit the arcs are read and checked as usual: the bad one is named
    assert_problem(strict_api.post(SOLVE, json={"network": {**network, "arcs": arcs[1:]}}),
                   422, field=f"network.arcs[{limit - 1}].tail")


def test_the_arc_precount_only_decides_past_the_limit() -> None:
    """The word count is an upper bound: a "tail" that is no arc's, or a body that is no valid
    JSON, leaves the body to the usual validation and its words."""
    from app.intake.flow import arcs_past_the_limit

    one_arc = {"tail": 1, "head": 2, "cost": 0}
    body = {"network": {"nodes": 2, "supplies": [1, -1], "arcs": [one_arc]}, "seed": 3}
    assert arcs_past_the_limit(json.dumps({**body, "tail": 1}).encode(), 1) is None
    assert arcs_past_the_limit(b'{"tail" "tail"', 1) is None
    assert arcs_past_the_limit(json.dumps({"network": {"arcs": {"tail": 1, "x": "tail"}}})
                                .encode(), 1) is None
    two = {**body, "network": {**body["network"], "arcs": [one_arc, one_arc]}}
    assert arcs_past_the_limit(json.dumps(two).encode(), 1) == ({"seed": 3}, 2)
    assert arcs_past_the_limit(json.dumps(two).encode(), 2) is None


def test_compare_counts_only_proven_optima_towards_agreement(api: httpx.Client) -> None:
    """Same rule as the CLI: a time-limited, unproven row is no disagreement."""
    path = netgen_path("netgen_8_10a")
    response = api.post(COMPARE, files={"file": (path.name, path.read_bytes())},
                        data={"solvers": "ortools_mcf,oft_sinkhorn", "time_limit": "0.1"})
    assert response.status_code == 200, response.text
    body = response.json()
    oft = body["rows"][1]
    if oft["status"] == "optimal":
        pytest.skip("oft_sinkhorn proved the optimum within 0.1 s here")
    assert oft["certificate"]["optimal"] is False and 0 < oft["certificate"]["relative_gap"] <= 2
    assert body["agree"] is True and body["best_cost"] == NETGEN_OPTIMA["netgen_8_10a"]


def test_compare_of_an_unbounded_network_is_422(api: httpx.Client) -> None:
    network = {"nodes": 2, "supplies": [0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -1}, {"tail": 2, "head": 1, "cost": 0}]}
    assert_problem(api.post(COMPARE, json={"network": network}), 422, field="network.arcs")


def test_networkx_refuses_a_time_limit_it_cannot_keep(api: httpx.Client) -> None:
    """Regression: networkx_simplex cannot stop early, and a 0.3 s request on 5,000 nodes and
    200,000 arcs answered after 46 s. A limit below its estimate is now a 422 at once."""
    from solvers.flow.generate import netgen_style
    from solvers.flow.io import network_to_dict

    net = network_to_dict(netgen_style(3, 2_000, 30_000))
    response = api.post(SOLVE, json={"network": net, "solver": "networkx_simplex",
                                     "time_limit": 0.2})
    body = assert_problem(response, 422, field="time_limit")
    assert "networkx_simplex cannot be interrupted" in body["detail"]
    rows = api.post(COMPARE, json={"network": net, "time_limit": 0.2}).json()["rows"]
    errors = {r["solver"]: r["error"] for r in rows}
    assert errors["ortools_mcf"] is None and "needs about" in errors["networkx_simplex"]


def test_a_compare_every_solver_refuses_is_a_422_naming_each_reason(api: httpx.Client) -> None:
    """Regression: 40,000 arcs at 0.2 s, below what networkx_simplex (2.4 s) and oft_sinkhorn
    (0.4 s) need, answered 200 with every row failed, while a solve of either, and routing's
    compare in the same case, answer 422 on time_limit. Now the same status and shape, every
    solver's reason in the detail and the longest time limit they need."""
    from solvers.flow.generate import netgen_style
    from solvers.flow.io import dimacs_text

    text = dimacs_text(netgen_style(3, 2_000, 40_000)).encode()
    response = api.post(COMPARE, files={"file": ("n40k.min", text)}, data={
        "solvers": "networkx_simplex,oft_sinkhorn", "time_limit": "0.2"})
    body = assert_problem(response, 422, field="time_limit")
    assert body["type"].endswith(":time-limit-too-small") and body["needed"] == 2.4, body
    assert body["detail"].startswith("no solver could run on this request"), body
    assert "networkx_simplex" in body["detail"] and "oft_sinkhorn" in body["detail"]


def test_a_fault_the_solver_finds_in_an_upload_names_the_file(api: httpx.Client) -> None:
    """Regression: an uploaded .json network with a negative cycle answered ``network.arcs``, a
    field the request did not have; the errors found while reading a file name ``file``."""
    network = {"nodes": 2, "supplies": [0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -1}, {"tail": 2, "head": 1, "cost": 0}]}
    upload = {"file": ("cycle.json", json.dumps(network).encode())}
    assert_problem(api.post(SOLVE, files=upload), 422, field="file.arcs")
    assert_problem(api.post(COMPARE, files=upload), 422, field="file.arcs")


def test_a_comparison_too_large_points_to_the_comparing_cli() -> None:
    """QA review: a comparison refused as too large (COSOLVE_MAX_SYNC_ARCS or _NODES, 413)
    was told to use ``cosolve flow solve``; it is ``cosolve flow compare``, as for a time
    limit past the server's. A solve still points to ``cosolve flow solve``."""
    from app.errors import ApiError
    from app.intake.flow import (
        compare_task_from_json,
        compare_task_from_upload,
        solve_task_from_json,
    )
    from app.settings import Settings

    settings = Settings(max_sync_arcs=2, max_sync_nodes=3)
    arcs = [{"tail": 1, "head": 2, "cost": 0}] * 3
    body = {"network": {"nodes": 2, "supplies": [1, -1], "arcs": arcs}}
    wide = {"network": {"nodes": 4, "supplies": [1, 0, 0, -1], "arcs": arcs[:1]}}
    dimacs = b"p min 2 3\nn 1 1\nn 2 -1\na 1 2 0 1 0\na 1 2 0 1 0\na 1 2 0 1 0\n"
    refusals = [lambda: compare_task_from_json(json.dumps(body).encode(), settings),
                lambda: compare_task_from_json(json.dumps(wide).encode(), settings),
                lambda: compare_task_from_upload("big.min", dimacs, {}, settings)]
    for refuse in refusals:
        with pytest.raises(ApiError) as exc:
            refuse()
        assert exc.value.status == 413 and "(cosolve flow compare)" in exc.value.detail
        assert "flow solve" not in exc.value.detail
    with pytest.raises(ApiError) as exc:
        solve_task_from_json(json.dumps(body).encode(), settings)
    assert exc.value.status == 413 and "(cosolve flow solve)" in exc.value.detail
