"""benchmarks.sil's paired study: the differences, their t-interval and the leaderboard rows
computed from recorded runs (nothing is solved here)."""

from __future__ import annotations

import json
import os
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


def test_headline_is_computed_from_the_runs_with_their_checkpoint(tmp_path: Path) -> None:
    """Every save recomputes the leaderboard rows from the recorded runs: a TSP section's
    rows (not the CVRP ones) and the paired bands', each
    learned row naming the checkpoint its runs loaded."""
    ck = {"file": "sil_tsp.pt", "sha256": "b28ec08935f4", "cpu_minutes": 310.8,
          "gpu_minutes": 0.0}
    run = {"set": "TSP1K uniform", "file": "u1.tsp", "problem": "tsp", "time_limit": 10.0,
           "reference": 100.0, "feasible": True, "wall_s": 10.0, "stats": {"kicks": 3}}
    runs = [{**run, "solver": "ils", "cost": 101.0},
            {**run, "solver": "sil", "cost": 104.0, "checkpoint": ck},
            {**run, "set": "CVRP1K uniform", "problem": "cvrp", "solver": "ils",
             "cost": 5.0, "reference": None}]
    stale = {"family": "TSP", "set": "TSP1K uniform", "solver": "ils", "budget": "10 s",
             "gap_percent": 9.9, "instances": 128, "reference": "x"}
    data = {"runs": runs, "meta": {}, "headline": [stale],
            "paired": [_row("a", "ils", 0, 101.0), {**_row("a", "sil_ls", 0, 100.0),
                                                     "checkpoint": ck}]}
    out = tmp_path / "sil.md"
    sil.save_results(out, data)
    saved = json.loads(out.with_suffix(".json").read_text())["headline"]
    assert [(h["set"], h["solver"], h["gap_percent"], h.get("checkpoint", {}).get("file"))
            for h in saved] == [
        ("TSP1K uniform", "ils", 1.0, None), ("TSP1K uniform", "sil", 4.0, "sil_tsp.pt"),
        ("TSP10K uniform, paired", "ils", 1.0, None),
        ("TSP10K uniform, paired", "sil_ls", 0.0, "sil_tsp.pt")]
    assert "sil_ls wins / losses" in out.read_text()


@pytest.mark.parametrize("argv", [["--seeds", "x"], ["--seeds", ","],
                                  ["--budget-scale", "0"], ["--ils-threads", "0"],
                                  ["--ils-threads", "two"]])
def test_paired_refuses_bad_options(argv: list[str], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        sil.main(["paired", *argv, "--out", str(tmp_path / "sil.md")])
    assert exc.value.code == 2 and argv[0] in capsys.readouterr().err
    assert not (tmp_path / "sil.json").exists()


def test_ils_runs_on_one_core_unless_told(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The children read COSOLVE_ILS_THREADS: one search by default, as every other solver
    here has one core, and the meta line records it."""
    monkeypatch.setenv("COSOLVE_ILS_THREADS", "auto")  # restored after the test
    monkeypatch.setattr(sil, "section_runs", lambda args: [("S", Path("a.tsp"), None)])
    monkeypatch.setattr(sil, "machine_info", lambda packages: {})
    seen: list[str] = []

    def fake_run(*args: object) -> dict[str, object]:
        seen.append(os.environ["COSOLVE_ILS_THREADS"])
        return {"file": "a.tsp", "solver": "ils", "time_limit": 1.0, "cost": 1.0,
                "feasible": True, "wall_s": 1.0, "stats": {}}

    monkeypatch.setattr(sil, "run", fake_run)
    out = tmp_path / "sil.md"
    assert sil.main(["tsp1k", "--solvers", "ils", "--out", str(out)]) == 0
    assert sil.main(["tsp1k", "--solvers", "ils", "--ils-threads", "2", "--out",
                     str(out), "--time-limit", "2"]) == 0
    assert seen == ["1", "2"]
    meta = json.loads(out.with_suffix(".json").read_text())["meta"]
    assert "COSOLVE_ILS_THREADS=1" in meta["tsp1k @ 10s"]
    assert "COSOLVE_ILS_THREADS=2" in meta["tsp1k @ 2s"]


def test_the_leaderboard_rounds_a_gap_as_its_table_does() -> None:
    """A mean gap of 0.2649 reads 0.26 in both places (rounded twice it read 0.27)."""
    from benchmarks.common import headline

    row = headline("TSP", "S", "ils", "10 s", 0.26495, 1, "x")
    assert f"{row['gap_percent']:.2f}" == f"{0.26495:.2f}" == "0.26"
