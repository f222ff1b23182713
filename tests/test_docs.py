"""The docs site builds strictly (a broken link, a missing anchor or a page left out of the nav
fails it), and the README stays a short front door whose links all lead somewhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # not --quiet: it drops the warnings that --strict counts, and the build would pass
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(config), "--site-dir", str(site)],
        cwd=config.parent, env=env, capture_output=True, text=True, timeout=120,
    )


def test_docs_site_builds_strictly(tmp_path: Path) -> None:
    proc = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "routing" / "index.html").exists()


def test_docs_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The guard above is real: the same site with one dead link does not build."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    with (tmp_path / "docs" / "routing.md").open("a") as page:
        page.write("\nSee [nowhere](no-such-page.md).\n")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stdout + proc.stderr


def test_readme_is_short_and_its_links_resolve() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make serve" in text and "make test" in text
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "#")):
            continue
        path = target.split("#", 1)[0]
        assert (REPO / path).exists(), f"README links to {target}, which does not exist"


def test_readme_python_example_runs(tmp_path: Path) -> None:
    """The README's Python lines are what a newcomer pastes first: they run as written, from
    the repository root, and print a checked cost and one row per compared solver."""
    code = re.search(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert code is not None
    script = tmp_path / "readme_example.py"
    script.write_text(code.group(1))
    proc = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    cost, feasible, routes = lines[0].split()
    assert float(cost) >= 27591 and feasible == "True" and int(routes) >= 26, lines
    assert lines[1].startswith("ortools ") and lines[2].startswith("pyvrp "), lines
