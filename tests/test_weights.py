"""weights/MANIFEST.json tells the truth about every shipped checkpoint."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

WEIGHTS = Path(__file__).resolve().parents[1] / "weights"


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
