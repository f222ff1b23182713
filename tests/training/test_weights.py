"""weights/MANIFEST.json tells the truth about every shipped checkpoint."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import REPO as REPO_ROOT

REPO = REPO_ROOT
WEIGHTS = REPO / "weights"
MANIFEST = WEIGHTS / "MANIFEST.json"


def test_every_manifest_entry_matches_its_file() -> None:
    manifest = json.loads((WEIGHTS / "MANIFEST.json").read_text())
    assert manifest["checkpoints"], "no checkpoints listed"
    for entry in manifest["checkpoints"]:
        path = WEIGHTS / entry["file"]
        assert path.exists(), f"{entry['file']} is listed but missing"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], entry["file"]
        for key in ("training_steps", "cpu_minutes", "gpu_minutes", "validation"):
            assert key in entry, (entry["file"], key)
        assert isinstance(entry["validation"], dict) and entry["validation"], entry["file"]


def test_every_shipped_checkpoint_is_listed() -> None:
    listed = {e["file"] for e in json.loads((WEIGHTS / "MANIFEST.json").read_text())
              ["checkpoints"]}
    shipped = {p.name for p in WEIGHTS.glob("*.pt")}
    assert shipped <= listed, shipped - listed


def test_every_trainer_finds_the_gap_its_shipped_checkpoint_must_beat() -> None:
    """Regression: `training.sit --fresh` and a fresh clone's `training.goodrl` replaced the
    shipped weights with worse ones (their own first validation was "the best"). The bar is
    the recorded validation on the same set: each trainer must find it in MANIFEST.json."""
    from training import goodrl, sit
    from training.reld import recorded_gap

    entries = {e["file"]: e for e in json.loads(MANIFEST.read_text())["checkpoints"]}
    assert recorded_gap(sit.weights_path("tsp"), sit.validation_description()) == \
        entries["sil_tsp.pt"]["validation"]["gap_percent"]
    assert goodrl.shipped_score() == entries["goodrl.pt"]["validation"]["score"]


def test_a_relative_out_naming_a_shipped_checkpoint_gets_its_rules(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: `--out weights/reld_tsp.pt` (relative) was not recognised as the shipped
    file, so a short validation replaced it and MANIFEST.json went stale."""
    from training import reld

    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit, match="--val-count 8 is below"):
        reld.main(["tsp", "--val-count", "8", "--out", "weights/reld_tsp.pt", "--minutes", "0"])
