"""The benchmark scripts' option checks and where they write (QA sweep): a bad option is a
one-line error (exit 2) before anything runs, and a run writes only where --out says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import sil
from benchmarks.common import RESULTS


def _exit_code(main: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The stderr of a main() that must stop with parser.error (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_sil_render_keeps_the_committed_caveat() -> None:
    """Rendering the committed runs gives the committed table, caveat paragraph included."""
    data = json.loads((RESULTS / "sil.json").read_text())
    assert sil.render(data) == (RESULTS / "sil.md").read_text()


def test_sil_refuses_bad_options_before_writing(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sil.md"
    assert "--solvers" in _exit_code(sil.main, ["tsp1k", "--solvers", "bogus", "--out",
                                                str(out)], capsys)
    assert "--data" in _exit_code(sil.main, ["tsplib", "--data", str(tmp_path / "none"),
                                             "--out", str(out)], capsys)
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_sil_writes_only_after_a_run_succeeds(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed run alone writes nothing; a success writes the failure with it, to --out."""
    results: list[dict[str, Any]] = [
        {"file": "a.tsp", "solver": "ils", "time_limit": 1.0, "error": ["boom"]},
        {"file": "a.tsp", "solver": "ortools", "time_limit": 1.0, "cost": 1.0,
         "feasible": True, "wall_s": 1.0, "stats": {}}]
    monkeypatch.setattr(sil, "section_runs", lambda args: [("S", Path("a.tsp"), None)])
    monkeypatch.setattr(sil, "machine_info", lambda packages: {})
    out = tmp_path / "sil.md"
    monkeypatch.setattr(sil, "run", lambda *a: dict(results[0]))
    assert sil.main(["tsp1k", "--solvers", "ils", "--out", str(out)]) == 1
    assert not out.exists() and not out.with_suffix(".json").exists()
    calls = iter(results)
    monkeypatch.setattr(sil, "run", lambda *a: dict(next(calls)))
    assert sil.main(["tsp1k", "--solvers", "ils,ortools", "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["solver"] for r in data["runs"]] == ["ils", "ortools"]
    assert list(data["meta"]) == ["tsp1k @ 10s"] and "| ortools |" in out.read_text()


def test_fleet_refuses_bad_options_and_writes_to_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--limits abc and a missing instance are one-line errors; --out and --data are used."""
    from benchmarks import fleet

    folder = tmp_path / "data" / "cvrplib" / "X"
    folder.mkdir(parents=True)
    for ext in (".vrp", ".sol"):
        (folder / f"X-a{ext}").write_text("")
    base = ["--data", str(tmp_path / "data"), "--instances", "X-a", "--solvers",
            "nearest_neighbor", "--seeds", "0"]
    assert "--limits" in _exit_code(fleet.main, [*base, "--limits", "abc"], capsys)
    assert "--seeds" in _exit_code(fleet.main, [*base, "--seeds", "x"], capsys)
    assert "X-b.vrp" in _exit_code(fleet.main, [*base, "--instances", "X-a,X-b"], capsys)
    monkeypatch.setattr(fleet, "capped", lambda folder, name: (None, 3, 100.0))
    monkeypatch.setattr(fleet, "run", lambda *a: {"cost": 101.0, "routes": 3,
                                                  "feasible": True, "wall_s": 1.0})
    monkeypatch.setattr(fleet, "machine_info", lambda: {})
    out = tmp_path / "new" / "fleet.md"
    assert fleet.main([*base, "--limits", "1", "--out", str(out)]) == 0
    assert "| X-a (3) | 1 | nearest_neighbor | 1.00 |" in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())[0]["cost"] == 101.0
