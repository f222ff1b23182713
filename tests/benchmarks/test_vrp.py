"""benchmarks/vrp.py: its options, and a short run writing the table and its headline rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import vrp
from solvers.routing.vrp.instances import DATA_DIR


def test_help_and_bad_sets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        vrp.main(["--help"])
    assert exc.value.code == 0 and "(default:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        vrp.main(["--sets", "nope"])
    assert exc.value.code == 2


@pytest.mark.heavy
@pytest.mark.skipif(not DATA_DIR.is_dir(), reason="shared benchmark data absent")
def test_short_run_writes_table_json_and_headline(tmp_path: Path) -> None:
    out = tmp_path / "vrp.md"
    assert vrp.main(["--time-limit", "0.3", "--sets", "mdvrp", "--solvers", "pyvrp,ils",
                     "--memory-solvers", "pyvrp", "--memory-tasks", "200",
                     "--memory-limit", "0.5", "--memory-wall", "60", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| Cordeau MDVRP p01-p06 | pyvrp | 6/6 | 475/475 |" in text
    assert "refused" in text  # ils takes no multi-depot documents
    data = json.loads(out.with_suffix(".json").read_text())
    assert [h["solver"] for h in data["headline"]] == ["pyvrp"]
    assert data["memory"][0]["peak_rss_mib"] > 0
