"""One lazily loaded, shared copy of each neural solver's checkpoint per (problem, device).

Every neural routing solver needs the same thing: load weights/<file>.pt on first use (or at
warm-up), once even when requests arrive together, and say how to train it when missing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from solvers import weights  # WEIGHTS_DIR read when called, so a test can point it elsewhere
from solvers.errors import SolverUnavailableError


def missing_checkpoint(path: Path, command: str) -> str:
    """What a user reads when a checkpoint is not there: the file and how to train it."""
    return f"weights/{path.name} is missing; train it with `{command}`"


class CheckpointCache:
    """``get(problem, device)`` returns the loaded model, loading it at most once."""

    def __init__(self, solver: str, path_for: Callable[[str], Path],
                 load: Callable[[Path, str], Any],
                 train_command: str | Callable[[str], str]) -> None:
        self.solver = solver
        self.path_for = path_for
        self.load = load
        self.train_command = train_command
        self._models: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, problem: str, device: str = "cpu") -> Any:
        key = (problem, device)
        with self._lock:
            if key not in self._models:
                path = self.path_for(problem)
                if not path.exists():
                    command = (self.train_command(problem) if callable(self.train_command)
                               else f"{self.train_command} {problem}")
                    raise SolverUnavailableError(self.solver, missing_checkpoint(path, command))
                model = self.load(path, device)
                model.eval()
                self._models[key] = model
            return self._models[key]


def checkpoint_path(solver: str, problem: str) -> Path:
    """weights/<solver>_<problem>.pt, where training writes a neural solver's checkpoint."""
    return weights.WEIGHTS_DIR / f"{solver}_{problem}.pt"


def shipped_problems(solver: str, problems: tuple[str, ...]) -> list[str]:
    """The problems whose checkpoint file is there: known from the file names alone, without
    importing torch (3.5 s), so that listing the solvers and ``--solver auto`` stay quick."""
    return [p for p in problems if checkpoint_path(solver, p).exists()]
