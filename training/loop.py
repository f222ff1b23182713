"""The training loop the route trainers share (``training.reld``, ``training.polynet``,
``training.sit``): time-boxed optimizer steps, an evaluation every few minutes and at the end,
CPU and GPU minutes accounted to the checkpoint's lineage, a learning curve, and the one rule
for replacing a checkpoint file (``Keeper``, through ``manifest.judge``).

A trainer supplies what is its own: how a step's loss is computed, and what an evaluation
measures and writes.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from training import manifest
from training.confirm import Gate

REPO = Path(__file__).resolve().parents[1]
WEIGHTS = REPO / "weights"
MANIFEST = WEIGHTS / "MANIFEST.json"


@dataclass
class TrainState:
    """A checkpoint lineage's training record (saved in the checkpoint, resumed from it)."""

    steps: int = 0
    cpu_minutes: float = 0.0
    gpu_minutes: float = 0.0
    best_gap: float | None = None
    phases: dict[str, int] | None = None


class Timer:
    """Minutes of this run, added to the lineage's CPU or GPU minutes when accounted."""

    def __init__(self, minutes_before: float, gpu: bool) -> None:
        self.start = time.time()
        self.minutes_before = minutes_before
        self.gpu = gpu

    def minutes(self) -> float:
        return (time.time() - self.start) / 60

    def total(self) -> float:
        """The lineage's minutes so far, this run's included."""
        return self.minutes_before + self.minutes()

    def account(self, state: Any) -> float:
        """Add this run's minutes not yet counted to ``state`` (``cpu_minutes`` or
        ``gpu_minutes``); returns the lineage's total."""
        total = self.total()
        extra = total - (state.cpu_minutes + state.gpu_minutes)
        if extra > 0:
            if self.gpu:
                state.gpu_minutes += extra
            else:
                state.cpu_minutes += extra
        return total


def latest_path(out: Path, shipped: Path) -> Path:
    """Where the latest state (with the optimizer, resumed first) lives: var/checkpoints/
    for the shipped checkpoint, beside the checkpoint for an experiment."""
    return (REPO / "var" / "checkpoints" / f"{out.stem}.last.pt" if out == shipped
            else out.with_suffix(".last.pt"))


def curve_path(out: Path) -> Path:
    """The learning curve: weights/curves/ for a shipped checkpoint, beside an experiment."""
    curve = (WEIGHTS / "curves" / f"{out.stem}.csv" if out.parent == WEIGHTS
             else out.with_suffix(".curve.csv"))
    curve.parent.mkdir(parents=True, exist_ok=True)
    return curve


def append_curve(curve: Path, header: Sequence[str], row: Sequence[Any]) -> None:
    """One evaluation as a row of the CSV learning curve (the header once, first)."""
    with curve.open("a", newline="") as fh:
        writer = csv.writer(fh)
        if fh.tell() == 0:
            writer.writerow(header)
        writer.writerow(row)


def recorded_gap(checkpoint: Path, description: str, path: Path | None = None) -> float | None:
    """The validation gap MANIFEST.json records for ``checkpoint`` on the set ``description``,
    so that a new lineage replaces it only by doing better on the same set (None: absent, or
    measured on another set)."""
    path = MANIFEST if path is None else path
    if not path.exists() or not checkpoint.exists():
        return None
    for entry in json.loads(path.read_text()).get("checkpoints", []):
        if entry.get("file") == checkpoint.name:
            validation = entry.get("validation", {})
            if validation.get("set") != description or "gap_percent" not in validation:
                return None
            return float(validation["gap_percent"])
    return None


class Keeper:
    """Writes a checkpoint file only for a model that validates at least
    ``manifest.MIN_GAIN_POINTS`` better than the model the file holds (``to_beat``; None: no
    file yet) and, with a ``gate``, also beats it on fresh instances (the best of many
    evaluations on one fixed set is partly luck). A candidate the gate turns down does not
    raise the bar for the next. Evaluations of a shipped checkpoint are recorded in
    MANIFEST.json."""

    def __init__(self, out: Path, shipped: bool, to_beat: float | None,
                 gate: Gate | None = None, manifest_path: Path | None = None) -> None:
        self.out, self.shipped, self.to_beat, self.gate = out, shipped, to_beat, gate
        self.manifest_path = MANIFEST if manifest_path is None else manifest_path

    def offer(self, model: Any, gap: float, evaluation: dict[str, Any],
              write: Callable[[dict[str, Any]], None]) -> bool:
        """Judge a model validated at ``gap``; if it wins, ``write(confirmation record)``
        writes the file (and its manifest entry). True when it was written."""
        if not manifest.judge(self.out.name, gap, self.to_beat, evaluation,
                              self.manifest_path if self.shipped else None):
            return False
        record = self.gate.check(model) if self.gate is not None else {}
        if record is None:
            return False  # not better on fresh instances: validation luck, the file stays
        self.to_beat = gap
        write(record)
        return True


def optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                   loss: torch.Tensor) -> float:
    """One step on ``loss`` with the gradient norm clipped to 1; returns the loss."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


def warmup_lr(lr: float, step: int, warmup: int) -> float:
    """The learning rate of a run's ``step``-th step: rising linearly to ``lr`` over the first
    ``warmup`` steps. A shipped checkpoint carries no optimizer state, and a fresh Adam's first
    steps move every weight by about ``lr`` whatever its gradient: 25 such steps of imitation
    at 1e-5 took the shipped ReLD TSP model from 2.275% to 2.530%."""
    return lr * min(1.0, (step + 1) / warmup) if warmup > 0 else lr


def run(model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: Any, timer: Timer,
        minutes: float, eval_minutes: float,
        loss: Callable[[], tuple[torch.Tensor, Any]], evaluate: Callable[[], None],
        losses: list[float], phase: str | None = None, at_least_one: bool = False,
        between: Callable[[], None] | None = None, warmup_steps: int = 0) -> int:
    """Steps until ``minutes`` have passed (or a Ctrl-C asks to stop), ``evaluate()`` every
    ``eval_minutes`` and once at the end; returns the steps made. ``loss()`` gives a step's
    loss and its statistics (the trainer keeps those); bf16 autocast on a GPU. With
    ``at_least_one`` a run given any time makes a step, however long a first validation took
    (a busy CI machine spent all of 0.02 minutes validating and added none). ``between`` runs
    before each step (SIT's label improvement). ``warmup_steps``: each parameter group's lr
    rises linearly to its own over this run's first steps (``warmup_lr``)."""
    model.train()
    stopped = manifest.graceful_stop()
    show = manifest.progress_line()
    last_eval = time.time()
    steps_here = 0
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    while ((timer.minutes() < minutes or (at_least_one and minutes > 0 and steps_here == 0))
           and not stopped()):
        show(state.steps, losses, timer.start, minutes)
        if between is not None:
            between()
        for group, lr in zip(optimizer.param_groups, base_lrs, strict=True):
            group["lr"] = warmup_lr(lr, steps_here, warmup_steps)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=timer.gpu):
            value, _ = loss()
        losses.append(optimizer_step(model, optimizer, value))
        state.steps += 1
        steps_here += 1
        if phase is not None:
            state.phases[phase] = state.phases.get(phase, 0) + 1
        if time.time() - last_eval >= eval_minutes * 60:
            evaluate()
            last_eval = time.time()
    evaluate()
    return steps_here
