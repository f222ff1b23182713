"""Pictures over HTTP: a job's drawing, its cost-over-time series (JSON and SVG), a
comparison's plot of every solver, and a batch's results as one zip."""

from __future__ import annotations

import io
import itertools
import json
import time
import xml.etree.ElementTree as ET
import zipfile
from typing import Any

import httpx
import pytest

from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.solution import build_solution
from tests.app.helpers import assert_problem
from tests.conftest import DATA

SVG = "{http://www.w3.org/2000/svg}"


def _wait(api: httpx.Client, job_id: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{job_id}").json()
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    pytest.fail(f"job {job_id} did not finish within {timeout} s: {job}")


def _wait_batch(api: httpx.Client, batch: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not batch["done"] and time.monotonic() < deadline:
        time.sleep(0.3)
        batch = api.get(f"/v1/batches/{batch['id']}").json()
    return batch


def _non_increasing(points: list[list[float]]) -> bool:
    return all(b[1] <= a[1] and b[0] >= a[0] for a, b in itertools.pairwise(points))


def test_a_job_draws_its_solution_and_serves_its_cost_series(api: httpx.Client) -> None:
    path = DATA / "X-n101-k25.vrp"
    response = api.post("/v1/jobs", files={"file": (path.name, path.read_bytes())},
                        data={"solver": "ils", "time_limit": "1"})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["links"]["progress"] == f"/v1/jobs/{job['id']}/progress"
    job = _wait(api, job["id"])
    assert job["state"] == "succeeded", job
    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()

    drawing = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "svg"})
    assert drawing.status_code == 200
    assert drawing.headers["content-type"].startswith("image/svg+xml")
    svg = ET.fromstring(drawing.text)
    routes = [r for r in solution["routes"] if r]
    assert len(svg.findall(f".//{SVG}polyline[@class='route']")) == len(routes)
    # the title's cost is the one the checker recomputes from the stored instance
    instance = parse_instance_bytes(path.read_bytes(), path.name)
    checked = build_solution(instance, solution["routes"], solver="ils", wall_time=0)
    title = svg.find(f"{SVG}title").text or ""  # type: ignore[union-attr]
    assert f"cost {round(checked.cost):,}" in title and "ils" in title and "e+" not in title

    series = api.get(f"/v1/jobs/{job['id']}/progress")
    assert series.status_code == 200
    body = series.json()
    assert body["final"] and body["state"] == "succeeded" and body["solver"] == "ils"
    points = body["points"]
    assert len(points) >= 2 and _non_increasing(points)
    assert points[-1][1] == pytest.approx(checked.cost) == pytest.approx(body["cost"])
    assert len(points) <= 1000

    plot = api.get(f"/v1/jobs/{job['id']}/progress", params={"format": "svg"})
    assert plot.headers["content-type"].startswith("image/svg+xml")
    lines = ET.fromstring(plot.text).findall(f".//{SVG}path[@class='series']")
    assert [line.attrib["data-name"] for line in lines] == ["ils"]

    assert_problem(api.get("/v1/jobs/nope/progress"), 404, field="job_id")
    assert_problem(api.get(f"/v1/jobs/{job['id']}/progress", params={"format": "png"}), 422)


def test_compare_with_svg_plots_every_solver_on_one_chart(api: httpx.Client) -> None:
    path = DATA / "eil51.tsp"
    response = api.post("/v1/routing/tsp/compare", files={"file": (path.name, path.read_bytes())},
                        data={"solvers": "nearest_neighbor,ils", "time_limit": "0.5",
                              "svg": "true", "reference": "426"})
    assert response.status_code == 200, response.text
    body = response.json()
    for row in body["rows"]:
        assert row["progress"] and _non_increasing(row["progress"])
        assert row["progress"][-1][1] == pytest.approx(row["cost"])
        assert "gap +" in row["svg"]  # the drawing's title has the gap to the reference
    plot = ET.fromstring(body["plot"])
    lines = plot.findall(f".//{SVG}path[@class='series']")
    assert sorted(line.attrib["data-name"] for line in lines) == ["ils", "nearest_neighbor"]
    plain = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": [[0, 0], [1, 0], [1, 1], [0, 1]]},
        "solvers": ["nearest_neighbor"], "time_limit": 0.5}).json()
    assert plain["plot"] is None and plain["rows"][0]["progress"]


def test_a_batch_downloads_as_one_zip(api: httpx.Client) -> None:
    files = [("files", (name, (DATA / name).read_bytes()))
             for name in ("eil51.tsp", "X-n101-k25.vrp")]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 202, response.text
    batch = _wait_batch(api, response.json())
    assert batch["done"]
    download = api.get(f"/v1/batches/{batch['id']}/results.zip")
    assert download.status_code == 200
    assert download.headers["content-type"] == "application/zip"
    assert f"batch-{batch['id']}.zip" in download.headers["content-disposition"]
    archive = zipfile.ZipFile(io.BytesIO(download.content))
    assert sorted(archive.namelist()) == sorted([
        "summary.md", "summary.json",
        "solutions/eil51.json", "solutions/eil51.tour", "drawings/eil51.svg",
        "progress/eil51.json", "progress/eil51.svg",
        "solutions/X-n101-k25.json", "solutions/X-n101-k25.sol", "drawings/X-n101-k25.svg",
        "progress/X-n101-k25.json", "progress/X-n101-k25.svg"])
    assert "| eil51.tsp | 51 | succeeded |" in archive.read("summary.md").decode()
    assert json.loads(archive.read("summary.json"))["id"] == batch["id"]
    stored = json.loads(archive.read("solutions/X-n101-k25.json"))
    drawing = ET.fromstring(archive.read("drawings/X-n101-k25.svg"))
    assert len(drawing.findall(f".//{SVG}polyline[@class='route']")) == len(
        [r for r in stored["routes"] if r])
    assert_problem(api.get("/v1/batches/nope/results.zip"), 404, field="batch_id")
