"""Answers that must not move when code is only rearranged: the classical solvers, the flow
solvers and the scheduling heuristics on the fixed-seed suite of ``tests.fixed_answers``,
recorded before the routing package was split. The neural solvers' answers depend on the
CPU's floating-point instructions, so they are compared by running the whole suite before
and after a change (``python -m tests.fixed_answers``), not pinned here. A change that is
meant to change answers rewrites the file with ``--write`` and says so in its commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import fixed_answers

PINNED = json.loads((Path(__file__).resolve().parent / "data" / "fixed_answers.json").read_text())


@pytest.mark.parametrize("solver", ["nearest_neighbor", "ils"])
def test_routing_answers_are_unchanged(solver: str) -> None:
    answers = fixed_answers.routing_answers([solver])
    assert answers == {k: v for k, v in PINNED.items() if k.startswith(f"{solver}/")}


def test_flow_answers_are_unchanged() -> None:
    answers = fixed_answers.flow_answers()
    assert answers == {k: v for k, v in PINNED.items() if k.endswith(".min.gz")}


def test_scheduling_heuristics_answers_are_unchanged() -> None:
    pinned = {k: v for k, v in PINNED.items() if k.startswith("sched/")}
    names = [k.split("/", 1)[1] for k in pinned]
    assert fixed_answers.scheduling_answers(names) == pinned
