"""Two PolyNet checkpoints on the same fresh instances, paired: is B really better than A?

    python -m training.compare_checkpoints tsp A.pt B.pt [--count 128]

The instances are ``training.confirm.confirmation_data`` (the set a new best must also win on
before it replaces the shipped checkpoint); each instance's best greedy length over the K
strategies (spread starts / forced first customers, no augmentation) is compared, and the
mean per-instance change of B against A gets a 95% bootstrap interval. A validation gap on
the fixed validation set cannot tell this: the best of many evaluations on it is biased low.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from training import manifest
from training.confirm import CONFIRM_COUNT, confirmation_data, paired_change
from training.polynet import PROBLEMS, best_lengths, load_checkpoint
from training.reld import CONFIRM_SEED, VALIDATION_N


def compare(problem: str, a: Path, b: Path, count: int = CONFIRM_COUNT,
            device: str = "cpu", seed: int = CONFIRM_SEED) -> dict[str, float]:
    """B's mean per-instance change against A (%), its 95% bootstrap interval, and on how
    many instances B is better or worse. ``seed``: another seed gives instances the gate
    has not seen (the gate's own set is part of how B was chosen)."""
    data = confirmation_data(problem, seed, count, VALIDATION_N)
    la = best_lengths(load_checkpoint(a, device)[0], problem, data, device)["spread"]
    lb = best_lengths(load_checkpoint(b, device)[0], problem, data, device)["spread"]
    change = 100 * (lb / la - 1)
    rng = np.random.default_rng(0)
    boots = [float(rng.choice(change, len(change)).mean()) for _ in range(5000)]
    return {"change_percent": paired_change(lb, la), "low": float(np.percentile(boots, 2.5)),
            "high": float(np.percentile(boots, 97.5)), "better": int((change < 0).sum()),
            "worse": int((change > 0).sum()), "count": len(change)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", choices=PROBLEMS)
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--count", type=int, default=CONFIRM_COUNT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=CONFIRM_SEED,
                        help="instance seed (default: the confirmation gate's own set)")
    args = parser.parse_args(argv)
    manifest.check_seed(parser, args)
    torch.set_num_threads(args.threads)
    r = compare(args.problem, args.a, args.b, args.count, seed=args.seed)
    print(f"{args.b.name} against {args.a.name} on {r['count']} fresh {args.problem.upper()} "
          f"instances (seed {args.seed}): {r['change_percent']:+.3f}% "
          f"[{r['low']:+.3f}, {r['high']:+.3f}] (better on {r['better']}, worse on {r['worse']})")


if __name__ == "__main__":
    main()
