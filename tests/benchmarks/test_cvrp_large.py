"""benchmarks.cvrp_large on tiny sizes: a real run of both parts in a few seconds, the 1M
part joining the table of the 100K part, and bad options refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import cvrp_large

TINY = ["--n", "150", "--limit", "0.5", "--reference-limit", "1", "--big-n", "400",
        "--big-limit", "0.5"]


def test_tiny_run_writes_one_table_and_joins_parts(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cvrp_large, "CACHE", tmp_path / "cache")
    out = tmp_path / "cvrp_large.md"
    assert cvrp_large.main([*TINY, "--parts", "100k", "--out", str(out)]) == 0
    # a run outside benchmarks/results stores no reference
    assert not (tmp_path / "cache").exists()
    assert cvrp_large.main([*TINY, "--parts", "1m", "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    runs = {r["part"]: r for r in data["runs"]}
    assert set(runs) == {"reference", "100k", "1m"}
    for r in runs.values():
        assert r["feasible"] and r["rss_mb"] > 0 and r["check_s"] >= 0
        assert r["first_s"] is not None and r["first_s"] <= r["wall"]
        assert abs(r["recomputed"] - r["cost"]) <= 1e-6 * r["cost"]
    assert runs["100k"]["gap"] == pytest.approx(
        100 * (runs["100k"]["cost"] / runs["reference"]["cost"] - 1))
    assert [p["section"] for p in data["provenance"]] == ["100k", "1m"]
    assert {h["set"] for h in data["headline"]} == {"uniform 150 (seed 2026)",
                                                   "uniform 400 (seed 2026)"}
    assert [cvrp_large._size(n) for n in (100_000, 1_000_000, 2500)] == ["100K", "1M", "2.5K"]
    table = out.read_text()
    assert "| 1m | 400 | ils |" in table and "Command (1m)" in table
    assert "`pyvrp`: takes the instance" in table  # 150 customers are within its limit


def test_bad_options_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.md"
    for bad, option in ((["--parts", "10k"], "--parts"), (["--limit", "0"], "--limit"),
                        (["--threads", "two"], "--threads"), (["--seed", "x"], "--seed")):
        with pytest.raises(SystemExit) as exc:
            cvrp_large.main([*TINY, *bad, "--out", str(out)])
        assert exc.value.code == 2 and option in capsys.readouterr().err
    assert not out.exists()
