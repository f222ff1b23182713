"""training.manifest: trainers running side by side never drop each other's entries."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest

from training import manifest


def _writer(path: str, tag: str, count: int) -> None:
    for i in range(count):
        manifest.replace_entry({"file": f"{tag}_{i}.pt", "sha256": tag}, Path(path))


def test_concurrent_writers_keep_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "MANIFEST.json"
    manifest.replace_entry({"file": "keep.pt", "sha256": "x", "note": "old"}, path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), tag, 60)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    files = [e["file"] for e in json.loads(path.read_text())["checkpoints"]]
    assert len(files) == 121 and files == sorted(files) and "keep.pt" in files


def test_replace_entry_replaces_only_its_file(tmp_path: Path) -> None:
    path = tmp_path / "MANIFEST.json"
    manifest.replace_entry({"file": "a.pt", "sha256": "1"}, path)
    manifest.replace_entry({"file": "b.pt", "sha256": "2"}, path)
    manifest.replace_entry({"file": "a.pt", "sha256": "3"}, path)
    data = json.loads(path.read_text())
    assert data["schema"] == 1
    assert data["checkpoints"] == [{"file": "a.pt", "sha256": "3"}, {"file": "b.pt", "sha256": "2"}]
    weights = tmp_path / "b.pt"
    weights.write_bytes(b"new")
    manifest.refresh_sha(weights, path)
    assert json.loads(path.read_text())["checkpoints"][1]["sha256"] == manifest.file_sha256(weights)


def test_a_second_training_run_on_the_same_checkpoint_is_refused(tmp_path) -> None:
    ckpt = tmp_path / "reld_tsp.last.pt"
    first = manifest.claim_training(ckpt)
    with pytest.raises(SystemExit, match="another training run"):
        manifest.claim_training(ckpt)
    manifest.claim_training(tmp_path / "other.last.pt").close()  # other checkpoints are free
    first.close()
    manifest.claim_training(ckpt).close()  # free again once the first run is gone


@pytest.mark.parametrize("module", ["training.instances", "training.reld", "training.polynet",
                                    "training.sit", "training.goodrl",
                                    "training.compare_checkpoints"])
@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_every_training_cli_refuses_a_seed_out_of_range(
        module: str, seed: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A negative --seed was numpy's ValueError traceback once training had started, and 2**64
    was taken: a usage error (exit 2) naming --seed, before any work."""
    import importlib

    args = {"training.instances": ["tsp", "--out", "unused.pkl"],
            "training.compare_checkpoints": ["tsp", "a.pt", "b.pt"],
            "training.goodrl": []}.get(module, ["tsp"])
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main([*args, "--seed", seed])
    assert stopped.value.code == 2
    assert f"--seed: must be between 0 and 2147483647, got {seed}" in capsys.readouterr().err


def test_a_checkpoint_is_replaced_only_by_a_gain_of_a_tenth_of_a_point(tmp_path: Path) -> None:
    """Every trainer decides through manifest.judge (training.loop.Keeper for the route
    trainers): a 0.05-point gain keeps the file, 0.1 replaces it and becomes the new bar, and
    MANIFEST.json records every evaluation, the kept ones too."""
    from training import loop

    path = tmp_path / "MANIFEST.json"
    manifest.replace_entry({"file": "m.pt", "sha256": "x",
                            "validation": {"gap_percent": 2.0}}, path)
    written: list[dict[str, object]] = []
    keeper = loop.Keeper(tmp_path / "m.pt", True, 2.0, None, path)
    assert not keeper.offer(None, 1.95, {"steps": 1}, written.append)
    assert not written
    assert keeper.offer(None, 1.9, {"steps": 2}, written.append)
    assert written == [{}]
    assert not keeper.offer(None, 1.85, {"steps": 3}, written.append)  # the bar is 1.9 now
    assert len(written) == 1
    entry = json.loads(path.read_text())["checkpoints"][0]
    assert [e["candidate"] for e in entry["evaluations"]] == [False, True, False]
    assert [e["steps"] for e in entry["evaluations"]] == [1, 2, 3]
    # a new entry for the file keeps its record of evaluations
    manifest.replace_entry({"file": "m.pt", "sha256": "y"}, path)
    assert len(json.loads(path.read_text())["checkpoints"][0]["evaluations"]) == 3
    assert manifest.judge("n.pt", 0.95, 1.0, {}, None) is False
    assert manifest.judge("n.pt", 0.9, 1.0, {}, None) is True
    assert manifest.judge("n.pt", 5.0, None, {}, None) is True  # nothing to beat yet
