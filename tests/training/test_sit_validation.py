"""SIT's validation set and the re-validation of the shipped checkpoint on it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from training import sit
from training.loop import MANIFEST


def test_the_larger_validation_set_keeps_the_earlier_eight_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its first 8 instances are the set the earlier figures were measured on."""
    big = sit.validation_coords()
    monkeypatch.setattr(sit, "VAL_COUNT", 8)
    small = sit.validation_coords()
    assert big.shape[0] >= 32 and np.array_equal(big[:8], small)


def _small_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int,
                      rounds: int) -> Path:
    """Two n-node validation instances and a copy of MANIFEST.json to write to."""
    manifest = tmp_path / "MANIFEST.json"
    shutil.copy(MANIFEST, manifest)
    monkeypatch.setattr(sit, "MANIFEST", manifest)
    monkeypatch.setattr(sit, "VAL_N", n)
    monkeypatch.setattr(sit, "VAL_COUNT", 2)
    monkeypatch.setattr(sit, "VAL_ROUNDS", rounds)
    return manifest


def test_revalidate_records_the_new_bar_and_the_old_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = _small_validation(tmp_path, monkeypatch, 60, 2)
    before = next(e for e in json.loads(manifest.read_text())["checkpoints"]
                  if e["file"] == "sil_tsp.pt")["validation"]
    assert sit.main(["tsp", "--revalidate", "--threads", "1", "--device", "cpu"]) == 0
    entry = next(e for e in json.loads(manifest.read_text())["checkpoints"]
                 if e["file"] == "sil_tsp.pt")
    assert entry["validation"]["set"] == sit.validation_description() == \
        "2 uniform TSP60 instances, seed 20261130"
    record = entry["evaluations"][-1]
    assert record["gap_percent"] == entry["validation"]["gap_percent"] > 0
    assert record["before"] == {"set": before["set"], "gap_percent": before["gap_percent"]}
    assert record["candidate"] is False


def test_an_experiment_keeps_its_files_beside_out_and_leaves_the_shipped_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model-size experiment must not touch weights/sil_tsp.pt, its lineage's latest state,
    its curve or MANIFEST.json: everything it writes lives beside --out."""
    manifest = _small_validation(tmp_path, monkeypatch, 40, 1)
    shipped = sit.weights_path("tsp")
    shipped_bytes = shipped.read_bytes()
    manifest_text = manifest.read_text()
    out = tmp_path / "sil_big.pt"
    assert sit.main(["tsp", "--out", str(out), "--fresh", "--minutes", "0.01",
                     "--eval-minutes", "10", "--count", "4", "--n", "30", "--init", "ri",
                     "--max-segment", "20", "--tokens", "256", "--dim", "16", "--layers", "1",
                     "--heads", "2", "--reps", "4", "--threads", "1", "--device", "cpu"]) == 0
    assert out.exists() and out.with_suffix(".last.pt").exists()
    rows = out.with_suffix(".curve.csv").read_text().splitlines()
    assert rows[0].startswith("total_minutes") and len(rows) == 2
    assert sit.load_model(out, "cpu")[0].config.dim == 16
    assert shipped.read_bytes() == shipped_bytes
    assert manifest.read_text() == manifest_text
