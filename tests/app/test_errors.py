"""Every way a request can be wrong gets a problem-details answer naming the field at fault,
never a 500 or a hang."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.conftest import STRICT_LIMITS
from tests.app.helpers import assert_problem

SQUARE = [[0, 0], [0, 1], [1, 1], [1, 0]]
MAN_FILE = "\n".join([  # a convention we do not read
    "NAME : geo5",
    "TYPE : TSP",
    "DIMENSION : 5",
    "EDGE_WEIGHT_TYPE : XRAY1",
    "NODE_COORD_SECTION",
    "1 38.24 20.42",
    "2 39.57 26.15",
    "3 40.56 25.32",
    "4 36.26 23.12",
    "5 33.48 10.54",
    "EOF",
]).encode()
STRICT_BODY_LIMIT = int(STRICT_LIMITS["COSOLVE_MAX_BODY_BYTES"])
STRICT_NODE_LIMIT = int(STRICT_LIMITS["COSOLVE_MAX_SYNC_NODES"])
STRICT_DECOMPRESSED_LIMIT = int(STRICT_LIMITS["COSOLVE_MAX_DECOMPRESSED_BYTES"])


def _tsp(api: httpx.Client, instance: dict[str, Any], **options: Any) -> httpx.Response:
    return api.post("/v1/routing/tsp/solve",
                    json={"instance": instance, "solver": "nearest_neighbor", **options})


def _cvrp(api: httpx.Client, **instance: Any) -> httpx.Response:
    base_instance: dict[str, Any] = {
        "coords": [[0, 0], [1, 0], [0, 1], [1, 1]], "demands": [0, 1, 2, 3], "capacity": 5,
    }
    return api.post("/v1/routing/cvrp/solve", json={
        "instance": {**base_instance, **instance}, "solver": "nearest_neighbor"})


def _upload(api: httpx.Client, path: str, filename: str, content: bytes,
            **fields: str) -> httpx.Response:
    return api.post(path, files={"file": (filename, content, "application/octet-stream")},
                    data={"solver": "nearest_neighbor", **fields})


# -- invalid instances -----------------------------------------------------------------------
def test_nan_coordinate(api: httpx.Client) -> None:
    # JSON has no NaN, but Python's json module (and others) write it; it must not crash us.
    raw = b'{"instance": {"coords": [[0, 0], [1, 0], [2, 2], [NaN, 1]]}, "solver": "ortools"}'
    response = api.post("/v1/routing/tsp/solve", content=raw,
                        headers={"content-type": "application/json"})
    body = assert_problem(response, 422, field="instance.coords[3]")
    assert "finite" in body["detail"]


def test_overflowing_coordinate(api: httpx.Client) -> None:
    raw = b'{"instance": {"coords": [[0, 0], [1e999, 0], [2, 2]]}}'
    response = api.post("/v1/routing/tsp/solve", content=raw,
                        headers={"content-type": "application/json"})
    assert_problem(response, 422, field="instance.coords[1]")


def test_coordinate_with_three_numbers(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"coords": [[0, 0], [1, 0, 5], [2, 2]]}), 422,
                   field="instance.coords[1]")


def test_too_few_nodes(api: httpx.Client) -> None:
    body = assert_problem(_tsp(api, {"coords": [[0, 0], [1, 1]]}), 422, field="instance.coords")
    assert "at least 3" in body["detail"]


def test_no_coordinates_or_matrix(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"name": "empty"}), 422, field="instance.coords")


def test_negative_demand(api: httpx.Client) -> None:
    assert_problem(_cvrp(api, demands=[0, 1, -2, 3]), 422, field="instance.demands[2]")


def test_non_integer_demand(api: httpx.Client) -> None:
    assert_problem(_cvrp(api, demands=[0, 1, 2.5, 3]), 422, field="instance.demands[2]")


def test_demand_above_capacity(api: httpx.Client) -> None:
    body = assert_problem(_cvrp(api, demands=[0, 1, 2, 9]), 422, field="instance.demands[3]")
    assert "capacity" in body["detail"]


def test_missing_capacity(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrp/solve", json={
        "instance": {"coords": SQUARE, "demands": [0, 1, 1, 1]}, "solver": "nearest_neighbor"})
    body = assert_problem(response, 422, field="instance.capacity")
    assert body["errors"] == [{"field": "instance.capacity", "message": "Field required"}]


def test_non_square_matrix(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"distance_matrix": [[0, 1, 2], [1, 0, 3]]}), 422,
                   field="instance.distance_matrix")


def test_negative_matrix_entry(api: httpx.Client) -> None:
    matrix = [[0, 1, 2], [1, 0, -3], [2, 3, 0]]
    assert_problem(_tsp(api, {"distance_matrix": matrix}), 422,
                   field="instance.distance_matrix[1][2]")


def test_duplicate_ids(api: httpx.Client) -> None:
    body = assert_problem(_tsp(api, {"coords": SQUARE, "ids": [7, 8, 7, 9]}), 422,
                          field="instance.ids[2]")
    assert "duplicate" in body["detail"]


def test_boolean_is_not_an_id(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"coords": SQUARE, "ids": [True, 1, 2, 3]}), 422,
                   field="instance.ids[0]")


def test_numbers_that_would_overflow_the_solvers(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"coords": [[0, 0], [1e300, 1e300], [1, 1]]}), 422,
                   field="instance.coords[1]")
    assert_problem(_cvrp(api, capacity=10**12), 422, field="instance.capacity")
    huge_file = b"TYPE: TSP\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1e300 1\n3 1 1"
    response = _upload(api, "/v1/routing/tsp/solve", "huge.tsp", huge_file)
    # named in the file's terms: its section and 1-based node id
    assert_problem(response, 422, field="file.NODE_COORD_SECTION")
    assert "node 2" in response.json()["detail"]


def test_fleet_larger_than_the_customers_is_capped_not_built(api: httpx.Client) -> None:
    """A huge fleet cap is legitimate input; solvers never build more vehicles than customers."""
    for solver in ("ortools", "pyvrp"):
        response = api.post("/v1/routing/cvrp/solve", json={
            "instance": {"coords": [[0, 0], [1, 0], [0, 1], [1, 1]], "demands": [0, 1, 2, 3],
                         "capacity": 5, "max_vehicles": 10**9},
            "solver": solver, "time_limit": 0.5})
        assert response.status_code == 200, response.text
        assert response.json()["feasible"]


def test_time_limit_below_a_solvers_start_up(api: httpx.Client) -> None:
    coords = [[i % 70, i // 70] for i in range(4900)]
    response = api.post("/v1/routing/tsp/solve", json={
        "instance": {"coords": coords}, "solver": "pyvrp", "time_limit": 1})
    body = assert_problem(response, 422, field="time_limit")
    assert body["needed"] > 1 and "pyvrp" in body["detail"]


def test_unknown_instance_field(api: httpx.Client) -> None:
    body = assert_problem(_tsp(api, {"coords": SQUARE, "colour": "red"}), 422,
                          field="instance.colour")
    assert body["errors"][0]["field"] == "instance.colour"


def test_unknown_top_level_field(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/solve",
                        json={"instance": {"coords": SQUARE}, "time_limt": 3})
    assert_problem(response, 422, field="time_limt")


def test_cvrp_fields_on_the_tsp_endpoint(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"coords": SQUARE, "demands": [0, 1, 1, 1]}), 422,
                   field="instance.demands")


def test_instance_problem_disagrees_with_path(api: httpx.Client) -> None:
    assert_problem(_tsp(api, {"problem": "cvrp", "coords": SQUARE}), 422,
                   field="instance.problem")


def test_invalid_json(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/solve", content=b'{"instance": {"coords": [[0, 0',
                        headers={"content-type": "application/json"})
    assert_problem(response, 422, field="body")


def test_json_that_is_not_an_object(api: httpx.Client) -> None:
    assert_problem(api.post("/v1/routing/tsp/solve", json=[1, 2, 3]), 422, field="body")


def test_a_job_body_that_is_not_an_object(api: httpx.Client) -> None:
    """Regression: ``null`` or ``[]`` posted to /v1/jobs answered "'problem' must be ...", where
    every other JSON endpoint says the body should be an object."""
    for raw in (b"null", b"[]", b"3"):
        body = assert_problem(api.post("/v1/jobs", content=raw,
                                       headers={"content-type": "application/json"}), 422,
                              field="body")
        assert "object" in body["detail"], body


# -- solvers ---------------------------------------------------------------------------------
def test_unknown_solver(api: httpx.Client) -> None:
    body = assert_problem(_tsp(api, {"coords": SQUARE}, solver="simulated-annealing"), 404,
                          field="solver")
    assert "ortools" in body["detail"]
    # the TSP solvers, not the min-cost-flow ones (QA: the whole registry was listed)
    assert "the tsp solvers" in body["detail"] and "ortools_mcf" not in body["detail"]


def test_unknown_solver_in_a_comparison(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["nearest_neighbor", "nope"]})
    assert_problem(response, 404, field="solvers[1]")


def test_duplicate_solvers_in_a_comparison(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["ortools", "nearest_neighbor", "ortools"]})
    assert_problem(response, 422, field="solvers[2]")


def test_a_comparison_past_every_solvers_size_limit_names_solvers(api: httpx.Client) -> None:
    """Regression: a comparison whose every solver refused the instance's size answered 413 on
    ``solver``, a field only a solve has; it names ``solvers``."""
    n = 2_100  # past reld's and polynet's 2,000 nodes for a CVRPTW
    instance = {"coords": [[(i * 7919) % 1000, (i * 104729) % 997] for i in range(n)],
                "demands": [0] + [1] * (n - 1), "capacity": 100, "time_windows": [[0, 1e7]] * n}
    response = api.post("/v1/routing/cvrptw/compare", json={
        "instance": instance, "solvers": ["reld", "polynet"], "time_limit": 1})
    body = assert_problem(response, 413, field="solvers")
    assert "'reld'" in body["detail"] and "'polynet'" in body["detail"], body
    assert body["nodes"] == n and body["limit"] == 2_000


def test_empty_solver_list(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/compare",
                        json={"instance": {"coords": SQUARE}, "solvers": []})
    assert_problem(response, 422, field="solvers")


def test_too_many_solvers_in_a_comparison(strict_api: httpx.Client) -> None:
    response = strict_api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["ortools", "pyvrp", "nearest_neighbor"]})
    assert_problem(response, 422, field="solvers")


def test_comparison_longer_than_a_request_may_run(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["ortools", "pyvrp"], "time_limit": 200})
    assert_problem(response, 422, field="time_limit")


# -- files -----------------------------------------------------------------------------------
def test_unsupported_edge_weight_type(api: httpx.Client) -> None:
    response = _upload(api, "/v1/routing/tsp/solve", "geo5.tsp", MAN_FILE)
    body = assert_problem(response, 422, field="file.EDGE_WEIGHT_TYPE")
    assert "XRAY1" in body["detail"] and "EUC_2D" in body["detail"]


def test_a_matrix_only_file_for_a_coordinate_solver_names_the_file(api: httpx.Client) -> None:
    """Regression: an EXPLICIT upload to ils answered ``instance.coords`` (no instance was sent)."""
    text = (b"NAME : m\nTYPE : TSP\nDIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
            b"EDGE_WEIGHT_FORMAT : FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1 2 3\n1 0 4 5\n"
            b"2 4 0 6\n3 5 6 0\nEOF\n")
    response = api.post("/v1/routing/tsp/solve", files={"file": ("m.tsp", text)},
                        data={"solver": "ils", "time_limit": "1"})
    body = assert_problem(response, 422, field="file.coords")
    assert "needs node coordinates" in body["detail"]


def test_a_comparison_of_a_matrix_only_file_names_the_file(api: httpx.Client) -> None:
    """Regression: as for a solve (above), a comparison whose every solver needs coordinates
    answered ``instance.coords`` for an uploaded file."""
    text = (b"NAME : m\nTYPE : TSP\nDIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
            b"EDGE_WEIGHT_FORMAT : FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1 2 3\n1 0 4 5\n"
            b"2 4 0 6\n3 5 6 0\nEOF\n")
    response = api.post("/v1/routing/tsp/compare", files={"file": ("m.tsp", text)},
                        data={"solvers": "ils,sil", "time_limit": "1"})
    body = assert_problem(response, 422, field="file.coords")
    assert "'ils'" in body["detail"] or "ils:" in body["detail"]


def test_wrong_file_extension(api: httpx.Client) -> None:
    response = _upload(api, "/v1/routing/tsp/solve", "kroA100.txt", b"NAME: x\n")
    body = assert_problem(response, 422, field="file")
    assert ".tsp" in body["detail"]


def test_truncated_gzip(api: httpx.Client, data_dir: Path) -> None:
    data = (data_dir / "kroA100.tsp.gz").read_bytes()
    response = _upload(api, "/v1/routing/tsp/solve", "kroA100.tsp.gz", data[: len(data) // 2])
    assert_problem(response, 422, field="file")


def test_garbage_gzip(api: httpx.Client) -> None:
    response = _upload(api, "/v1/routing/tsp/solve", "noise.tsp.gz", b"\x1f\x8b" + b"\x00" * 64)
    assert_problem(response, 422, field="file")


def test_garbage_tsplib_text(api: httpx.Client) -> None:
    text = b"NAME: x\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 a b\n"
    body = assert_problem(_upload(api, "/v1/routing/tsp/solve", "bad.tsp", text), 422)
    assert body["field"].startswith("file")


def test_cvrp_file_on_the_tsp_endpoint(api: httpx.Client, data_dir: Path) -> None:
    path = data_dir / "X-n101-k25.vrp"
    body = assert_problem(_upload(api, "/v1/routing/tsp/solve", path.name, path.read_bytes()),
                          422, field="file")
    assert "/v1/routing/cvrp/" in body["detail"]


def test_file_part_under_another_name(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/solve", files={"instance": ("x.tsp", b"")},
                        data={"solver": "ortools"})
    assert_problem(response, 422, field="instance")


def test_file_sent_as_a_plain_field(api: httpx.Client) -> None:
    # A multipart body without any file part: the request still must name what is missing.
    response = api.post(
        "/v1/routing/tsp/solve",
        content=b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--b--\r\n',
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    assert_problem(response, 422, field="file")


def test_unknown_form_field(api: httpx.Client, data_dir: Path) -> None:
    gz = (data_dir / "kroA100.tsp.gz").read_bytes()
    response = _upload(api, "/v1/routing/tsp/solve", "kroA100.tsp.gz", gz, colour="red")
    assert_problem(response, 422, field="colour")


def test_malformed_multipart(api: httpx.Client) -> None:
    response = api.post("/v1/routing/tsp/solve", content=b"--xyz\r\nnonsense",
                        headers={"content-type": "multipart/form-data; boundary=xyz"})
    assert response.status_code in (400, 422)
    assert_problem(response, response.status_code)


def test_two_file_parts_are_a_422_naming_the_part(api: httpx.Client, data_dir: Path) -> None:
    """Starlette's own refusal was a bare 400 'Too many files' with no field."""
    eil = (data_dir / "eil51.tsp").read_bytes()
    for url in ("/v1/routing/tsp/solve", "/v1/jobs"):
        response = api.post(url, files=[("file", ("a.tsp", eil)), ("file", ("b.tsp", eil))],
                            data={"solver": "nearest_neighbor", "problem": "tsp"})
        body = assert_problem(response, 422, field="file")
        assert "Too many files" in body["detail"] and "at most 1 'file' part" in body["detail"]


def test_gzip_bomb_is_refused(strict_api: httpx.Client) -> None:
    """A small .gz that expands past the server's limit fails cleanly, not by memory."""
    bomb = gzip.compress(b"0" * (4 * STRICT_DECOMPRESSED_LIMIT), compresslevel=9)
    assert len(bomb) < STRICT_BODY_LIMIT
    response = _upload(strict_api, "/v1/routing/tsp/solve", "bomb.tsp.gz", bomb)
    body = assert_problem(response, 422, field="file")
    assert "decompresses to more than" in body["detail"]


# -- limits ----------------------------------------------------------------------------------
@pytest.mark.parametrize("time_limit", [0, -1, 301])
def test_time_limit_out_of_range(api: httpx.Client, time_limit: float) -> None:
    assert_problem(_tsp(api, {"coords": SQUARE}, time_limit=time_limit), 422, field="time_limit")


def test_time_limit_out_of_range_in_a_form(strict_api: httpx.Client, data_dir: Path) -> None:
    gz = (data_dir / "kroA100.tsp.gz").read_bytes()
    for value in ("0", "6", "soon", "nan"):
        response = _upload(strict_api, "/v1/routing/tsp/solve", "kroA100.tsp.gz", gz,
                           time_limit=value)
        assert_problem(response, 422, field="time_limit")


def test_body_over_the_limit(strict_api: httpx.Client) -> None:
    coords = [[float(i), float(i % 7)] for i in range(STRICT_BODY_LIMIT // 8)]
    response = strict_api.post("/v1/routing/tsp/solve", json={"instance": {"coords": coords}})
    body = assert_problem(response, 413)
    assert str(STRICT_BODY_LIMIT) in body["detail"]


def _chunks(payload: bytes) -> Iterator[bytes]:
    for start in range(0, len(payload), 4096):
        yield payload[start:start + 4096]


def test_chunked_body_over_the_limit(strict_api: httpx.Client) -> None:
    """No Content-Length: the server must count the streamed bytes and stop at the limit."""
    payload = b'{"instance": {"coords": [' + b"[1.5, 2.5], " * (STRICT_BODY_LIMIT // 8)
    payload += b"[0, 0]]}}"
    response = strict_api.post("/v1/routing/tsp/solve", content=_chunks(payload),
                               headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_problem(response, 413)


def test_chunked_upload_over_the_limit(strict_api: httpx.Client) -> None:
    payload = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.tsp"\r\n\r\n'
               + b"#" * (2 * STRICT_BODY_LIMIT) + b"\r\n--b--\r\n")
    response = strict_api.post("/v1/routing/tsp/solve", content=_chunks(payload),
                               headers={"content-type": "multipart/form-data; boundary=b"})
    assert_problem(response, 413)


def test_upload_over_the_limit(strict_api: httpx.Client) -> None:
    response = _upload(strict_api, "/v1/routing/tsp/solve", "big.tsp",
                       b"#" * (2 * STRICT_BODY_LIMIT))
    assert_problem(response, 413)


def test_too_many_nodes_for_the_request(strict_api: httpx.Client, data_dir: Path) -> None:
    gz = (data_dir / "kroA100.tsp.gz").read_bytes()
    response = _upload(strict_api, "/v1/routing/tsp/solve", "kroA100.tsp.gz", gz)
    body = assert_problem(response, 413, field="file")
    assert "/v1/jobs" in body["detail"] and "cosolve solve" in body["detail"]
    assert (body["nodes"], body["limit"]) == (100, STRICT_NODE_LIMIT)
    coords = [[i, i * i % 17] for i in range(STRICT_NODE_LIMIT + 20)]
    response = strict_api.post("/v1/routing/tsp/compare",
                               json={"instance": {"coords": coords}, "solvers": ["ortools"]})
    assert_problem(response, 413, field="instance")


def test_small_limits_still_solve(strict_api: httpx.Client) -> None:
    response = strict_api.post("/v1/routing/tsp/solve",
                               json={"instance": {"coords": SQUARE}, "solver": "ortools"})
    assert response.status_code == 200
    assert response.json()["time_limit"] == float(STRICT_LIMITS["COSOLVE_DEFAULT_TIME_LIMIT"])


# -- protocol --------------------------------------------------------------------------------
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_unsupported_content_type(api: httpx.Client, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = api.post("/v1/routing/tsp/solve", content=b"coords=1,2", headers=headers)
    assert_problem(response, 415, field="content-type")


def test_unsupported_content_type_says_what_each_endpoint_takes(api: httpx.Client) -> None:
    """A batch takes only multipart and a session only JSON: their 415s said what the
    routing endpoints take ('an instance object', "a 'file' part holding nothing")."""
    plain = {"content-type": "text/plain"}
    body = assert_problem(api.post("/v1/batches", content=b"x", headers=plain), 415,
                          field="content-type")
    assert "'files' parts" in body["detail"] and "instance object" not in body["detail"]
    assert "multipart/form-data" in body["detail"]
    sid = api.post("/v1/scheduling/sessions", json={"pool": "2x2"}).json()["id"]
    body = assert_problem(api.post(f"/v1/scheduling/sessions/{sid}/events", content=b"x",
                                   headers=plain), 415, field="content-type")
    assert body["detail"].endswith("Send application/json.")
    assert api.delete(f"/v1/scheduling/sessions/{sid}").status_code == 204


def test_unknown_route(api: httpx.Client) -> None:
    assert_problem(api.get("/v2/nothing-here"), 404)
    assert_problem(api.post("/v1/routing/knapsack/compare", json={}), 404, field="problem")


def test_wrong_method(api: httpx.Client) -> None:
    response = api.get("/v1/routing/tsp/solve")
    assert_problem(response, 405)
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize(("path", "allowed"), [
    ("/v1/jobs/0123456789abcdef", {"GET", "DELETE"}),
    ("/v1/jobs", {"GET", "POST"}),
])
def test_wrong_method_lists_every_allowed_method(api: httpx.Client, path: str,
                                                 allowed: set[str]) -> None:
    """A path has one route per method: the 405 named only the first route's (PUT
    /v1/jobs/{id} said 'allow: GET' though DELETE is served there too)."""
    response = api.put(path, json={})
    body = assert_problem(response, 405)
    listed = {m.strip() for m in response.headers["allow"].split(",")} - {"HEAD"}
    assert listed == allowed
    assert all(m in body["detail"] for m in allowed)


def test_a_fleet_ils_cannot_meet_is_a_422_naming_max_vehicles(api: httpx.Client) -> None:
    """Five customers of 3 on vehicles of 8 need three routes though the demand bound says
    two: ils's route elimination cannot get there, and the answer says which field to change.
    (Three customers of 6 on vehicles of 10 are now refused before solving: no two share a
    vehicle.)"""
    response = api.post("/v1/routing/cvrp/solve", json={
        "instance": {"coords": [[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1]],
                     "demands": [0, 3, 3, 3, 3, 3], "capacity": 8, "max_vehicles": 2},
        "solver": "ils", "time_limit": 1.0})
    body = assert_problem(response, 422, field="instance.max_vehicles")
    # five customers are few enough to try every partition: no plan exists, and ils says so
    # at once instead of searching its whole time limit
    assert "max_vehicles is 2" in body["detail"] and "proven" in body["detail"]


def test_a_solvers_own_size_limit_names_the_solver_field() -> None:
    """Regression: the 413 of a solver's node limit named no field ("every error names the
    field at fault"); the request's fix is another solver, so it names ``solver``."""
    from app.errors import domain_problem
    from solvers.catalog import get_solver
    from solvers.errors import InstanceTooLargeError

    with pytest.raises(InstanceTooLargeError) as info:
        get_solver("polynet", problem="cvrptw", nodes=2_001)
    problem = domain_problem(info.value)
    assert (problem.status, problem.field) == (413, "solver")


def test_an_unknown_query_parameter_is_named_not_ignored(api: httpx.Client) -> None:
    """A mistyped ``?fromat=sol`` served JSON and ``?problme=tsp`` listed every solver: query
    parameters an endpoint does not take were silently ignored."""
    assert api.get("/v1/solvers", params={"problem": "tsp"}).status_code == 200
    body = assert_problem(api.get("/v1/solvers", params={"problme": "tsp"}), 422, "problme")
    assert "this endpoint takes problem" in body["detail"]
    body = assert_problem(api.get("/v1/jobs", params={"limt": "5"}), 422, "limt")
    assert "limit" in body["detail"] and "offset" in body["detail"]
    assert_problem(api.get("/healthz", params={"verbose": "1"}), 422, "verbose")
    # the documentation pages are not the API's endpoints
    assert api.get("/docs/oauth2-redirect", params={"state": "x", "code": "y"}).status_code == 200


def test_a_client_gone_mid_body_is_one_log_line(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """A client that disconnected part way through its body logged two ERROR tracebacks
    (ours as an unhandled error, then uvicorn's, as the exception left the app): it is one
    line now, and nothing leaves the app for the server to log."""
    import asyncio
    import logging

    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(data_dir=tmp_path))
    parts = [{"type": "http.request", "body": b'{"instance": {"coords": [', "more_body": True},
             {"type": "http.disconnect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return parts.pop(0) if parts else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/routing/tsp/solve",
             "raw_path": b"/v1/routing/tsp/solve", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"),
                         (b"content-length", b"100000")],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    with caplog.at_level(logging.INFO):
        asyncio.run(app(scope, receive, send))  # raised ClientDisconnect before
    ours = [r for r in caplog.records if "disconnect" in r.getMessage()]
    assert len(ours) == 1 and ours[0].levelno < logging.ERROR and not ours[0].exc_info
    assert "POST /v1/routing/tsp/solve" in ours[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
