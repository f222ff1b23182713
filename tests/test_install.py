"""The Makefile's install, checked without installing: it refuses a Python outside 3.11-3.13
before making a venv, `make serve` installs torch's CPU build and no test tools, `make test`
adds them, and every pip line takes the lock file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _make(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def _python_saying(version: tuple[int, int], folder: Path) -> Path:
    """An interpreter that reports ``version``: this one, with sys.version_info replaced
    before the Makefile's ``-c`` snippet runs."""
    fake = folder / f"python{version[0]}.{version[1]}"
    fake.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = "-c" ] || exec {sys.executable} "$@"\n'
        f'exec {sys.executable} -c "import sys; sys.version_info = ({version[0]}, '
        f'{version[1]}, 0); exec(sys.argv[1])" "$2"\n')
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("version", [(3, 10), (3, 14)])
def test_an_unsupported_python_stops_before_the_venv(tmp_path: Path,
                                                     version: tuple[int, int]) -> None:
    fake = _python_saying(version, tmp_path)
    venv = tmp_path / "venv"
    done = _make(f"PYTHON={fake}", f"VENV={venv}", f"{venv}/bin/python")
    assert done.returncode != 0
    assert (f"cosolve needs Python 3.11, 3.12 or 3.13; {fake} is {version[0]}.{version[1]}"
            in done.stderr), done.stderr
    assert not venv.exists()


@pytest.mark.parametrize("version", [(3, 11), (3, 12), (3, 13)])
def test_a_supported_python_passes(tmp_path: Path, version: tuple[int, int]) -> None:
    done = _make(f"PYTHON={_python_saying(version, tmp_path)}", "python-check")
    assert done.returncode == 0, done.stderr


def test_a_missing_python_is_named(tmp_path: Path) -> None:
    done = _make("PYTHON=python3.99-not-here", f"VENV={tmp_path / 'venv'}", "python-check")
    assert done.returncode != 0
    assert "no python3.99-not-here here" in done.stderr


def _plan(tmp_path: Path, target: str, *settings: str) -> str:
    """What make would run for ``target`` on a fresh machine (a venv not yet made)."""
    done = _make("-n", f"VENV={tmp_path / 'venv'}", *settings, target)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_serve_installs_the_cpu_build_and_no_test_tools(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "serve")
    assert "--no-index \"torch==2.13.0+cpu\"" in plan  # a CPU wheel pip has, without network
    assert "--index-url https://download.pytorch.org/whl/cpu \"torch==2.13.0\"" in plan
    assert "[dev]" not in plan and "--quiet" not in plan
    assert all(" -c requirements.lock " in line for line in plan.splitlines()
               if "pip install" in line)
    cuda = _plan(tmp_path, "serve", "TORCH=cu126")
    assert "https://download.pytorch.org/whl/cu126" in cuda


def test_test_adds_the_test_tools(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "test")
    assert "-e '.[dev]'" in plan
    assert plan.index("download.pytorch.org/whl/cpu") < plan.index("[dev]")


@pytest.mark.parametrize(("local", "index", "expected"), [
    (0, 0, ["--no-index", "-e .[neural]"]),  # a CPU wheel pip has: no index asked
    (1, 0, ["--no-index", "whl/cpu", "-e .[neural]"]),  # else PyTorch's CPU index
    (1, 1, ["--no-index", "whl/cpu", "-e ."]),  # neither: the service without torch
])
def test_the_torch_fallbacks(tmp_path: Path, local: int, index: int,
                             expected: list[str]) -> None:
    """The install recipe run by the shell with a pip that records its calls and succeeds or
    fails as told: each source is tried in turn, and without torch the rest still installs."""
    pip = tmp_path / "pip"
    log = tmp_path / "calls"
    pip.write_text(f'#!/bin/sh\necho "$*" >> {log}\ncase "$*" in\n'
                   f'  *--no-index*) exit {local};;\n  *whl/cpu*) exit {index};;\nesac\n')
    pip.chmod(0o755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()  # the venv is there: only the install runs
    plan = _make("-n", f"VENV={venv}", f"PIP={pip}", f"{venv}/.installed")
    assert plan.returncode == 0, plan.stderr
    done = subprocess.run(["sh", "-e"], input=plan.stdout, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == len(expected), calls
    for call, part in zip(calls, expected, strict=True):
        assert call.endswith(part) if part.startswith("-e") else part in call, (call, part)
    assert ("listed as unavailable" in done.stderr) == (index == 1)
    assert (venv / ".installed").exists()
