"""The benchmark scripts' option checks and where they write: a bad option is a
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
    assert "--fewer" in _exit_code(fleet.main, [*base, "--fewer", "-1"], capsys)
    monkeypatch.setattr(fleet, "capped", lambda folder, name, fewer: (None, 3 - fewer, 100.0))
    monkeypatch.setattr(fleet, "run", lambda *a: {"cost": 101.0, "routes": 3,
                                                  "feasible": True, "wall_s": 1.0})
    monkeypatch.setattr(fleet, "machine_info", lambda: {})
    out = tmp_path / "new" / "fleet.md"
    assert fleet.main([*base, "--limits", "1", "--out", str(out)]) == 0
    assert "| X-a (3) | 1 | nearest_neighbor | 1.00 |" in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["rows"][0]["cost"] == 101.0


def _no_solve(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a cached reference was computed again")


def test_neural_references_reuse_the_cached_set(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The first N of count128 serve a --count N run: no PyVRP run, no cache written. The
    cache is git-ignored, so it is seeded here with the references of the published table."""
    from benchmarks import neural

    published = json.loads((RESULTS / "neural.json").read_text())["references"]
    monkeypatch.setattr(neural, "CACHE", tmp_path)
    for problem in ("tsp", "cvrp"):
        key = f"seed{neural.SEED}-n100-count128-pyvrp{neural.REFERENCE_LIMIT[problem]}"
        (tmp_path / f"reference_{problem}.json").write_text(
            json.dumps({key: published[problem]}))
    before = {p: (tmp_path / f"reference_{p}.json").read_text() for p in ("tsp", "cvrp")}
    monkeypatch.setattr(neural, "solve", _no_solve)
    for problem in ("tsp", "cvrp"):
        full = published[problem]
        small = neural.uniform(problem, 100, 2, neural.SEED)
        big = neural.uniform(problem, 100, 3, neural.SEED)
        assert all((a.coords == b.coords).all() for a, b in zip(small, big, strict=False))
        assert neural.references(problem, small, neural.SEED, write=True) == full[:2]
    assert before == {p: (tmp_path / f"reference_{p}.json").read_text()
                      for p in ("tsp", "cvrp")}


def test_references_are_stored_only_by_runs_into_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose --out is outside benchmarks/results computes what is missing but leaves
    the caches alone."""
    from benchmarks import common, neural

    class Sol:
        cost, feasible = 7.0, True

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    assert common.writes_results(tmp_path / "x" / "a.md")
    assert not common.writes_results(RESULTS / "a.md")
    cache = tmp_path / "cache"
    monkeypatch.setattr(neural, "CACHE", cache)
    monkeypatch.setattr(neural, "solve", lambda *a, **k: Sol())
    insts = neural.uniform("tsp", 100, 200, neural.SEED)  # no cached key holds 200
    assert neural.references("tsp", insts[:130], neural.SEED, write=False) == [7.0] * 130
    assert not (cache / "reference_tsp.json").exists()
    assert neural.references("tsp", insts[:130], neural.SEED, write=True) == [7.0] * 130
    assert neural.cached_references("tsp", 100, 129, neural.SEED) == [7.0] * 129
    from solvers.routing.generate import cvrptw_instance

    tw = [cvrptw_instance(1, n=11)]
    assert neural.tw_references(tw, write=False) == [7.0]
    assert not (cache / "reference_cvrptw.json").exists()


def test_neural_benchmark_refuses_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    """--count outside 2..128 and --limits abc / 0 are one-line errors, not runs labelled
    ×-1 or tracebacks."""
    from benchmarks.neural import main

    assert "--count" in _exit_code(main, ["--count", "-1"], capsys)
    assert "--count" in _exit_code(main, ["--count", "200"], capsys)
    assert "--limits" in _exit_code(main, ["--limits", "abc"], capsys)
    assert "--limits" in _exit_code(main, ["--limits", "0"], capsys)
    assert "--solvers" in _exit_code(main, ["--solvers", "bogus"], capsys)
    assert "--solvers" in _exit_code(main, ["--polish", "--solvers", "ortools"], capsys)


def test_routing_out_names_and_empty_sets(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--out x.json gives x.md + x.json (the table was overwritten by the JSON), and a data
    folder without the set's files is an error, not an empty table with exit 0."""
    from benchmarks import routing

    args = routing.parse_args(["--sets", "uniform", "--out", str(tmp_path / "x.json")])
    assert args.out == tmp_path / "x.md" and args.out.with_suffix(".json").name == "x.json"
    err = _exit_code(routing.parse_args, ["--sets", "tsplib,cvrplib", "--data", str(tmp_path)],
                     capsys)
    assert "set tsplib has no instances" in err


def test_routing_warms_the_solvers_up_in_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import routing

    warmed: list[str] = []
    monkeypatch.setattr(routing, "warm_up", lambda names: warmed.extend(names))
    routing._preload_solver_libraries(["ils", "ortools"])
    assert warmed == ["ils", "ortools"]


def test_cvrptw_refuses_bad_options_and_averages_unrounded_gaps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import cvrptw

    data = ["--data", str(tmp_path), "--out", str(tmp_path / "c.md")]
    assert "--solvers" in _exit_code(cvrptw.main, ["--solvers", "bogus", "--random", "0"],
                                     capsys)
    assert "--time-limit" in _exit_code(cvrptw.main, ["--time-limit", "-1"], capsys)
    assert "Solomon" in _exit_code(cvrptw.main, data, capsys)
    assert not (tmp_path / "c.md").exists()
    row = {"cost": 100.004, "feasible": True}
    assert cvrptw._cell(row, 100.0)[1:] == ("0.00", pytest.approx(0.004))


def test_flow_refuses_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import flow, flow_gpu

    assert "--solvers" in _exit_code(flow.main, ["--solvers", "bogus"], capsys)
    assert "does not solve" in _exit_code(flow.main, ["--solvers", "ils"], capsys)
    assert "--sizes" in _exit_code(flow.main, ["--sizes", "abc"], capsys)
    assert "dir" in _exit_code(flow_gpu.main, ["report", str(tmp_path)], capsys)
    assert "--batches" in _exit_code(flow_gpu.main, ["device", "--out", str(tmp_path),
                                                     "--batches", "abc"], capsys)


def test_flow_reference_names_only_the_exact_solvers_that_ran() -> None:
    """With networkx left out, the reference is OR-Tools' alone (it read 'OR-Tools =
    networkx' whatever ran)."""
    from benchmarks import flow
    from solvers.flow.generate import netgen_style

    rows = flow.run_network("s", netgen_style(0, 20, 60), None, "", ["ortools_mcf"], 10.0,
                            "cpu")
    assert rows[0].optimum_source == "OR-Tools (certified)"


@pytest.mark.parametrize("module", ["scheduling"])
def test_scheduling_benchmarks_refuse_bad_options(module: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    main = importlib.import_module(f"benchmarks.{module}").main
    assert "--seeds" in _exit_code(main, ["--seeds", "abc"], capsys)
    assert "--workflows" in _exit_code(main, ["--workflows", "0"], capsys)


def test_header_commands_keep_empty_arguments() -> None:
    """' '.join dropped an empty argument, so the header command did not parse when copied."""
    import shlex

    from benchmarks.common import command

    line = command("benchmarks.neural", ["--limits", "", "--problems", ""])
    assert shlex.split(line)[3:] == ["--limits", "", "--problems", ""]


SCRIPTS = ["sil", "fleet", "neural", "cvrptw", "flow", "flow_gpu", "scheduling",
           "jobs", "leaderboard"]


@pytest.mark.parametrize("module", SCRIPTS)
def test_help_shows_the_whole_description_and_the_defaults(
        module: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--help printed a docstring's first line, cut mid-sentence (sil, cvrptw, fleet), and
    options without their defaults."""
    import importlib

    script = importlib.import_module(f"benchmarks.{module}")
    with pytest.raises(SystemExit) as exc:
        script.main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    first_paragraph = " ".join(script.__doc__.split("\n\n")[0].split())
    assert first_paragraph in text
    assert module == "flow_gpu" or "(default:" in text


def test_leaderboard_is_generated_from_the_committed_results() -> None:
    """Every results JSON carries its header and headline rows (one table per script is
    tests/test_layout.py's), and the README's leaderboard is what the committed results give
    (no solving)."""
    from benchmarks import leaderboard

    for path in RESULTS.glob("*.json"):
        data = json.loads(path.read_text())
        provs = data["provenance"]
        if isinstance(provs, dict):  # one run, or sil's runs by section
            provs = [provs] if "command" in provs else list(provs.values())
        for prov in provs:
            assert {"command", "date", "commit", "machine"} <= set(prov), path.name
            assert "/work/" not in prov["command"], path.name
    found = leaderboard.rows()
    assert {r["family"] for r in found} == set(leaderboard.FAMILIES)
    assert all((RESULTS / r["file"]).is_file() for r in found)
    assert leaderboard.update() == leaderboard.README.read_text()


def test_every_learned_figure_names_its_checkpoint_and_training() -> None:
    """A leaderboard row of a learned solver says which checkpoint earned it and how many
    minutes of training stand behind it, read from MANIFEST.json at the run's commit."""
    from benchmarks import leaderboard
    from benchmarks.common import MODEL_OF

    learned = [r for r in leaderboard.rows() if r["solver"] in MODEL_OF]
    assert {r["solver"] for r in learned} >= {"reld", "polynet", "sil", "sil_ls", "goodrl"}
    for row in learned:
        ck = row.get("checkpoint")
        assert ck and ck["file"].endswith(".pt") and len(ck["sha256"]) == 12, row
        assert ck["cpu_minutes"] > 0, row
    assert all("checkpoint" not in r for r in leaderboard.rows() if r["solver"] not in MODEL_OF)
    text = leaderboard.README.read_text()
    assert "| training |" in text and "1 GPU min on reld_tsp.pt" in text


def test_checkpoints_come_from_the_manifest_of_the_commit() -> None:
    from benchmarks.common import checkpoint_for, checkpoints, header_lines, training_label

    now = checkpoints(["sil_ls", "ils"])
    assert [c["file"] for c in now] == ["sil_tsp.pt"]
    assert checkpoint_for(now, "sil", "cvrp") == now[0]  # SIL serves CVRP with its TSP model
    assert checkpoint_for(now, "ils", "tsp") is None and checkpoints(["ils"]) == []
    # polynet_tsp.pt gained GPU minutes at 8370f03; the commit before it had none
    before = checkpoint_for(checkpoints(["polynet"], commit="8370f03~1"), "polynet", "tsp")
    after = checkpoint_for(checkpoints(["polynet"], commit="8370f03"), "polynet", "tsp")
    assert before is not None and after is not None and before["sha256"] != after["sha256"]
    assert training_label(before) == "358 CPU min on reld_tsp.pt"
    assert training_label(after) == "358 CPU + 1 GPU min on reld_tsp.pt"
    prov = {"command": "c", "date": "d", "commit": "x", "machine": {"cpu": "c", "cores": 2},
            "checkpoints": [after]}
    assert header_lines(prov)[-1].startswith("- Checkpoints: `polynet_tsp.pt` ")
