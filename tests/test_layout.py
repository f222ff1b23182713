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
