"""Shared pieces of the scheduling tests: the shipped DAX files and a hand-checked diamond."""

from __future__ import annotations

from typing import Any

import pytest

from solvers.scheduling.workflow import Workflow, load_workflows, workflow_from_dict
from tests.conftest import DATA

WORKFLOWS = DATA / "workflows"
CLASSIC = [WORKFLOWS / f for f in ("CyberShake_30.xml", "Montage_25.xml", "Inspiral_30.xml",
                                   "Sipht_30.xml.gz")]

#: a (1 s) → b (2 s), c (1 s) → d (1 s). On two 8-vCPU VMs (2 s of time per runtime second):
#: a 0–2, then b 2–6 and c 2–4 on the two VMs, d 6–8: flowtime 8, busy 10 of 2 × 8 VM-seconds.
DIAMOND: dict[str, Any] = {"name": "diamond", "tasks": [
    {"id": "a", "runtime": 1, "parents": []},
    {"id": "b", "runtime": 2, "parents": ["a"]},
    {"id": "c", "runtime": 1, "parents": ["a"]},
    {"id": "d", "runtime": 1, "parents": ["b", "c"]}]}


@pytest.fixture(scope="session")
def classic() -> list[Workflow]:
    return load_workflows(CLASSIC)


@pytest.fixture
def diamond() -> Workflow:
    return workflow_from_dict(DIAMOND)
