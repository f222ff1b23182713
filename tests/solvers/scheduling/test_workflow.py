"""Workflow loading, validation and generators."""

from __future__ import annotations

import gzip
import json
from typing import Any

import numpy as np
import pytest

from solvers.errors import InstanceError
from solvers.scheduling.workflow import (
    SIZE_FACTOR,
    build_workflow,
    generate_workflow,
    load_workflow,
    parse_workflow_bytes,
    workflow_from_dict,
)
from tests.solvers.scheduling.conftest import DIAMOND, WORKFLOWS


@pytest.mark.parametrize(("name", "tasks", "edges", "runtime"), [
    ("CyberShake_30.xml", 30, 52, 760.53), ("Montage_25.xml", 25, 45, 227.75),
    ("Inspiral_30.xml", 30, 35, 6617.07), ("Sipht_30.xml.gz", 29, 33, 5546.46),
    ("Epigenomics_24.xml", 24, 27, 17720.15), ("HEFT_paper.xml", 10, 15, 127.0)])
def test_dax_files_load_with_their_task_and_edge_counts(name: str, tasks: int, edges: int,
                                                        runtime: float) -> None:
    wf = load_workflow(WORKFLOWS / name)
    assert (wf.n, wf.edges) == (tasks, edges)
    assert wf.runtimes.sum() == pytest.approx(runtime, abs=0.01)
    assert np.array_equal(wf.sizes, wf.runtimes * SIZE_FACTOR)


def test_heft_paper_dag_derived_quantities() -> None:
    wf = load_workflow(WORKFLOWS / "HEFT_paper.xml")
    # critical path T1 → T2 (or T4) → T9 → T10: 14 + 13 + 18 + 21 = 66 runtime seconds
    assert wf.critical_path() == pytest.approx(66 * SIZE_FACTOR)
    # described in the runtimes' own seconds, beside total_runtime (before: 16× apart)
    assert wf.describe()["critical_path"] == pytest.approx(66)
    assert wf.roots == (0,)
    assert wf.children[0] == (1, 2, 3, 4, 5)
    # upward rank (no communication): T10 = 21, T9 = 39, T2 = T4 = 13 + 39, T1 = 14 + 52
    rank = wf.upward_rank(SIZE_FACTOR)
    assert rank[[9, 8, 1, 3, 0]].tolist() == pytest.approx([21, 39, 52, 52, 66])
    assert wf.descendant_work[0] == pytest.approx((127 - 14) * SIZE_FACTOR)


def _bad(tasks: list[dict[str, Any]]) -> InstanceError:
    with pytest.raises(InstanceError) as info:
        workflow_from_dict({"tasks": tasks})
    return info.value


def test_cycle_is_named() -> None:
    err = _bad([{"id": "x", "runtime": 1, "parents": ["z"]},
                {"id": "y", "runtime": 1, "parents": ["x"]},
                {"id": "z", "runtime": 1, "parents": ["y"]},
                {"id": "w", "runtime": 1}])
    assert err.field == "tasks"
    assert "cycle" in err.message and "x -> y -> z -> x" in err.message


def test_missing_parent_negative_runtime_and_duplicates_name_the_task() -> None:
    err = _bad([{"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "parents": ["nope"]}])
    assert (err.field, "'nope'" in err.message) == ("tasks[1].parents", True)
    err = _bad([{"id": "a", "runtime": -3}])
    assert err.field == "tasks[0].runtime" and "[0, 1e+09]" in err.message
    assert _bad([{"id": "a", "runtime": 1}, {"id": "b", "runtime": 2e9}]).field == \
        "tasks[1].runtime"
    err = _bad([{"id": "a", "runtime": 1}, {"id": "a", "runtime": 1}])
    assert err.field == "tasks[1].id"
    assert _bad([{"id": "a", "runtime": 1, "parents": ["a"]}]).field == "tasks[0].parents"
    assert _bad([]).field == "tasks"


def test_dax_errors() -> None:
    with pytest.raises(InstanceError, match="not well-formed"):
        parse_workflow_bytes(b"<adag><job", "x.xml")
    bad = (b'<adag><job id="A" runtime="1"/><child ref="A"><parent ref="B"/></child></adag>')
    with pytest.raises(InstanceError) as info:
        parse_workflow_bytes(bad, "x.xml")
    assert info.value.field == "tasks[0].parents"
    with pytest.raises(InstanceError, match="unknown workflow extension"):
        parse_workflow_bytes(b"", "x.txt")
    # ids are capped as inline JSON tasks are (file ids of any length were taken before)
    long = b'<adag><job id="' + b"A" * 201 + b'" runtime="1"/></adag>'
    with pytest.raises(InstanceError, match="at most 200 characters") as info:
        parse_workflow_bytes(long, "x.xml")
    assert info.value.field == "tasks[0].id"


def test_wfcommons_json_both_schemas_and_gzip() -> None:
    v14 = {"name": "w14", "workflow": {"tasks": [
        {"name": "t1", "runtime": 2.5, "parents": []},
        {"name": "t2", "runtime": 1.0, "parents": ["t1"]}]}}
    v15 = {"name": "w15", "workflow": {
        "specification": {"tasks": [{"id": "t1", "parents": [], "children": ["t2"]},
                                    {"id": "t2", "parents": ["t1"], "children": []}]},
        "execution": {"tasks": [{"id": "t1", "runtimeInSeconds": 2.5},
                                {"id": "t2", "runtimeInSeconds": 1.0}]}}}
    for obj in (v14, v15):
        wf = parse_workflow_bytes(gzip.compress(json.dumps(obj).encode()), "w.json.gz")
        assert wf.ids == ("t1", "t2") and wf.parents == ((), (0,))
        assert wf.runtimes.tolist() == [2.5, 1.0]
    assert workflow_from_dict(workflow_from_dict(DIAMOND).to_dict()).parents == \
        workflow_from_dict(DIAMOND).parents
    # 1.4 with both a name and an id: the parents are named by task name
    named = {"name": "w", "workflow": {"tasks": [
        {"name": "fastqSplit_00000001", "id": "00000001", "runtime": 2, "parents": []},
        {"name": "filterContams_00000002", "id": "00000002", "runtime": 1,
         "parents": ["fastqSplit_00000001"]}]}}
    wf = workflow_from_dict(named)
    assert wf.ids == ("00000001", "00000002") and wf.parents == ((), (0,))


@pytest.mark.parametrize(("kind", "n", "exact"), [
    ("montage", 25, True), ("cybershake", 30, True), ("inspiral", 30, True),
    ("sipht", 29, True), ("montage", 100, False), ("cybershake", 100, False),
    ("inspiral", 100, False), ("sipht", 60, False), ("inspiral", 1000, False)])
def test_generators_hit_the_size_and_are_seeded(kind: str, n: int, exact: bool) -> None:
    wf = generate_workflow(kind, n, seed=3)
    assert wf.n == n if exact else abs(wf.n - n) <= 0.1 * n
    assert len(wf.roots) >= 1 and wf.critical_path() > 0
    again = generate_workflow(kind, n, seed=3)
    assert np.array_equal(wf.runtimes, again.runtimes)
    assert not np.array_equal(wf.runtimes, generate_workflow(kind, n, seed=4).runtimes)


def test_dense_dag_is_capped_and_fast_below_the_cap() -> None:
    n = 400
    ids = [f"t{i}" for i in range(n)]
    parents = [[] for _ in range(200)] + [ids[:200] for _ in range(200)]  # 40,000 edges
    wf = build_workflow("dense", ids, [1.0] * n, parents)
    assert wf.edges == 40_000
    assert wf.descendant_work[0] == pytest.approx(200 * SIZE_FACTOR)
    with pytest.raises(InstanceError, match="dependencies"):
        build_workflow("too-dense", [f"t{i}" for i in range(1000)], [1.0] * 1000,
                       [[] for _ in range(500)] + [[f"t{j}" for j in range(500)]] * 500)
