"""Fine-tune PolyNet from a ReLD checkpoint with Poppy's best-of-K REINFORCE.

Per instance K solutions are sampled, one per strategy (TSP: all from the same random node,
the tour being a cycle; CVRP: from the depot with no forced first customer). Only the best of
the K gets a gradient, with the mean of the K as baseline:

    loss = −mean_b [(R_best − mean_k R_k) · log π(τ_best | z_best)]

so each strategy only has to win on some instances and the strategies grow complementary.
Since only one sequence per instance carries a gradient, sampling runs without gradients and
only the winners are replayed (teacher-forced, one model call), which is what makes CPU
training affordable.

Warm start: the first run builds PolyNet from ``weights/reld_<problem>.pt`` with a zero-output
block, so step 0 is exactly ReLD. Resumable from var/checkpoints/; the shipped checkpoint in
weights/ (no optimizer state) is replaced only when validation improves by at least 0.1 point
(and the fresh-instance gate agrees), on the same fixed 64-instance sets as ReLD
(training.reld.validation_set), so the gaps compare.

    python -m training.polynet tsp --minutes 60

``--single`` (CVRPTW) trains the ``reld`` solver's CVRPTW model instead, weights/reld_cvrptw.pt:
ReLD has no time windows, so it is this PolyNet reduced to one strategy
(``PolyNetModel.single_strategy``: PolyNet's single-strategy ablation), trained on by POMO's
REINFORCE (``--phase pomo``: every sample weighted against the mean of its instance's), gated
and resumed like the rest.

    python -m training.polynet cvrptw --single --lr 3e-6 --poly-lr 3e-6 --minutes 60
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.polynet import PolyNetConfig, PolyNetModel, strategy_bits
from solvers.contract import Budget
from solvers.routing.check import check_cvrptw
from solvers.routing.generate import (
    SOLOMON_FAMILIES,
    random_cvrp,
    random_cvrptw,
    random_tsp,
    solomon_like_cvrptw,
)
from solvers.routing.neural.env import (
    augment,
    cvrp_routes,
    replay_cvrp,
    replay_tsp,
    rollout_cvrp,
    rollout_tsp,
    sequence_log_prob,
)
from solvers.routing.neural.env_tw import (
    TWBatch,
    encode_tw,
    replay_cvrptw,
    rollout_cvrptw,
    tw_batch,
)
from solvers.routing.neural.polynet import tsp_starts
from solvers.routing.problem import CVRPTWInstance
from solvers.routing.solve import solve
from training import loop, manifest
from training.confirm import CONFIRM_COUNT, Gate
from training.instances import load_labels
from training.loop import MANIFEST, WEIGHTS, TrainState, recorded_gap
from training.reld import (
    CONFIRM_SEED,
    VALIDATION_COUNT,
    VALIDATION_N,
    VALIDATION_SEED,
    pomo_advantage,
    save_checkpoint,
    validation_set,
)
from training.reld import load_checkpoint as load_reld

PROBLEMS = ("tsp", "cvrp", "cvrptw")
#: CVRPTW has no ReLD set: its own fixed set, same size and count, PyVRP (native windows).
TW_REFERENCE = ("pyvrp", 2.0)


def checkpoint_path(problem: str, single: bool = False) -> Path:
    """The shipped checkpoint; ``single``: the one-strategy CVRPTW model of the ``reld``
    solver (see ``--single``)."""
    return WEIGHTS / (f"reld_{problem}.pt" if single else f"polynet_{problem}.pt")


def shipped_gap(problem: str, description: str, single: bool = False) -> float | None:
    """The validation gap recorded for the shipped checkpoint on the set ``description``."""
    return recorded_gap(checkpoint_path(problem, single), description)


def load_checkpoint(path: Path, device: str = "cpu") -> tuple[PolyNetModel, dict[str, Any]]:
    """A PolyNet model and its checkpoint dict (config, state, optimizer, training record)."""
    ckpt = torch.load(path, map_location=device, weights_only=False)
    model = PolyNetModel(PolyNetConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    return model.to(device), ckpt


def update_manifest(problem: str, sha: str, model: PolyNetModel, state: TrainState,
                    validation: dict[str, Any], parent: str, single: bool = False) -> None:
    """Replace this checkpoint's MANIFEST.json entry, keeping every other entry."""
    manifest.replace_entry(manifest_entry(problem, sha, model, state, validation, parent,
                                          single), MANIFEST)


def manifest_entry(problem: str, sha: str, model: PolyNetModel, state: TrainState,
                   validation: dict[str, Any], parent: str,
                   single: bool = False) -> dict[str, Any]:
    name = ("ReLD for CVRPTW: the single-strategy PolyNet decoder (one strategy folded into "
            "a fixed residual layer on the query)" if single else "PolyNet on ReLD")
    return {
        "file": checkpoint_path(problem, single).name,
        "sha256": sha,
        "solver": "reld" if single else "polynet",
        "problem": problem,
        "architecture": {"model": name, **model.config.to_dict()},
        "warm_start": parent,
        "training_steps": state.steps,
        "phases": state.phases,
        "cpu_minutes": round(state.cpu_minutes, 1),
        "gpu_minutes": round(state.gpu_minutes, 1),
        "validation": validation,
    }


# -- validation: the solver's greedy pass, one symmetry -------------------------------------
#: Greedy trajectories per validation instance of a one-strategy model (PolyNet's K).
GREEDY_TRAJECTORIES = 128
SOLOMON_VALIDATION_COUNT = 36  # six per family


def validation_data(problem: str, val_set: str = "uniform") -> dict[str, Any]:
    """ReLD's fixed sets for TSP and CVRP. CVRPTW: ``uniform`` is a fixed seeded set of
    instances from training.instances.random_cvrptw; ``solomon`` one drawn like Solomon's six
    families (training.instances.solomon_like_cvrptw); ``mixed`` both, one after the other
    (``parts`` says which is which). References are PyVRP costs, cached in weights/validation."""
    if problem != "cvrptw":
        return validation_set(problem)
    if val_set == "mixed":
        a, b = validation_data(problem, "uniform"), validation_data(problem, "solomon")
        out = {k: np.concatenate([a[k], b[k]]) for k in a if a[k].ndim}
        out["reference"] = a["reference"]
        out["parts"] = np.asarray(["uniform"] * len(a["coords"]) + ["solomon"] * len(b["coords"]))
        return out
    name = "" if val_set == "uniform" else "_solomon"
    path = WEIGHTS / "validation" / f"polynet_cvrptw{name}_n{VALIDATION_N}.npz"
    if path.exists():
        data = np.load(path, allow_pickle=True)
        return {k: data[k] for k in data.files}
    solver, limit = TW_REFERENCE
    if val_set == "uniform":
        rng = np.random.default_rng(VALIDATION_SEED + 2)
        instances = [random_cvrptw(rng, VALIDATION_N)[0] for _ in range(VALIDATION_COUNT)]
    else:
        rng = np.random.default_rng(VALIDATION_SEED + 3)
        instances = [solomon_like_cvrptw(rng, VALIDATION_N,
                                         SOLOMON_FAMILIES[i % len(SOLOMON_FAMILIES)])
                     for i in range(SOLOMON_VALIDATION_COUNT)]
    costs = [solve(inst, solver, Budget(time_limit=limit, seed=0)).cost for inst in instances]
    out = {"coords": np.stack([i.coords for i in instances]),
           "demands": np.stack([i.demands for i in instances]),
           "capacities": np.asarray([i.capacity for i in instances]),
           "time_windows": np.stack([i.time_windows for i in instances]),
           "service_times": np.stack([i.service_times for i in instances]),
           "reference_costs": np.asarray(costs), "reference": np.asarray(f"{solver} {limit:g}s")}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def validation_description(problem: str, val_set: str) -> str:
    """The manifest's name for a validation set: a gap is only comparable on the same one."""
    uniform = (f"{VALIDATION_COUNT} Solomon-style CVRPTW{VALIDATION_N} instances "
               f"(training.instances.random_cvrptw), seed {VALIDATION_SEED + 2}")
    solomon = (f"{SOLOMON_VALIDATION_COUNT} CVRPTW{VALIDATION_N} instances drawn like "
               f"Solomon's six families (training.instances.solomon_like_cvrptw, six each), "
               f"seed {VALIDATION_SEED + 3}")
    if problem != "cvrptw":
        return (f"{VALIDATION_COUNT} uniform {problem.upper()}{VALIDATION_N} instances, seed "
                f"{VALIDATION_SEED} (the ReLD validation set)")
    return {"uniform": uniform, "solomon": solomon,
            "mixed": f"{uniform}, then {solomon}; mean gap over all"}[val_set]


def tw_instances(val: dict[str, Any], sl: slice) -> list[CVRPTWInstance]:
    return [CVRPTWInstance(coords=c, distance="exact", demands=d, capacity=int(q),
                           time_windows=w, service_times=s)
            for c, d, q, w, s in zip(val["coords"][sl], val["demands"][sl],
                                     val["capacities"][sl], val["time_windows"][sl],
                                     val["service_times"][sl], strict=True)]


@torch.inference_mode()
def greedy_lengths(model: PolyNetModel, problem: str, coords: torch.Tensor,
                   demand: torch.Tensor | None, capacity: torch.Tensor | None,
                   spread: bool, tw: TWBatch | None = None) -> torch.Tensor:
    """(B, K) lengths of one greedy solution per strategy. ``spread``: TSP strategies start at
    spread nodes (else all at node 0); CVRP strategies also take the K most likely first
    customers (else each picks its own)."""
    B, N, _ = coords.shape
    # the one-strategy model (the ``reld`` solver's CVRPTW) decodes as many trajectories as
    # the shipped PolyNet, so the two gaps compare; a PolyNet decodes one per strategy
    K = GREEDY_TRAJECTORIES if model.config.strategies == 1 else model.config.strategies
    z = strategy_bits(model.config.strategies, K, device=coords.device)
    if problem == "tsp":
        start = tsp_starts(N, K, coords.device) if spread else torch.zeros(
            K, dtype=torch.long, device=coords.device)
        return rollout_tsp(model, coords, start[None].expand(B, K), strategy=z).lengths
    if problem == "cvrptw":
        assert tw is not None
        return rollout_cvrptw(model, tw, K, strategy=z, multi_start=spread).lengths
    assert demand is not None
    return rollout_cvrp(model, coords, demand, K, capacity=capacity, strategy=z,
                        multi_start=spread).lengths


def best_lengths(model: PolyNetModel, problem: str, val: dict[str, Any], device: str,
                 batch: int = 16) -> dict[str, np.ndarray]:
    """Per instance, the best greedy length over the K strategies, no augmentation: ``free``
    (TSP: one start; CVRP: no forced first customer) and ``spread`` (TSP: spread starts;
    CVRP: forced distinct first customers), in the instances' own units."""
    model.eval()
    out: dict[str, list[torch.Tensor]] = {"free": [], "spread": []}
    coords_all = torch.as_tensor(val["coords"], dtype=torch.float32, device=device)
    for i in range(0, len(coords_all), batch):
        coords = coords_all[i:i + batch]
        dem = cap = tw = None
        if problem == "cvrptw":
            tw = tw_batch(tw_instances(val, slice(i, i + batch)), device)
            coords = tw.coords
        elif problem != "tsp":
            cap = torch.as_tensor(val["capacities"][i:i + batch], dtype=torch.float32,
                                  device=device)
            dem = torch.as_tensor(val["demands"][i:i + batch], dtype=torch.float32,
                                  device=device) / cap[:, None]
        for key in out:
            lengths = greedy_lengths(model, problem, coords, dem, cap, key == "spread", tw)
            if tw is not None:  # back to the instances' units (tw_batch divides by the span)
                lengths = lengths * _spans(val, slice(i, i + batch), device)[:, None]
            out[key].append(lengths.min(dim=1).values.double().cpu())
    model.train()
    return {k: torch.cat(v).numpy() for k, v in out.items()}


def validate(model: PolyNetModel, problem: str, val: dict[str, Any], device: str,
             batch: int = 16) -> dict[str, float]:
    """Mean gaps (%) to the reference costs of ``best_lengths`` (``free`` and ``spread``);
    a mixed set also reports each part's."""
    ref = np.asarray(val["reference_costs"], dtype=np.float64)
    gaps = {k: (v - ref) / ref * 100
            for k, v in best_lengths(model, problem, val, device, batch).items()}
    result = {k: float(np.mean(g)) for k, g in gaps.items()}
    if "parts" in val:  # a mixed set: also each part's mean
        parts = np.asarray(val["parts"])
        for part in dict.fromkeys(parts.tolist()):
            for k, g in gaps.items():
                result[f"{k}_{part}"] = float(np.mean(g[parts == part]))
    return result


def _spans(val: dict[str, Any], sl: slice, device: str) -> torch.Tensor:
    xy = np.asarray(val["coords"][sl], dtype=np.float64)
    return torch.as_tensor((xy.max(1) - xy.min(1)).max(-1), device=device)


# -- the best-of-K loss -------------------------------------------------------------------
def _tw_batch(rng: np.random.Generator, n: int, batch: int, device: str,
              solomon_share: float) -> TWBatch:
    """A CVRPTW training batch: drawn like Solomon's six families with probability
    ``solomon_share``, else by ``random_cvrptw`` (no draw at 0: the same stream as before the
    share existed)."""
    if solomon_share and rng.random() < solomon_share:
        return tw_batch([solomon_like_cvrptw(rng, n) for _ in range(batch)], device)
    return tw_batch([random_cvrptw(rng, n)[0] for _ in range(batch)], device)


def poly_loss(model: PolyNetModel, problem: str, batch: int, sizes: tuple[int, int],
              rng: np.random.Generator, device: str, solomon_share: float = 0.0,
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """Best-of-K REINFORCE on a fresh batch of one random size; also returns statistics
    (mean best and mean average length, distinct winning strategies). CVRPTW: a batch is
    drawn like Solomon's six families (``solomon_like_cvrptw``) with probability
    ``solomon_share``, else by ``random_cvrptw`` (narrow windows around one plan)."""
    n = int(rng.integers(sizes[0], sizes[1] + 1))
    K = model.config.strategies
    z = strategy_bits(K, device=device)
    if problem == "tsp":
        coords = torch.as_tensor(np.stack([random_tsp(rng, n) for _ in range(batch)]),
                                 dtype=torch.float32, device=device)
        first = torch.as_tensor(rng.integers(0, n, size=(batch, 1)), device=device)
        with torch.no_grad():
            sampled = rollout_tsp(model, coords, first.expand(batch, K), decode="sample",
                                  strategy=z)
        best = sampled.lengths.argmin(dim=1)
        tours = sampled.actions[torch.arange(batch, device=device), best][:, None]
        cache = model.encode(coords)
        log_p = sequence_log_prob(model, cache, replay_tsp(coords, tours),
                                  strategy=z[best][:, None])
    elif problem == "cvrptw":
        tw = _tw_batch(rng, n, batch, device, solomon_share)
        with torch.no_grad():
            sampled = rollout_cvrptw(model, tw, K, decode="sample", strategy=z)
        best = sampled.lengths.argmin(dim=1)
        winners = sampled.actions[torch.arange(batch, device=device), best][:, None]
        seqs = torch.cat([torch.zeros(batch, 1, 1, dtype=torch.long, device=device),
                          winners], dim=-1)
        log_p = sequence_log_prob(model, encode_tw(model, tw), replay_cvrptw(tw, seqs),
                                  strategy=z[best][:, None])
    else:
        made = [random_cvrp(rng, n) for _ in range(batch)]
        coords = torch.as_tensor(np.stack([m[0] for m in made]), dtype=torch.float32,
                                 device=device)
        dem = torch.as_tensor(np.stack([m[1] / m[2] for m in made]), dtype=torch.float32,
                              device=device)
        cap = torch.as_tensor([float(m[2]) for m in made], device=device)
        with torch.no_grad():
            sampled = rollout_cvrp(model, coords, dem, K, decode="sample", capacity=cap,
                                   strategy=z)
        best = sampled.lengths.argmin(dim=1)
        winners = sampled.actions[torch.arange(batch, device=device), best][:, None]
        seqs = torch.cat([torch.zeros(batch, 1, 1, dtype=torch.long, device=device),
                          winners], dim=-1)
        cache = model.encode(coords, dem)
        log_p = sequence_log_prob(model, cache, replay_cvrp(coords, dem, seqs, cap),
                                  strategy=z[best][:, None])
    lengths = sampled.lengths.float()
    advantage = lengths.mean(dim=1) - lengths.min(dim=1).values  # R_best − mean R ≥ 0
    loss = -(advantage * log_p[:, 0]).mean()
    stats = {"best": float(lengths.min(dim=1).values.mean()), "mean": float(lengths.mean()),
             "winners": float(len(set(best.tolist())))}
    return loss, stats


def pomo_loss(model: PolyNetModel, batch: int, trajectories: int, sizes: tuple[int, int],
              rng: np.random.Generator, device: str, solomon_share: float = 0.0,
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """POMO REINFORCE on CVRPTW for the one-strategy model (``--single``; best-of-K has no
    signal with K=1): ``trajectories`` samples per instance from the depot, each weighted
    by its length minus their mean (the shared baseline ReLD trains with); batches drawn as
    in ``poly_loss``."""
    n = int(rng.integers(sizes[0], sizes[1] + 1))
    tw = _tw_batch(rng, n, batch, device, solomon_share)
    z = strategy_bits(model.config.strategies, trajectories, device=device)
    with torch.no_grad():
        sampled = rollout_cvrptw(model, tw, trajectories, decode="sample", strategy=z)
    seqs = torch.cat([torch.zeros(batch, trajectories, 1, dtype=torch.long, device=device),
                      sampled.actions], dim=-1)
    log_p = sequence_log_prob(model, encode_tw(model, tw), replay_cvrptw(tw, seqs), strategy=z)
    lengths = sampled.lengths.float()
    loss = (pomo_advantage(lengths) * log_p).mean()
    stats = {"best": float(lengths.min(dim=1).values.mean()), "mean": float(lengths.mean()),
             "winners": 1.0}
    return loss, stats


TWLabels = dict[int, list[tuple[CVRPTWInstance, list[list[int]]]]]


def load_tw_labels(paths: Path | Sequence[Path]) -> TWLabels:
    """Expert CVRPTW labels (``python -m training.instances cvrptw`` or ``cvrptw-solomon``)
    from one or more files, grouped by size, as (instance, routes); a label the independent
    checker rejects is dropped (PyVRP may return an infeasible best under a short limit)."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    grouped: TWLabels = {}
    for path in paths:
        for lab in load_labels(path):
            inst = CVRPTWInstance(coords=lab["coords"], distance="exact",
                                  demands=lab["demands"], capacity=int(lab["capacity"]),
                                  time_windows=lab["time_windows"],
                                  service_times=lab["service_times"])
            routes = cvrp_routes(np.asarray(lab["sequence"]).tolist())
            if check_cvrptw(inst, routes) == []:
                grouped.setdefault(inst.n, []).append((inst, routes))
    if not grouped:
        raise SystemExit(f"{', '.join(map(str, paths))}: no feasible CVRPTW labels")
    return grouped


def tw_imitation_loss(model: PolyNetModel, batch: int, variants: int,
                      sizes: tuple[int, int], rng: np.random.Generator,
                      device: str, labels: TWLabels | None = None,
                      ) -> tuple[torch.Tensor, dict[str, float]]:
    """CVRPTW bootstrap: negative log-likelihood per step of expert routes in shuffled route
    orders (never reversed: that would break the windows), each variant under a random
    strategy and each instance seen in a random symmetry of the square (distances and times
    unchanged). The routes are ``labels``' (PyVRP's) when given, else the routes each
    generated instance's windows were built around (``random_cvrptw``'s reference: feasible
    by construction, far from optimal). It teaches the CVRP-initialized model to read the
    time features before best-of-K takes over."""
    if labels is not None:
        n = int(rng.choice(list(labels)))
        made = [labels[n][int(i)] for i in rng.integers(0, len(labels[n]), batch)]
    else:
        n = int(rng.integers(sizes[0], sizes[1] + 1))
        made = [random_cvrptw(rng, n) for _ in range(batch)]
    tw = tw_batch([m[0] for m in made], device)
    views = torch.as_tensor(rng.integers(0, 8, batch), device=device)
    tw.coords = augment(tw.coords, 8).view(8, batch, *tw.coords.shape[1:])[
        views, torch.arange(batch, device=device)]
    seqs: list[list[list[int]]] = []
    for _, routes in made:
        group = []
        for _ in range(variants):
            order = rng.permutation(len(routes))
            group.append([0] + [v for k in order for v in [*routes[k], 0]])
        seqs.append(group)
    length = max(len(s) for g in seqs for s in g)
    padded = torch.zeros(batch, variants, length, dtype=torch.long)
    for b, g in enumerate(seqs):
        for v, seq in enumerate(g):
            padded[b, v, :len(seq)] = torch.as_tensor(seq)
    K = model.config.strategies
    z = strategy_bits(K, device=device)[torch.as_tensor(rng.integers(0, K, (batch, variants)))]
    log_p = sequence_log_prob(model, encode_tw(model, tw), replay_cvrptw(tw, padded.to(device)),
                              strategy=z.to(device))
    loss = -log_p.mean() / (length - 1)
    return loss, {"best": math.nan, "mean": math.nan, "winners": math.nan}


# -- main loop ---------------------------------------------------------------------------
def _optimizer(model: PolyNetModel, lr: float, poly_lr: float) -> torch.optim.Adam:
    poly = [p for n, p in model.named_parameters() if n.startswith("poly.")]
    base = [p for n, p in model.named_parameters() if not n.startswith("poly.")]
    return torch.optim.Adam([{"params": base, "lr": lr}, {"params": poly, "lr": poly_lr}])


def _start(args: argparse.Namespace, latest: Path, out: Path, parent: Path
           ) -> tuple[PolyNetModel, torch.optim.Optimizer, TrainState, Path | None,
                      dict[str, Any], np.random.Generator]:
    """The model, optimizer and record to train, the checkpoint resumed (None: a warm start
    from ``parent``), its dict, and the step generator."""
    device = args.device
    np_rng = np.random.default_rng(args.seed)
    # On a fresh clone there is no latest state: continue from the shipped checkpoint, so every
    # minute of training adds to it (as training.reld does).
    source = None if args.fresh else latest if latest.exists() else out if out.exists() else None
    if source is not None:
        model, ckpt = load_checkpoint(source, device)
        state = TrainState(**ckpt["train"])
        np_rng = np.random.default_rng([args.seed, state.steps])
        print(f"resuming {source}: {state.steps} steps, {state.cpu_minutes:.1f} CPU min, "
              f"{state.gpu_minutes:.1f} GPU min, best gap {state.best_gap}", flush=True)
    elif args.single:
        polynet, polynet_ckpt = load_checkpoint(parent, device)
        try:
            model = polynet.single_strategy(args.collapse_strategy)
        except ValueError as exc:
            raise SystemExit(f"--collapse-strategy: {exc} ({parent.name} has "
                             f"{polynet.config.strategies} strategies)") from exc
        # the lineage's training so far is the PolyNet model's: its steps and minutes count
        lineage = TrainState(**polynet_ckpt["train"])
        ckpt, state = {}, TrainState(steps=lineage.steps, cpu_minutes=lineage.cpu_minutes,
                                     gpu_minutes=lineage.gpu_minutes,
                                     phases=dict(lineage.phases or {}))
        print(f"warm start from strategy {args.collapse_strategy} of {parent}", flush=True)
    else:
        reld, _ = load_reld(parent, device)
        model = PolyNetModel.from_reld(reld, args.strategies, args.poly_hidden, args.problem)
        ckpt, state = {}, TrainState(phases={})
        print(f"warm start from {parent} with {args.strategies} strategies", flush=True)
    if args.reparent:
        # The ReLD parent improved since this PolyNet was trained: keep the trained strategy
        # block, take the parent's new weights under it (polynet_tsp.pt: validation 2.423% ->
        # 2.180% when ReLD TSP went from 2.497% to 2.435%, before any further training).
        reld, _ = load_reld(parent, device)
        missing, unexpected = model.load_state_dict(reld.state_dict(), strict=False)
        assert not unexpected and all(k.startswith("poly.") for k in missing), (missing,
                                                                                unexpected)
        state.best_gap = None
        print(f"re-parented on {parent}: the strategy block kept, the rest replaced",
              flush=True)
    state.phases = state.phases or {}
    optimizer = _optimizer(model, args.lr, args.poly_lr)
    if ckpt.get("optimizer"):
        optimizer.load_state_dict(ckpt["optimizer"])
        for group, lr in zip(optimizer.param_groups, (args.lr, args.poly_lr), strict=True):
            group["lr"] = lr
    return model, optimizer, state, source, ckpt, np_rng


def _decoding(args: argparse.Namespace, strategies: int) -> str:
    """How validation decodes, as MANIFEST.json says it."""
    if args.single:
        return (f"greedy, {GREEDY_TRAJECTORIES} trajectories of the one strategy with "
                "distinct forced first customers, no augmentation")
    if args.problem == "tsp":
        return (f"greedy, one solution per strategy (K={strategies}) from spread start nodes, "
                "no augmentation")
    return (f"greedy, one solution per strategy (K={strategies}) with distinct forced first "
            "customers, no augmentation")


def _last_run(args: argparse.Namespace) -> str:
    """The options of the run that wrote a checkpoint, for its manifest entry."""
    return (f"--phase {args.phase} --lr {args.lr:g} --poly-lr {args.poly_lr:g}"
            + (" --reparent" if args.reparent else "")
            + (f" --single --trajectories {args.trajectories}" if args.single else "")
            + (f" --solomon-share {args.solomon_share:g}" if args.solomon_share else "")
            + (f" --warmup-steps {args.warmup_steps}" if args.warmup_steps else "")
            + (" (ReLD parent frozen: only the strategy block learns)" if args.lr == 0
               else ""))


def _validation_entry(args: argparse.Namespace, description: str, decoding: str,
                      gaps: dict[str, float], reference: str,
                      confirmation: dict[str, Any]) -> dict[str, Any]:
    """The ``validation`` of a written checkpoint's manifest entry."""
    parts = {k[len("spread_"):]: round(v, 3) for k, v in gaps.items() if k.startswith("spread_")}
    return {"set": description, "decoding": decoding, "gap_percent": round(gaps["spread"], 3),
            "gap_percent_free": round(gaps["free"], 3),
            **({"gap_percent_parts": parts} if parts else {}),
            "reference": reference, **({"confirmation": confirmation} if confirmation else {}),
            "last_run": _last_run(args)}


def _parent_note(args: argparse.Namespace, parent: Path) -> str:
    """Where the lineage started, for its manifest entry."""
    return parent.name + (f" (strategy {args.collapse_strategy}, folded)" if args.single
                          else " (CVRP parent, time-feature columns zero)"
                          if args.problem == "cvrptw" else "")


def _validation(args: argparse.Namespace, shortened: bool) -> tuple[dict[str, Any], str]:
    """The validation set of this run and its description."""
    val_set = args.val_set if args.problem == "cvrptw" else "uniform"
    val = validation_data(args.problem, val_set)
    if args.val_count < len(val["coords"]) and val_set == "uniform":
        val = {k: (v[:args.val_count] if v.ndim else v) for k, v in val.items()}
    description = validation_description(args.problem, val_set)
    if shortened:
        # a smaller set is another set: its gaps must not be compared with the full one's
        description = f"the first {len(val['coords'])} of {description}"
    return val, description


def _shipped_bar(args: argparse.Namespace, out: Path, description: str,
                 val: dict[str, Any]) -> float | None:
    """The gap the shipped checkpoint holds on this run's set (None: no file yet): recorded
    in MANIFEST.json, else measured now."""
    if not out.exists():
        return None
    to_beat = shipped_gap(args.problem, description, args.single)
    if to_beat is None:  # validated on another set: measure it on this one first
        to_beat = validate(load_checkpoint(out, args.device)[0], args.problem, val,
                           args.device)["spread"]
    print(f"the shipped {out.name} is replaced only 0.1 point below its {to_beat:.3f}% "
          f"({description})", flush=True)
    return to_beat


def train(args: argparse.Namespace) -> dict[str, Any]:
    device = args.device
    torch.manual_seed(args.seed)
    shipped = checkpoint_path(args.problem, args.single)
    out = Path(args.out).resolve() if args.out else shipped  # (a relative --out: see reld)
    shortened = args.val_count < VALIDATION_COUNT and (args.problem != "cvrptw"
                                                      or args.val_set == "uniform")
    if shortened and out == shipped:
        # the shipped gap and its manifest entry are on the whole validation set (only the
        # uniform sets are ever shortened)
        raise SystemExit(f"--val-count {args.val_count} is below the {VALIDATION_COUNT} "
                         "validation instances that gate the shipped checkpoint; give --out "
                         "for an experiment")
    latest = loop.latest_path(out, shipped)
    claim = manifest.claim_training(latest)  # noqa: F841 (held for the run)
    # CVRPTW has no ReLD parent of its own: it starts from the CVRP one (time columns zero).
    # The one-strategy model (--single) starts as one strategy of the PolyNet CVRPTW model.
    parent = Path(args.parent) if args.parent else WEIGHTS / (
        "polynet_cvrptw.pt" if args.single else
        "reld_cvrp.pt" if args.problem == "cvrptw" else f"reld_{args.problem}.pt")
    model, optimizer, state, source, ckpt, np_rng = _start(args, latest, out, parent)
    val, description = _validation(args, shortened)
    if source is not None and ckpt.get("validation_set", validation_description(
            args.problem, "uniform")) != description:
        print("the validation set changed: best gap reset", flush=True)
        state.best_gap = None
    reference = str(val["reference"])
    to_beat = _shipped_bar(args, out, description, val) if out == shipped else None
    gate = Gate.on_fresh(args.problem, CONFIRM_SEED, args.confirm_count, VALIDATION_N, out,
                         lambda m, data: best_lengths(m, args.problem, data, device)["spread"],
                         lambda path: load_checkpoint(path, device)[0]
                         ) if args.confirm_count else None
    # an experiment is replaced below its own best so far
    keeper = loop.Keeper(out, out == shipped, state.best_gap if to_beat is None else to_beat,
                         gate, MANIFEST)
    curve = loop.curve_path(out)
    timer = loop.Timer(state.cpu_minutes + state.gpu_minutes, device.startswith("cuda"))
    losses: list[float] = []
    recent: list[dict[str, float]] = []
    decoding = _decoding(args, model.config.strategies)

    def evaluate() -> None:
        gaps = validate(model, args.problem, val, device)
        gap = gaps["spread"]
        total = timer.total()
        mean = {k: float(np.mean([r[k] for r in recent[-50:]])) if recent else math.nan
                for k in ("best", "mean", "winners")}
        loop.append_curve(curve, ["total_minutes", "steps", "device", "val_gap_percent",
                                  "val_gap_free_percent", "reference", "train_loss",
                                  "train_best", "train_mean", "distinct_winners"],
                          [f"{total:.2f}", state.steps, device, f"{gap:.3f}",
                           f"{gaps['free']:.3f}", reference,
                           f"{np.mean(losses[-50:]) if losses else math.nan:.4f}",
                           f"{mean['best']:.4f}", f"{mean['mean']:.4f}",
                           f"{mean['winners']:.1f}"])
        if state.best_gap is None or gap < state.best_gap:
            state.best_gap = gap
        timer.account(state)
        save_checkpoint(latest, model, optimizer, state, {"validation_set": description})
        print(f"[{total:7.1f} min] steps {state.steps} val gap {gap:.3f}% (free "
              f"{gaps['free']:.3f}%, best {state.best_gap:.3f}) loss "
              f"{np.mean(losses[-50:]) if losses else 0:.4f} best/mean len {mean['best']:.3f}/"
              f"{mean['mean']:.3f} winners {mean['winners']:.1f}", flush=True)

        def write(record: dict[str, Any]) -> None:
            sha = save_checkpoint(out, model, None, state, {"validation_set": description})
            if out == shipped:
                update_manifest(args.problem, sha, model, state, _validation_entry(
                    args, description, decoding, gaps, reference, record),
                    _parent_note(args, parent), args.single)

        keeper.offer(model, gap, {"steps": state.steps, "total_minutes": round(total, 1),
                                  "run": _last_run(args)}, write)

    labels = (load_tw_labels([Path(p) for p in args.labels.split(",")])
              if args.labels else None)
    if labels is not None:
        print(f"{sum(map(len, labels.values()))} feasible labels from {args.labels}", flush=True)

    def loss() -> tuple[torch.Tensor, dict[str, float]]:
        sizes = (args.min_n, args.max_n)
        if args.phase == "imitation":
            value, stats = tw_imitation_loss(model, args.batch, args.variants, sizes, np_rng,
                                             device, labels)
        elif args.phase == "pomo":
            value, stats = pomo_loss(model, args.batch, args.trajectories, sizes, np_rng,
                                     device, args.solomon_share)
        else:
            value, stats = poly_loss(model, args.problem, args.batch, sizes, np_rng, device,
                                     args.solomon_share)
        recent.append(stats)
        return value, stats

    if source is None or args.reparent:
        evaluate()  # step 0: the ReLD parent (or the re-parented block) as it stands
    steps = loop.run(model, optimizer, state, timer, args.minutes, args.eval_minutes, loss,
                     evaluate, losses, phase=args.phase, at_least_one=True,
                     warmup_steps=args.warmup_steps)
    return {"steps": steps, "best_gap": state.best_gap}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", choices=PROBLEMS)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--strategies", type=int, default=128)
    parser.add_argument("--poly-hidden", type=int, default=256)
    parser.add_argument("--phase", choices=["best_of_k", "imitation", "pomo"],
                        default=None,
                        help="imitation: CVRPTW bootstrap on expert routes (see --labels); "
                        "pomo: the one-strategy model's REINFORCE (default with --single; "
                        "else best_of_k)")
    parser.add_argument("--single", action="store_true",
                        help="CVRPTW: train the reld solver's model (weights/reld_cvrptw.pt), "
                        "one strategy of the PolyNet CVRPTW model (--collapse-strategy) "
                        "trained on by POMO")
    parser.add_argument("--collapse-strategy", type=int, default=1,
                        help="--single, first run: the PolyNet strategy it starts from")
    parser.add_argument("--trajectories", type=int, default=16,
                        help="samples per instance (pomo)")
    parser.add_argument("--labels",
                        help="expert CVRPTW labels for the imitation phase: .npz files from "
                        "training.instances cvrptw / cvrptw-solomon, comma-separated (default: "
                        "the generator's routes)")
    parser.add_argument("--variants", type=int, default=8,
                        help="route orders per instance (imitation)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--solomon-share", type=float, default=0.0,
                        help="CVRPTW best-of-K or pomo: share of batches drawn like Solomon's six "
                        "families (wide type-2 windows, clusters) instead of random_cvrptw")
    parser.add_argument("--min-n", type=int, default=60)
    parser.add_argument("--max-n", type=int, default=100)
    parser.add_argument("--lr", type=float, default=3e-5, help="ReLD parameters")
    parser.add_argument("--poly-lr", type=float, default=3e-4, help="the strategy block")
    parser.add_argument("--warmup-steps", type=int, default=200,
                        help="both lrs rise linearly over this run's first steps (0: none; "
                        "training.loop.warmup_lr: a fresh Adam on trained weights)")
    parser.add_argument("--eval-minutes", type=float, default=6.0)
    parser.add_argument("--confirm-count", type=int, default=CONFIRM_COUNT,
                        help="fresh instances a new best must also beat the checkpoint it "
                             "replaces on (paired); 0: the validation gap alone decides")
    parser.add_argument("--val-count", type=int, default=VALIDATION_COUNT)
    parser.add_argument("--val-set", choices=["uniform", "solomon", "mixed"], default="mixed",
                        help="CVRPTW validation: the uniform set, the Solomon-like one, or both "
                             "(the gate for shipping; default both)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parent", help="ReLD checkpoint (default weights/reld_<problem>.pt)")
    parser.add_argument("--out", help="checkpoint path (default weights/polynet_<problem>.pt)")
    parser.add_argument("--fresh", action="store_true", help="ignore the latest checkpoint")
    parser.add_argument("--reparent", action="store_true",
                        help="keep the trained strategy block, swap in the current ReLD parent "
                        "(after the parent improved; TSP and CVRP)")
    args = parser.parse_args(argv)
    manifest.check_common_args(parser, args)
    if args.phase is None:
        args.phase = "pomo" if args.single else "best_of_k"
    if args.single and args.problem != "cvrptw":
        parser.error("--single trains the reld solver's CVRPTW model (TSP and CVRP have "
                     "training.reld)")
    if (args.phase == "pomo") != args.single:
        parser.error("--phase pomo goes with --single (a one-strategy model), and only with it")
    if args.single and args.trajectories < 2:
        parser.error("--trajectories: at least 2 (POMO's baseline is their mean)")
    if args.single and args.collapse_strategy < 0:
        parser.error("--collapse-strategy: a strategy index, 0 or more")
    if args.single and args.reparent:
        parser.error("--reparent is for TSP and CVRP PolyNets")
    if args.reparent and (args.problem == "cvrptw" or args.fresh):
        parser.error("--reparent needs a trained TSP or CVRP PolyNet (CVRPTW's parent has "
                     "other input columns; --fresh has no strategy block to keep)")
    if args.phase == "imitation" and args.problem != "cvrptw":
        parser.error("--phase imitation is the CVRPTW bootstrap (TSP and CVRP start from ReLD)")
    if args.solomon_share and (args.problem != "cvrptw" or args.phase == "imitation"
                               or not 0 <= args.solomon_share <= 1):
        parser.error("--solomon-share is a share in [0, 1] of CVRPTW best-of-K or pomo batches")
    torch.set_num_threads(args.threads)
    print(json.dumps(train(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
