"""Network files built to break the JSON reader — nested 100,000 deep, integers of thousands of
digits — are InstanceErrors naming where (422s over HTTP), never a RecursionError (a 500)."""

from __future__ import annotations

import gzip

import httpx
import pytest

from solvers.errors import InstanceError
from solvers.flow.io import parse_network_bytes
from tests.app.helpers import assert_problem

SOLVE = "/v1/flow/min-cost"
COMPARE = "/v1/flow/min-cost/compare"
DEEP = b"[" * 100_000 + b"]" * 100_000
LONG_COST = (b'{"nodes": 2, "supplies": [1, -1], "arcs": [{"tail": 1, "head": 2, "cost": '
             + b"9" * 5000 + b"}]}")


@pytest.mark.parametrize("filename", ["deep.json", "deep.json.gz"])
def test_deeply_nested_json_is_an_instance_error(filename: str) -> None:
    data = gzip.compress(DEEP) if filename.endswith(".gz") else DEEP
    with pytest.raises(InstanceError, match="too deeply") as info:
        parse_network_bytes(data, filename)
    assert info.value.field == "file"


def test_integer_too_long_names_its_place() -> None:
    with pytest.raises(InstanceError, match="5000 digits") as info:
        parse_network_bytes(LONG_COST, "long.json")
    assert info.value.field == "arcs[0].cost"


@pytest.mark.parametrize("path", [SOLVE, COMPARE])
def test_deeply_nested_json_upload_is_a_422(api: httpx.Client, path: str) -> None:
    body = assert_problem(api.post(path, files={"file": ("deep.json", DEEP)}), 422,
                          field="file")
    assert "too deeply" in body["detail"]


def test_integer_too_long_in_an_upload_names_its_place(api: httpx.Client) -> None:
    assert_problem(api.post(SOLVE, files={"file": ("long.json", LONG_COST)}), 422,
                   field="file.arcs[0].cost")


@pytest.mark.parametrize(("nodes", "field"), [([1, 2.5], "network.nodes[1]"),
                                              ("abc", "network.nodes"),
                                              ([1, None], "network.nodes[1]")])
def test_a_bad_node_list_names_its_place_not_a_union_branch(api: httpx.Client, nodes: object,
                                                            field: str) -> None:
    """Regression: ``nodes`` is a list or a count, and pydantic's labels of those
    union branches (with a function's memory address in them) ended up in the field."""
    body = assert_problem(api.post(SOLVE, json={"network": {
        "nodes": nodes, "supplies": [1, -1], "arcs": []}}), 422, field=field)
    assert "function" not in body["detail"]
