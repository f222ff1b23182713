"""The GOODRL policy: the trained graph-attention actor choosing VMs, loaded lazily.

The checkpoint is ``weights/goodrl.pt`` (``{"config", "actor", "critic", "meta"}``, no
optimizer state). Without it the policy is listed as unavailable with the reason and the
command that trains it; nothing else in the service depends on it. Decisions are greedy
(argmax over VMs); simultaneously ready tasks are taken in descending upward rank, like the
HEFT-style rule, because GOODRL decides only the VM, not the task order.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from models.goodrl import GoodRL
from solvers.errors import SolverUnavailableError
from solvers.scheduling.features import collate, observe
from solvers.scheduling.goodrl_card import GOODRL_DESCRIPTION
from solvers.scheduling.heuristics import HEFT
from solvers.scheduling.simulator import ClusterState, Run
from solvers.tuning import torch_threads
from solvers.weights import WEIGHTS_DIR

WEIGHTS = WEIGHTS_DIR / "goodrl.pt"
#: Threads torch may use (one is fastest for these small graphs; same knob as ReLD's).
TORCH_THREADS = torch_threads()
TRAIN_COMMAND = "nice -n 10 python -m training.goodrl --minutes 60"

_lock = threading.Lock()
_cache: dict[str, GoodRL] = {}


def availability(path: Path = WEIGHTS) -> str | None:
    """None when the checkpoint is shipped; else what is missing and how to make it."""
    if not path.exists():
        return f"weights/{path.name} is missing; train it with `{TRAIN_COMMAND}`"
    return None


def load_model(path: Path = WEIGHTS) -> GoodRL:
    """The model of a checkpoint, loaded once per path and shared (inference only)."""
    key = str(path)
    with _lock:
        if key not in _cache:
            reason = availability(path)
            if reason is not None:
                raise SolverUnavailableError("goodrl", reason)
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
            model = GoodRL.from_config(ckpt["config"])
            model.actor.load_state_dict(ckpt["actor"])
            model.critic.load_state_dict(ckpt["critic"])
            model.eval()
            _cache[key] = model
        return _cache[key]


def save_checkpoint(model: GoodRL, path: Path, meta: dict[str, Any]) -> None:
    """Weights and configuration only, so the shipped file stays small."""
    tmp = path.with_suffix(".tmp")  # renamed into place: never a half-written shipped file
    torch.save({"config": model.config, "actor": model.actor.state_dict(),
                "critic": model.critic.state_dict(), "meta": meta}, tmp)
    tmp.replace(path)


class GoodRLPolicy(HEFT):
    """Greedy GOODRL actor; ``model`` overrides the shipped checkpoint (training, tests)."""

    name = "goodrl"
    description = GOODRL_DESCRIPTION

    def __init__(self, model: GoodRL | None = None, path: Path = WEIGHTS) -> None:
        super().__init__()
        torch.set_num_threads(TORCH_THREADS)
        self.model = model if model is not None else load_model(path)

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        obs = observe(state, run, task)
        with torch.inference_mode():
            logits = self.model.actor(collate([obs]))[0]
        return int(torch.argmax(logits))
