"""benchmarks.cvrp keeps the sets a run leaves out, with their own command and load, when
they were measured under the same settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cvrp


def _settings(**changes: Any) -> dict[str, Any]:
    base = {"limit": 60.0, "belgium_limit": 120.0, "uniform_n": 100_000,
            "uniform_limit": 60.0, "seeds": [0], "sets": ["belgium"], "data": "data",
            "ils_threads": "auto"}
    return {**base, **changes}


def _meta(**changes: Any) -> dict[str, Any]:
    return {"provenance": {"command": "python -m benchmarks.cvrp --sets belgium",
                           "date": "2026-12-07T19:00:00+00:00", "commit": "new",
                           "machine": {"cpu": "cpu", "cores": 2}},
            "machine": {"cpu": "cpu", "cores": 2, "ram_gib": 8,
                        "load_average_at_start": [0.2, 0.3, 0.4]},
            "finished": None, "settings": _settings(**changes)}


def _earlier_table(out: Path) -> None:
    runs = [{"set": "X", "instance": "X-n101-k25", "n": 101, "solver": solver, "seed": 0,
             "limit": 60.0, "cost": 27591.0, "reference": 27591.0, "gap": 0.0, "routes": 26,
             "wall": 60.0, "rss_mb": 100, "threads": 2}
            for solver in cvrp.SOLVERS]
    runs += [{**runs[0], "set": "belgium", "instance": "Leuven1", "n": 3001, "gap": 1.0}]
    out.with_suffix(".json").write_text(json.dumps({
        "provenance": {"command": "python -m benchmarks.cvrp --sets x,belgium",
                       "date": "2026-12-07T15:00:00+00:00", "commit": "old",
                       "machine": {"cpu": "cpu", "cores": 2}},
        "settings": _settings(sets=["x", "belgium"]),
        "machine": {"load_average_at_start": [1.7, 1.8, 1.9]}, "runs": runs}))


def test_a_run_of_one_set_keeps_the_others_with_their_own_header(tmp_path: Path) -> None:
    out = tmp_path / "cvrp.md"
    _earlier_table(out)
    meta = _meta()
    rows = cvrp.earlier(out, meta, ["belgium"])
    assert {r["set"] for r in rows} == {"X"}  # the old Belgium rows are what is rerun
    assert [p["section"] for p in meta["provenance"]] == ["x", "belgium"]
    assert [p["commit"] for p in meta["provenance"]] == ["old", "new"]
    assert meta["settings"]["sets"] == ["x", "belgium"]
    meta["finished"] = "now"
    cvrp.write(out, meta, rows)
    text = out.read_text()
    assert "python -m benchmarks.cvrp --sets x,belgium" in text and "commit `old`" in text
    assert "1.7, 1.8, 1.9 (x); 0.2, 0.3, 0.4 (belgium)" in text
    assert "shared with other work" in text  # the carried section ran on a loaded machine


def test_nothing_is_kept_from_a_table_of_other_settings(tmp_path: Path) -> None:
    out = tmp_path / "cvrp.md"
    _earlier_table(out)
    for changed in ({"seeds": [0, 1]}, {"limit": 20.0}, {"ils_threads": "1"}):
        meta = _meta(**changed)
        assert cvrp.earlier(out, meta, ["belgium"]) == []
        assert isinstance(meta["provenance"], dict)
    assert cvrp.earlier(tmp_path / "none.md", _meta(), ["belgium"]) == []


def test_a_bad_ils_threads_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Unchecked, the children would fall back to auto without a word."""
    with pytest.raises(SystemExit) as exc:
        cvrp.main(["--ils-threads", "two", "--out", str(tmp_path / "cvrp.md")])
    assert exc.value.code == 2 and "--ils-threads" in capsys.readouterr().err
    assert not (tmp_path / "cvrp.json").exists()
