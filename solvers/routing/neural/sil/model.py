"""SIL's model at inference: weights, the batched path decoder and the parallel local
reconstruction round (PRC) that both the TSP and the CVRP search use."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.sil import SILConfig, SILModel
from solvers.contract import Clock, ProgressCallback, ProgressEvent, beating
from solvers.tuning import torch_threads, tuning
from solvers.weights import WEIGHTS_DIR

TORCH_THREADS = torch_threads()
MAX_NODES = {"tsp": 200_000, "cvrp": 200_000}
#: Candidates per step of the greedy construction (SIL's optional kNN cap), unless the
#: solver's ``SILParams`` say otherwise.
GREEDY_CANDIDATES = 100
#: Candidate tokens per batch: bounds activation memory (~hidden × 4 bytes per token).
TOKENS_PER_BATCH = 1 << 16
#: Decoding token-steps per batch (~1 s on one loaded core): how much work a deadline can
#: interrupt; an interrupted batch is dropped whole, so segments stay complete.
STEP_TOKENS_PER_BATCH = 1 << 17
#: Seconds per candidate-token evaluation for a 3-layer, dim-64 model on one core of the
#: development machine (measured 9–14 µs under load); scaled by model size, it sizes the
#: first round before any round has been timed.
PER_TOKEN_PRIOR = 1.5e-5


def _cpu_has_fast_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


#: bf16 matmuls on CPUs with native bf16 (AVX512-BF16/AMX) made a 20K-node round 2× faster
#: on the development machine (same tour length to 1e-4); acceptance still compares float64
#: lengths, so a rounding slip can only cost an improvement, never feasibility.
#: COSOLVE_SIL_PRECISION=fp32|bf16 overrides.
PRECISION = tuning("COSOLVE_SIL_PRECISION")
USE_BF16 = PRECISION == "bf16" or (PRECISION == "auto" and _cpu_has_fast_bf16())
#: A random symmetry of the unit box per reconstruction round (COSOLVE_SIL_VIEWS=0: identity).
RANDOM_VIEWS = tuning("COSOLVE_SIL_VIEWS") == "1"


def per_token_prior(model: SILModel) -> float:
    c = model.config
    return PER_TOKEN_PRIOR * (c.layers * c.dim * c.dim) / (3 * 64 * 64)


def weights_path(problem: str) -> Path:
    return WEIGHTS_DIR / f"sil_{problem}.pt"


def save_model(path: Path, model: SILModel, meta: dict[str, Any]) -> None:
    """Checkpoint without optimizer state: config, weights and training metadata. Written to
    a temporary file and renamed, so an interrupted write never leaves the shipped file
    half-written."""
    tmp = path.with_suffix(".tmp")
    torch.save({"config": model.config.to_dict(), "state_dict": model.state_dict(),
                "meta": meta}, tmp)
    tmp.replace(path)


def load_model(path: Path, device: str = "cpu") -> tuple[SILModel, dict[str, Any]]:
    blob = torch.load(path, map_location=device, weights_only=False)
    model = SILModel(SILConfig(**blob["config"])).to(device)
    model.load_state_dict(blob["state_dict"])
    return model, dict(blob.get("meta", {}))


# -- TSP segment reconstruction ---------------------------------------------------------------

def normalize_segments(points: torch.Tensor) -> torch.Tensor:
    """(M, w, 2) -> the same points shifted and scaled into the unit box, aspect kept."""
    lo = points.amin(dim=1, keepdim=True)
    span = (points.amax(dim=1, keepdim=True) - lo).amax(dim=-1, keepdim=True)
    return (points - lo) / span.clamp_min(1e-12)


def dihedral(points: torch.Tensor, symmetry: int) -> torch.Tensor:
    """One of the unit square's 8 symmetries (0 = identity) of points in [0, 1]²: the same
    path problem, seen differently by the model."""
    if symmetry & 4:
        points = points.flip(-1)
    x, y = points.unbind(-1)
    if symmetry & 1:
        x = 1.0 - x
    if symmetry & 2:
        y = 1.0 - y
    return torch.stack((x, y), dim=-1)


def rebuild_tsp_segments(model: SILModel, coords: torch.Tensor, segs: torch.Tensor,
                         deadline: float = math.inf, symmetry: int = 0,
                         stop: Callable[[], bool] | None = None) -> torch.Tensor | None:
    """Greedy rebuild of open paths: (M, w) node ids -> (M, w) with the same first and last
    node and the interior reordered by the model; None if ``deadline`` passes or ``stop``
    says so first (a cancel: a 100K-node job took 17-22 s to stop, the rest of its
    round). ``symmetry`` picks the view of the unit box the model decodes in."""
    m_segs, w = segs.shape
    if w <= 3:
        return segs
    h = model.embed_nodes(dihedral(normalize_segments(coords[segs]), symmetry))
    d = h.shape[-1]
    rows = torch.arange(m_segs, device=segs.device)
    first = h[:, -1]
    cur = h[:, 0]
    idx = torch.arange(1, w - 1, device=segs.device).expand(m_segs, -1)
    order = [torch.zeros(m_segs, dtype=torch.long, device=segs.device)]
    for _ in range(w - 3):
        if time.perf_counter() > deadline or (stop is not None and stop()):
            return None
        cand = h.gather(1, idx.unsqueeze(-1).expand(-1, -1, d))
        pick = model(first, cur, cand).argmax(dim=1)
        chosen = idx.gather(1, pick.unsqueeze(1)).squeeze(1)
        order.append(chosen)
        cur = h[rows, chosen]
        keep = torch.ones_like(idx, dtype=torch.bool)
        keep.scatter_(1, pick.unsqueeze(1), False)
        idx = idx[keep].view(m_segs, -1)
    order.append(idx[:, 0])
    order.append(torch.full((m_segs,), w - 1, dtype=torch.long, device=segs.device))
    return segs.gather(1, torch.stack(order, dim=1))


def model_coords(xy: np.ndarray) -> torch.Tensor:
    """The coordinates as the model's float32, moved to the origin in float64 first: points
    1e9 from the origin and 1 apart collapsed into one when cast first (sil's tour
    148 % longer for the same instance shifted by 1e8). Segments are rebuilt from their own
    relative positions, so the shift changes nothing else."""
    xy = np.asarray(xy, dtype=np.float64)
    return torch.as_tensor(xy - xy.min(axis=0), dtype=torch.float32)


def rebuild_batched(model: SILModel, coords: torch.Tensor, segs: np.ndarray,
                    deadline: float = math.inf, symmetry: int = 0,
                    stop: Callable[[], bool] | None = None,
                    on_batch: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Rebuild (M, w) segments in memory-bounded batches; past ``deadline`` (or once
    ``stop`` says so) the remaining rows come back unchanged. ``on_batch`` hears the rows
    done and the total after each batch (a heartbeat through rounds that take a minute)."""
    out = segs.copy()
    w = segs.shape[1]
    # Rows per batch: bounded by memory (positions) and by time (decoding token-steps, about
    # w²/2 per row), with a floor that keeps the matmuls efficient.
    chunk = max(16, min(TOKENS_PER_BATCH // w, STEP_TOKENS_PER_BATCH // max(1, w * w // 2)))
    if on_batch is not None:
        on_batch(0, segs.shape[0])
    for s in range(0, segs.shape[0], chunk):
        part = torch.from_numpy(np.ascontiguousarray(segs[s:s + chunk]))
        # Small batches lose more to autocast's casts than bf16 saves (measured at 1K nodes).
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=USE_BF16 and part.numel() >= 8192):
            new = rebuild_tsp_segments(model, coords, part, deadline, symmetry, stop)
        if new is None:  # out of time: this batch and the rest stay as they were
            break
        out[s:s + chunk] = new.numpy()
        if on_batch is not None:
            on_batch(min(s + chunk, segs.shape[0]), segs.shape[0])
    return out


def _path_lengths(xy: np.ndarray, segs: np.ndarray) -> np.ndarray:
    p = xy[segs]
    return np.sqrt(((p[:, 1:] - p[:, :-1]) ** 2).sum(-1)).sum(-1)


def prc_round(model: SILModel, xy: np.ndarray, coords: torch.Tensor, tour: np.ndarray,
              w: int, rng: np.random.Generator, deadline: float = math.inf,
              stop: Callable[[], bool] | None = None,
              on_batch: Callable[[int, int], None] | None = None,
              ) -> tuple[np.ndarray, int]:
    """One reconstruction round over the whole tour with segments of ``w`` nodes.

    Returns the new tour (rotated/reversed at random; the same cycle where nothing improved)
    and the number of segments that got shorter. Past ``deadline`` (a perf_counter time)
    the remaining batches are skipped: segments are disjoint, so a partial round is valid;
    so after ``stop`` (a cancel). ``on_batch``: see ``rebuild_batched``."""
    n = tour.size
    if rng.random() < 0.5:
        tour = tour[::-1]
    tour = np.roll(tour, -int(rng.integers(n)))
    m_segs = n // w
    segs = tour[: m_segs * w].reshape(m_segs, w).copy()
    # A random view of the unit box per round: greedy decoding then differs between rounds
    # that cut the same stretch of tour, at no cost.
    symmetry = int(rng.integers(8)) if RANDOM_VIEWS else 0
    new = rebuild_batched(model, coords, segs, deadline, symmetry, stop, on_batch)
    better = _path_lengths(xy, new) < _path_lengths(xy, segs) - 1e-9
    segs[better] = new[better]
    improved = int(better.sum())
    out = tour.copy()
    out[: m_segs * w] = segs.ravel()
    return out, improved


#: Seconds between two heartbeats inside a reconstruction round (a round at 100K nodes takes
#: up to half the budget: 30-50 s without a progress report).
HEARTBEAT_S = 2.0


class RoundHeartbeat:
    """Reports progress while a round runs: the best cost so far (that of the last plan
    reported: a round in progress has none better to show) and how much of the round is
    done, at most every ``every`` seconds. ``rounds`` and ``best`` are kept current by the
    solve loop.

    Called after each batch of segments (``on_batch``), and through ``check``, the round's
    cancel check, which the decoding asks at every step: a batch at 100K nodes can outlast
    ``every`` on a slow machine (3.7 s between reports at a third of this machine's speed)."""

    def __init__(self, name: str, clock: Clock, progress: ProgressCallback, best: float,
                 every: float | None = None) -> None:
        self.name, self.clock, self.progress = name, clock, progress
        self.best = best
        self.rounds = 0
        self.every = HEARTBEAT_S if every is None else every  # read now: tests shorten it
        self.done = self.total = 0  # segments rebuilt in this round, of how many (0: unknown)
        self._next = time.perf_counter() + self.every

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.tick()

    def start_round(self, rounds: int) -> None:
        """A new round begins, after ``rounds`` finished ones: nothing of it done yet."""
        self.rounds, self.done, self.total = rounds, 0, 0

    def check(self, cancelled: Callable[[], bool] | None) -> Callable[[], bool]:
        """``cancelled`` (None: never) as a check that also beats when a beat is due."""
        def check() -> bool:
            self.tick()
            return cancelled is not None and cancelled()
        return check

    def tick(self) -> None:
        """Report the round's progress if a report is due."""
        now = time.perf_counter()
        if now >= self._next:
            self._next = now + self.every
            part = f": {self.done}/{self.total} segments" if self.total else ""
            self.progress(ProgressEvent(self.name, self.clock.elapsed, self.rounds, self.best,
                                        f"round {self.rounds + 1}{part}"))


def phase_heartbeat(name: str, clock: Clock, progress: ProgressCallback, message: str,
                    best: float | None = None) -> Callable[[], bool]:
    """The budget's cancel check for a phase with no rounds to count (the model's greedy
    start at 20K nodes, the first descent of a 100K-node CVRP: 5-15 s that went by without a
    report), reporting ``message`` with ``best`` (None before any plan) every
    ``HEARTBEAT_S``."""
    return beating(clock.budget.cancelled,
                   lambda: progress(ProgressEvent(name, clock.elapsed, 0, best, message)),
                   HEARTBEAT_S)


def greedy_tours(model: SILModel, xy: np.ndarray, starts: np.ndarray,
                 k: int = GREEDY_CANDIDATES, deadline: float = math.inf,
                 stop: Callable[[], bool] | None = None) -> np.ndarray | None:
    """SIL's greedy construction with a k-nearest candidate cap, one tour per start node in
    one batch: from its start, the model picks the next node among the k unvisited nodes
    nearest the current one, until the tour closes. Returns (S, n) tours, or None if
    ``deadline`` (a perf_counter time) passes or ``stop`` says so first.

    Each step sees its candidates and the current node rescaled to their own box (as PRC's
    segments are), with the destination (the start node) clamped into that box: the model
    was trained on local open paths whose end lies among the candidates, and early on the
    true start is far away. Tour s is decoded in the unit box's symmetry s mod 8, so tours
    from nearby starts still differ. On a CPU a step is compute-bound (8 tours cost ~5× one
    at 1K nodes), so the solver builds a single tour."""
    n = xy.shape[0]
    starts = np.asarray(starts, dtype=np.int64)
    S = starts.size
    if n <= 3:
        return np.tile(np.arange(n), (S, 1))
    from scipy.spatial import cKDTree

    _, near = cKDTree(xy).query(xy, k=min(n, 2 * k + 1))
    rows = np.arange(S)
    visited = np.zeros((S, n), dtype=bool)
    visited[rows, starts] = True
    tours = np.empty((S, n), dtype=np.int64)
    tours[:, 0] = cur = starts
    pts = model_coords(xy)
    dest = pts[torch.from_numpy(starts)][:, None]
    for step in range(1, n - 1):
        if step % 64 == 0 and (time.perf_counter() > deadline
                               or (stop is not None and stop())):
            return None
        need = min(k, n - step)
        nb = near[cur]
        free = ~visited[rows[:, None], nb]
        cand = np.take_along_axis(nb, np.argsort(~free, axis=1, kind="stable")[:, :need], 1)
        for s in np.flatnonzero(free.sum(1) < need):  # neighbour list ran dry: search all
            rest = np.flatnonzero(~visited[s])
            d = ((xy[rest] - xy[cur[s]]) ** 2).sum(1)
            cand[s] = rest[np.argpartition(d, need - 1)[:need]] if rest.size > need else rest
        group = pts[torch.from_numpy(np.concatenate((cur[:, None], cand), axis=1))]
        lo = group.amin(1, keepdim=True)
        span = (group.amax(1, keepdim=True) - lo).amax(-1, keepdim=True).clamp_min(1e-12)
        feats = torch.cat([(group - lo) / span, ((dest - lo) / span).clamp(0.0, 1.0)], dim=1)
        h = model.embed_nodes(torch.stack([dihedral(f, s % 8) for s, f in enumerate(feats)]))
        pick = model(h[:, -1], h[:, 0], h[:, 1:-1]).argmax(dim=1).numpy()
        cur = cand[rows, pick]
        visited[rows, cur] = True
        tours[:, step] = cur
    tours[:, n - 1] = np.argmin(visited, axis=1)
    return tours


def greedy_tour(model: SILModel, xy: np.ndarray, k: int = GREEDY_CANDIDATES, start: int = 0,
                deadline: float = math.inf,
                stop: Callable[[], bool] | None = None) -> np.ndarray | None:
    """One greedy tour from ``start`` (see ``greedy_tours``)."""
    tours = greedy_tours(model, xy, np.array([start]), k, deadline, stop)
    return None if tours is None else tours[0]


def expected_length_uniform(n: int, area: float = 1.0) -> float:
    """Reference optimal-tour length for n uniform points in a square of the given area:
    0.7128·√(n·A) + 0.58·√A, a fit to the LKH-3 averages the SIL paper reports at 1K–100K
    (23.12, 50.97, 71.78, 159.93, 225.99; every one within 0.1%)."""
    return (0.7128 * math.sqrt(n) + 0.58) * math.sqrt(area)
