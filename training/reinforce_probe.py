"""Short REINFORCE probes from a trained ReLD TSP checkpoint: what a few steps at a given
learning rate and baseline do to greedy decoding, before committing CPU hours to a run.

Each arm starts from the same checkpoint with a fresh Adam and reports, on the first
``--count`` validation instances, the gap of the best greedy start (what validation keeps),
of the average greedy start, and of sampled tours. This is how REINFORCE's regression from the
imitation model was traced to the sampled spread collapsing (docs/neural-solvers.md).

    python -m training.reinforce_probe --arms 1e-4:mean,1e-5:mean,1e-6:mean --steps 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from training.reld import (
    BASELINES,
    checkpoint_path,
    load_checkpoint,
    reinforce_loss,
    validation_set,
)


def gaps(model: torch.nn.Module, coords: torch.Tensor, ref: torch.Tensor,
         seed: int) -> tuple[float, float, float]:
    """(best greedy start, mean greedy start, mean of 16 sampled tours) gaps in percent."""
    from solvers.routing.neural.env import rollout_tsp

    B, N, _ = coords.shape
    starts = torch.arange(N)[None].expand(B, N)
    with torch.no_grad():
        greedy = rollout_tsp(model, coords, starts)
        torch.manual_seed(seed)
        sampled = rollout_tsp(model, coords, starts[:, :16], decode="sample")

    def pct(lengths: torch.Tensor) -> float:
        return float(((lengths.double() / ref - 1) * 100).mean())

    return (pct(greedy.lengths.min(1).values), pct(greedy.lengths.mean(1)),
            pct(sampled.lengths.mean(1)))


def probe(lr: float, baseline: str, steps: int, every: int, batch: int, starts: int,
          count: int, seed: int) -> list[tuple[int, float, float, float]]:
    """Rows (step, best greedy, mean greedy, sampled) of one arm."""
    val = validation_set("tsp")
    coords = torch.as_tensor(val["coords"][:count], dtype=torch.float32)
    ref = torch.as_tensor(val["reference_costs"][:count])
    torch.manual_seed(seed)
    model, _ = load_checkpoint(checkpoint_path("tsp"), "cpu")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed + 1)
    rows = [(0, *gaps(model, coords, ref, seed))]
    for step in range(1, steps + 1):
        loss, _ = reinforce_loss(model, "tsp", batch, starts, (100, 100), rng, "cpu", baseline)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % every == 0:
            rows.append((step, *gaps(model, coords, ref, seed)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", default="1e-5:mean",
                        help=f"comma-separated LR:BASELINE, baseline one of {BASELINES}")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--every", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--starts", type=int, default=16)
    parser.add_argument("--count", type=int, default=16, help="validation instances")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    for arm in args.arms.split(","):
        lr_text, _, baseline = arm.partition(":")
        if baseline not in BASELINES:
            parser.error(f"--arms {arm!r}: baseline one of {BASELINES}")
        t0 = time.time()
        for step, best, mean, sampled in probe(float(lr_text), baseline, args.steps,
                                               args.every, args.batch, args.starts,
                                               args.count, args.seed):
            print(f"lr {lr_text} {baseline:4} step {step:4}: greedy best start {best:.3f}%, "
                  f"greedy mean start {mean:.2f}%, sampled {sampled:.2f}% "
                  f"({time.time() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
