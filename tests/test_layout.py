"""The import rules of ../shared/DESIGN.md: app -> solvers -> models, training -> solvers,
models; models import only torch (and the standard library); solvers never import app or
training. Checked on the source text (every ``import``/``from`` line, nested ones included) so
a lazy import inside a function cannot slip through."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "models": {"app", "solvers", "training", "cli", "benchmarks"},
    "solvers": {"app", "training", "cli", "benchmarks"},
    "app": {"training", "benchmarks"},
    "training": {"app", "cli", "benchmarks"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_imports_run_one_way(room: str) -> None:
    bad = [f"{path.relative_to(REPO)}:{line} imports {name}"
           for path in sorted((REPO / room).rglob("*.py"))
           for line, name in _imports(path)
           if name.split(".")[0] in FORBIDDEN[room]]
    assert not bad, "\n".join(bad)


def test_the_image_ships_what_make_serve_runs() -> None:
    """The Dockerfile cannot be built here (no daemon), so what it must agree with is checked
    on its text: every package pyproject installs is copied, and the weights; torch is pinned
    as pyproject and the Makefile pin it (any other request pulls a CUDA build); the Python is
    the one pyproject requires; the command's module exists."""
    import re
    import tomllib

    docker = (REPO / "Dockerfile").read_text()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    copied = {m.group(1).rstrip("/") for m in re.finditer(r"^COPY (\S+) ", docker, re.M)}
    packages = {name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]
                ["include"]}
    assert packages | {"weights"} <= copied, (packages | {"weights"}) - copied
    torch_pin = next(d for d in project["project"]["dependencies"] if d.startswith("torch"))
    assert f"pip install --index-url https://download.pytorch.org/whl/cpu {torch_pin}\n" in docker
    assert torch_pin in (REPO / "Makefile").read_text()
    python = re.search(r"^FROM python:(\d+\.\d+)", docker, re.M)
    assert python and project["project"]["requires-python"] == (
        f">={python.group(1)},<3.{int(python.group(1).split('.')[1]) + 1}")
    module = re.search(r'^CMD \["python", "-m", "([\w.]+)"', docker, re.M)
    assert module and (REPO / (module.group(1).replace(".", "/") + ".py")).is_file()
