"""benchmarks.sil's paired study: the differences, their t-interval and the leaderboard rows
computed from recorded runs (nothing is solved here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import sil


def _row(file: str, solver: str, seed: int, cost: float, band: str = "TSP10K uniform",
         ) -> dict[str, Any]:
    return {"band": band, "file": file, "solver": solver, "seed": seed, "time_limit": 30.0,
            "cost": cost, "reference": 100.0, "feasible": True, "load_1m": 1.0,
            "stats": {"kicks": 5}}


def test_paired_summary_differences_and_interval() -> None:
    rows = [_row("a", "ils", 0, 101.0), _row("a", "sil_ls", 0, 102.0),
            _row("a", "ils", 1, 101.0), _row("a", "sil_ls", 1, 100.5),
            _row("b", "ils", 0, 103.0), _row("b", "sil_ls", 0, 104.5),
            _row("b", "ils", 1, 102.0)]  # unpaired: left out
    [s] = sil.paired_summary(rows)
    # differences in gap points: +1.0, -0.5, +1.5 -> mean 0.667, sd 1.041, t(2) = 4.303
    assert (s["wins"], s["losses"], len(s["pairs"])) == (1, 2, 3)
    assert s["diff"] == pytest.approx(2 / 3)
    assert s["half"] == pytest.approx(4.3027 * 1.0408 / 3 ** 0.5, rel=1e-3)
    assert s["ils"] == pytest.approx(5 / 3) and s["sil_ls"] == pytest.approx(7 / 3)
    text = "\n".join(sil.render_paired(rows))
    assert "| TSP10K uniform | 30 | 2 × 2 | 1.667% | 2.333% | +0.667 |" in text


def test_paired_headline_replaces_only_its_own_rows(tmp_path: Path) -> None:
    old = {"family": "TSP", "set": "TSP1K uniform", "solver": "ils", "budget": "10 s",
           "gap_percent": 0.31, "instances": 128, "reference": "x"}
    data = {"runs": [], "meta": {}, "headline": [old, {**old, "set": "TSP10K uniform, paired"}],
            "paired": [_row("a", "ils", 0, 101.0), _row("a", "sil_ls", 0, 100.0)]}
    out = tmp_path / "sil.md"
    sil.save_results(out, data)
    saved = json.loads(out.with_suffix(".json").read_text())["headline"]
    assert saved[0] == old
    assert [(h["set"], h["solver"], h["gap_percent"]) for h in saved[1:]] == [
        ("TSP10K uniform, paired", "ils", 1.0), ("TSP10K uniform, paired", "sil_ls", 0.0)]
    assert "sil_ls wins / losses" in out.read_text()


@pytest.mark.parametrize("argv", [["--seeds", "x"], ["--seeds", ","],
                                  ["--budget-scale", "0"]])
def test_paired_refuses_bad_options(argv: list[str], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        sil.main(["paired", *argv, "--out", str(tmp_path / "sil.md")])
    assert exc.value.code == 2 and argv[0] in capsys.readouterr().err
    assert not (tmp_path / "sil.json").exists()
