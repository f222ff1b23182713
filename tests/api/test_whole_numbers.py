"""One rule for integers everywhere: a whole float (2.0) is the integer in a JSON body, as in
an uploaded .json file and on the command line; 1.5 and "2" are refused in all three (QA
sweep: a demand of 1.0 was refused in a body and read from the same instance as a file)."""

from __future__ import annotations

import json

import httpx

from tests.api.helpers import assert_problem


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
