"""One rule for integers everywhere: a whole float (2.0) is the integer in a JSON body, as in
an uploaded .json file and on the command line; 1.5 and "2" are refused in all three (QA
sweep: a demand of 1.0 was refused in a body and read from the same instance as a file)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.app.helpers import assert_problem


def test_a_whole_float_is_an_integer_in_bodies_as_in_files(api: httpx.Client) -> None:
    instance = {"coords": [[0, 0], [1, 0], [0, 1]], "demands": [0, 1.0, 1], "capacity": 2.0}
    body = api.post("/v1/routing/cvrp/solve", json={"instance": instance, "solver": "pyvrp",
                                                    "time_limit": 1})
    assert body.status_code == 200, body.text
    upload = api.post("/v1/routing/cvrp/solve", data={"solver": "pyvrp", "time_limit": "1"},
                      files={"file": ("i.json", json.dumps(instance).encode())})
    assert upload.status_code == 200, upload.text
    assert body.json()["cost"] == upload.json()["cost"]
    for bad, field in ((1.5, "instance.demands[1]"), ("1", "instance.demands[1]")):
        broken = {**instance, "demands": [0, bad, 1]}
        assert_problem(api.post("/v1/routing/cvrp/solve", json={"instance": broken}), 422,
                       field)

    network = {"nodes": 2, "supplies": [1.0, -1], "arcs": [{"tail": 1, "head": 2, "cost": 1.0}]}
    solved = api.post("/v1/flow/min-cost", json={"network": network})
    assert solved.status_code == 200, solved.text
    assert solved.json()["cost"] == 1
    network["arcs"][0]["cost"] = 1.5  # type: ignore[index]
    assert_problem(api.post("/v1/flow/min-cost", json={"network": network}), 422,
                   "network.arcs[0].cost")


@pytest.mark.parametrize(("change", "field"), [
    ({"demands": [0, "3", 3, 3]}, "demands[1]"),
    ({"demands": [0, True, 3, 3]}, "demands[1]"),
    ({"coords": [[0, "0"], [1, 0], [0, 1], [1, 1]]}, "coords[0][1]"),
    ({"service_times": [0, "2", 2, 2], "time_windows": [[0, 99]] * 4}, "service_times[1]"),
    ({"depot": 1.0, "demands": [3, 0, 3, 3], "max_vehicles": 2.0, "ids": [1.0, 2, 3, 4]},
     None),
])
def test_files_and_bodies_read_an_instances_numbers_alike(api: httpx.Client,
                                                          change: dict, field: str | None
                                                          ) -> None:
    """Regression: a .json file (and the CLI) took "3" and true as demands where a body
    refused them, and refused depot 1.0, max_vehicles 2.0 and ids 1.0 where a body took
    them. Both now answer alike."""
    instance = {"coords": [[0, 0], [1, 0], [0, 1], [1, 1]], "demands": [0, 3, 3, 3],
                "capacity": 10, **change}
    problem = "cvrptw" if "time_windows" in change else "cvrp"
    body = api.post(f"/v1/routing/{problem}/solve",
                    json={"instance": instance, "solver": "pyvrp", "time_limit": 1})
    upload = api.post(f"/v1/routing/{problem}/solve",
                      data={"solver": "pyvrp", "time_limit": "1"},
                      files={"file": ("i.json", json.dumps(instance).encode())})
    if field is None:
        assert body.status_code == upload.status_code == 200, (body.text, upload.text)
        assert body.json()["cost"] == upload.json()["cost"]
    else:
        assert_problem(body, 422, f"instance.{field}")
        assert_problem(upload, 422, f"file.{field}")


def test_a_networks_node_count_may_be_a_whole_float(api: httpx.Client) -> None:
    network = {"nodes": 2.0, "supplies": [1, -1], "arcs": [{"tail": 1, "head": 2, "cost": 1}]}
    body = api.post("/v1/flow/min-cost", json={"network": network})
    upload = api.post("/v1/flow/min-cost",
                      files={"file": ("n.json", json.dumps(network).encode())})
    assert body.status_code == upload.status_code == 200, (body.text, upload.text)
