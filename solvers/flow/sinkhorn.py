"""OFT-Sinkhorn (Shi et al., ICLR 2025) on sparse edge lists, in torch, batched, log-domain.

The entropic optimal-flow-transport problem (the paper's Eq. 5 with the capacity constraints
of its EOFT variant, §3.3) on a network with arc costs c, capacities u and supplies s::

    min_{P ≥ 0, q}  Σ_e c_e P_e + ε Σ_e P_e (log P_e − 1)
    s.t.  P·1 = q + d,   Pᵀ·1 = q − s + d,   Diag(P) = d,   P_e ≤ u_e

q_i is the (unknown) out-flow of node i and d the paper's *virtual self-flow*: every node
carries a constant flow d on a self-loop of cost 0, so every row and column sum stays ≥ d > 0
and the scaling steps below stay defined at nodes with no out-arcs, no in-arcs or no flow yet
(the "isolated nodes" of the paper). At a fixed point the self-flow cancels from the balance
``out − in = s`` exactly, so d damps the iterations without biasing the answer.

The solution has the form ``P_e = min(u_i K_e v_j, u_e)`` (Prop. 2, Prop. 3). We never form u,
v or K: we keep ``a = ε log u`` (row potentials) and ``b = −ε log v`` (column potentials) so that
``P_e = min(exp((a_i − b_j − c_e)/ε), u_e)``, which underflows only for flows below e^-700 —
this is the log-domain stabilisation; it removes the ``exp(−D/ε)`` underflow of the dense
official code. One iteration (Alg. 1 with Alg. 2's truncation), with A/B the out/in masses:

1. row step (u ← (q+d)/(Kv)):       a ← a + ε·log(y / (A + d)),       y = q + d
2. column step (v ← (q−s+d)/(Kᵀu)): b ← b − ε·log((y − s) / (B + d))
3. q step (Eq. 10):  y = s/2 + sqrt(s²/4 + (A + d)(B + d)·exp((b − a)/ε)),
   which is the paper's ``q = s/2 + sqrt((Kv)⊙(Kᵀu) + s²/4) − d`` written in potentials,
4. capacity truncation (Eq. 15): ``P_e = min(·, u_e)`` every time masses are formed.

At the fixed point a = b (u⊙v = 1): one node potential f, and ``P_e = exp((f_i − f_j −
c_e)/ε)`` is a Gibbs flow on reduced costs, so f is a near-optimal LP dual (``repair`` uses
it for the certificate). Node capacities reach this solver as arcs (``CoreNetwork`` splits
capacitated nodes), where the same truncation applies; the paper's q-clamp for node
capacities is not a projection and is not used.

Costs are divided by their largest magnitude and flows by the total supply, then ε runs from
``eps_start`` down to ``eps_end`` by ``eps_decay`` (ε-scaling), warm-starting the potentials;
each stage stops when the L1 imbalance ``Σ_i |out − in − s|`` (a fraction of the total supply)
is below its tolerance. Everything is float64, on CPU or GPU, with a leading batch dimension:
B networks with the same node and arc counts run as one disjoint graph, so one scatter pass
serves the whole batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from solvers.device import torch_device_name
from solvers.errors import SolverUnavailableError
from solvers.flow.options import SinkhornSettings
from solvers.flow.problem import CoreNetwork

__all__ = ["SinkhornResult", "SinkhornSettings", "oft_sinkhorn", "resolve_device"]

#: Logits are clamped here so exp() never overflows float64 (exp(700) ≈ 1e304).
_LOGIT_MAX = 700.0


@dataclass
class SinkhornResult:
    """Potentials and flows in the networks' own units (costs and flow amounts)."""

    #: Row and column potentials, (B, n), in cost units; equal at convergence.
    row_potentials: np.ndarray
    col_potentials: np.ndarray
    #: Entropic flow per arc, (B, m), in flow units (fractional).
    flow: np.ndarray
    #: Σ_i |out − in − s| / total supply, per network.
    marginal_error: np.ndarray
    #: Σ_e c_e·flow_e per network, in cost units (the linear part of the objective).
    primal_cost: np.ndarray
    iterations: int
    eps_schedule: list[float]
    #: ε of the last stage reached, in cost units per network.
    final_eps: np.ndarray
    stages: list[dict[str, Any]] = field(default_factory=list)
    #: "converged", "time_limit", "cancelled" or "max_iterations".
    stopped: str = "converged"
    wall_time: float = 0.0

    @property
    def potentials(self) -> np.ndarray:
        """One potential per node: the mean of the row and column potentials."""
        return 0.5 * (self.row_potentials + self.col_potentials)


def resolve_device(name: str) -> torch.device:
    """A torch device (``auto`` resolved), refusing CUDA where torch sees none (instead of a
    deep torch error)."""
    try:
        return torch.device(torch_device_name(name))
    except ValueError as exc:
        raise SolverUnavailableError("oft_sinkhorn", str(exc)) from None


@dataclass
class _Batch:
    """B same-size networks, normalised, flattened into one disjoint graph on ``device``."""

    B: int
    n: int
    m: int
    tails: torch.Tensor  # (B·m,) global node index
    heads: torch.Tensor
    costs: torch.Tensor  # (B·m,) cost / cost_scale
    caps: torch.Tensor  # (B·m,) cap / flow_scale, inf when uncapacitated
    supplies: torch.Tensor  # (B·n,) supply / flow_scale
    cost_scale: np.ndarray  # (B,)
    flow_scale: np.ndarray  # (B,)


def _flow_scale(core: CoreNetwork) -> float:
    total = float(core.supplies[core.supplies > 0].sum())
    if total > 0:
        return total
    capped = core.caps[core.capacitated]
    return float(max(1, capped.max())) if len(capped) else 1.0


def _batch(cores: Sequence[CoreNetwork], device: torch.device) -> _Batch:
    if not cores:
        raise ValueError("oft_sinkhorn needs at least one network")
    n, m = cores[0].n, cores[0].m
    if any(c.n != n or c.m != m for c in cores):
        raise ValueError("a batch needs networks with the same node and arc counts")
    B = len(cores)
    offsets = (np.arange(B, dtype=np.int64) * n)[:, None]
    cost_scale = np.array([float(max(1, np.abs(c.costs).max(initial=0))) for c in cores])
    flow_scale = np.array([_flow_scale(c) for c in cores])
    tails = np.stack([c.tails for c in cores]) + offsets
    heads = np.stack([c.heads for c in cores]) + offsets
    costs = np.stack([c.costs for c in cores]).astype(np.float64) / cost_scale[:, None]
    caps = np.stack([np.where(c.capacitated, c.caps, np.inf) for c in cores]).astype(np.float64)
    caps /= flow_scale[:, None]
    sup = np.stack([c.supplies for c in cores]).astype(np.float64) / flow_scale[:, None]

    def put(x: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.as_tensor(x.reshape(-1), dtype=dtype, device=device)

    return _Batch(B=B, n=n, m=m, tails=put(tails, torch.long), heads=put(heads, torch.long),
                  costs=put(costs, torch.float64), caps=put(caps, torch.float64),
                  supplies=put(sup, torch.float64), cost_scale=cost_scale,
                  flow_scale=flow_scale)


class _Kernel:
    """The scatter operations of one iteration on a batch."""

    def __init__(self, batch: _Batch, d: float) -> None:
        self.b = batch
        self.N = batch.B * batch.n
        self.d = d

    def flow(self, a: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
        """P_e = min(exp((a_i − b_j − c_e)/ε), u_e) (Eq. 15's truncation)."""
        logits = (a[self.b.tails] - b[self.b.heads] - self.b.costs) / eps
        return torch.minimum(torch.exp(torch.clamp(logits, max=_LOGIT_MAX)), self.b.caps)

    def out_mass(self, P: torch.Tensor) -> torch.Tensor:
        return torch.zeros(self.N, dtype=P.dtype, device=P.device).index_add_(0, self.b.tails, P)

    def in_mass(self, P: torch.Tensor) -> torch.Tensor:
        return torch.zeros(self.N, dtype=P.dtype, device=P.device).index_add_(0, self.b.heads, P)

    def q_step(self, A: torch.Tensor, B: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
               eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(y, y − s) with y = q + d from Eq. 10, in a form without cancellation."""
        s = self.b.supplies
        log_e = torch.log(A + self.d) + torch.log(B + self.d) + torch.clamp(
            (b - a) / eps, min=-_LOGIT_MAX, max=_LOGIT_MAX)
        E = torch.exp(torch.clamp(log_e, min=-_LOGIT_MAX, max=_LOGIT_MAX))
        half = 0.5 * s
        r = torch.sqrt(half * half + E)
        pos = s >= 0
        y = torch.where(pos, half + r, E / (r - half))
        y_minus_s = torch.where(pos, E / (r + half), r - half)
        return y, y_minus_s

    def errors(self, P: torch.Tensor) -> torch.Tensor:
        """Σ_i |out − in − s| per network (a fraction of its total supply)."""
        bal = self.out_mass(P) - self.in_mass(P) - self.b.supplies
        return bal.abs().view(self.b.B, self.b.n).sum(dim=1)


def _iteration(a: torch.Tensor, b: torch.Tensor, y: torch.Tensor, y_minus_s: torch.Tensor,
               A: torch.Tensor, eps: float | torch.Tensor, kern: _Kernel,
               ) -> tuple[torch.Tensor, ...]:
    """One OFT-Sinkhorn iteration (row, column and q steps); returns (a, b, y, y − s, A, P).

    A pure function of its tensors, so that ``torch.compile`` can fuse it and a CUDA graph
    can record it.
    """
    d = kern.d
    a = a + eps * (torch.log(y) - torch.log(A + d))
    P = kern.flow(a, b, eps)
    b = b - eps * (torch.log(y_minus_s) - torch.log(kern.in_mass(P) + d))
    P = kern.flow(a, b, eps)
    A, Bm = kern.out_mass(P), kern.in_mass(P)
    y, y_minus_s = kern.q_step(A, Bm, a, b, eps)
    return (a, b, torch.clamp(y, min=1e-300), torch.clamp(y_minus_s, min=1e-300), A, P)


class _Stepper:
    """Runs k iterations and the imbalance after them: eagerly, compiled, or as a replayed CUDA
    graph of ``check_every`` (compiled or eager) iterations."""

    def __init__(self, kern: _Kernel, cfg: SinkhornSettings, dev: torch.device) -> None:
        self.kern = kern
        self.fn: Callable[..., tuple[torch.Tensor, ...]] = _iteration
        if cfg.compile:
            self.fn = torch.compile(_iteration, fullgraph=True, dynamic=False)
        self.tensor_eps = cfg.compile or (cfg.cuda_graph and dev.type == "cuda")
        self.graph_k = cfg.check_every if cfg.cuda_graph and dev.type == "cuda" else 0
        self.dev = dev
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static: list[torch.Tensor] = []
        self.outputs: tuple[torch.Tensor, ...] = ()

    def __call__(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                 y_minus_s: torch.Tensor, A: torch.Tensor, eps: float, k: int,
                 ) -> tuple[torch.Tensor, ...]:
        if self.graph_k and k == self.graph_k:
            return self._replay(a, b, y, y_minus_s, A, eps)
        e: float | torch.Tensor = eps
        if self.tensor_eps:
            e = torch.tensor(eps, dtype=torch.float64, device=self.dev)
        state: tuple[torch.Tensor, ...] = (a, b, y, y_minus_s, A)
        P = a
        for _ in range(k):
            *rest, P = self.fn(*state, e, self.kern)
            state = tuple(rest)
        return (*state, P, self.kern.errors(P))

    def _run_k(self) -> tuple[torch.Tensor, ...]:
        state: tuple[torch.Tensor, ...] = tuple(self.static[:5])
        P = state[0]
        for _ in range(self.graph_k):
            *rest, P = self.fn(*state, self.static[5], self.kern)
            state = tuple(rest)
        return (*state, P, self.kern.errors(P))

    def _replay(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                y_minus_s: torch.Tensor, A: torch.Tensor, eps: float,
                ) -> tuple[torch.Tensor, ...]:
        if self.graph is None:
            self.static = [t.clone() for t in (a, b, y, y_minus_s, A)]
            self.static.append(torch.tensor(eps, dtype=torch.float64, device=self.dev))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up (and compile) outside the capture
                self._run_k()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.outputs = self._run_k()
        for dst, src in zip(self.static, (a, b, y, y_minus_s, A), strict=False):
            if dst.data_ptr() != src.data_ptr():
                dst.copy_(src)
        self.static[5].fill_(eps)
        self.graph.replay()
        # the outputs live in the graph's pool and are overwritten by the next replay: hand
        # back copies for the state that carries over
        return tuple(t.clone() for t in self.outputs)


ProgressFn = Callable[[dict[str, Any]], None]


_THREADS_LOCK = threading.Lock()
_threads_users = 0  # solves now running with a thread count of their own
_threads_before = 1  # torch's thread count before the first of them changed it


@contextmanager
def _cpu_threads(device: torch.device, threads: int | None) -> Iterator[None]:
    """Run with ``threads`` torch intra-op threads on the CPU. Torch's setting is process-wide:
    when solves asking for their own counts overlap, each exit restoring the count it found
    would leave the process at a count one of them asked for (A 1→2, B 2→4, A back to 1, B
    back to 2), so the count met by the first is restored when the last one ends."""
    global _threads_users, _threads_before
    if device.type != "cpu" or threads is None:
        yield
        return
    with _THREADS_LOCK:
        if _threads_users == 0:
            _threads_before = torch.get_num_threads()
        _threads_users += 1
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _threads_users -= 1
            if _threads_users == 0 and torch.get_num_threads() != _threads_before:
                torch.set_num_threads(_threads_before)


def oft_sinkhorn(
    cores: Sequence[CoreNetwork],
    settings: SinkhornSettings | None = None,
    *,
    device: str = "cpu",
    deadline: float | None = None,
    cancelled: Callable[[], bool] | None = None,
    progress: ProgressFn | None = None,
    progress_every_s: float = 0.5,
) -> SinkhornResult:
    """Run OFT-Sinkhorn with ε-scaling on a batch of same-size core networks.

    Stops at the end of the schedule, at ``deadline`` (a ``time.perf_counter()`` value) or
    when ``cancelled()`` says so, and always returns the current iterate. ``progress`` gets a
    dict (iterations, eps, error, primal cost of the first network) at most every
    ``progress_every_s`` seconds and at the end of every stage.
    """
    cfg = settings or SinkhornSettings()
    dev = resolve_device(device)
    with _cpu_threads(dev, cfg.cpu_threads):
        return _iterate(cores, cfg, dev, deadline, cancelled, progress, progress_every_s)


def _iterate(cores: Sequence[CoreNetwork], cfg: SinkhornSettings, dev: torch.device,
             deadline: float | None, cancelled: Callable[[], bool] | None,
             progress: ProgressFn | None, progress_every_s: float) -> SinkhornResult:
    started = time.perf_counter()
    batch = _batch(cores, dev)
    kern = _Kernel(batch, cfg.virtual_flow)
    N = batch.B * batch.n
    s = batch.supplies
    a = torch.zeros(N, dtype=torch.float64, device=dev)
    b = torch.zeros(N, dtype=torch.float64, device=dev)
    # q⁰ = max(τ, τ + s) with τ = d (Alg. 1), so y = q + d.
    y = torch.clamp(s, min=0) + 2 * cfg.virtual_flow
    y_minus_s = y - s
    schedule = cfg.schedule()
    iterations = 0
    stages: list[dict[str, Any]] = []
    stopped = "converged"
    last_report = started
    eps = schedule[0]

    def primal(P: torch.Tensor) -> torch.Tensor:
        return (P * batch.costs).view(batch.B, batch.m).sum(dim=1)

    step = _Stepper(kern, cfg, dev)
    for stage, eps in enumerate(schedule):
        last = stage == len(schedule) - 1
        tol = cfg.tol if last else cfg.stage_tol
        stage_iters = 0
        # The q step leaves a and b alone, so the out-mass it used serves the next row step.
        A = kern.out_mass(kern.flow(a, b, eps))
        while stage_iters < cfg.max_stage_iterations:
            k = min(cfg.check_every - stage_iters % cfg.check_every,
                    cfg.max_stage_iterations - stage_iters)
            a, b, y, y_minus_s, A, P, err = step(a, b, y, y_minus_s, A, eps, k)
            stage_iters += k
            iterations += k
            # checked every check_every iterations and at the stage's last one, so a stage
            # shorter than check_every still hears its deadline and cancel flag
            if stage_iters % cfg.check_every and stage_iters < cfg.max_stage_iterations:
                continue
            worst = float(err.max())
            now = time.perf_counter()
            if progress is not None and now - last_report >= progress_every_s:
                last_report = now
                progress({"iterations": iterations, "eps": eps, "error": worst,
                          "primal_cost": float(primal(P)[0]) * batch.cost_scale[0]
                          * batch.flow_scale[0]})
            if worst < tol:
                break
            if cancelled is not None and cancelled():
                stopped = "cancelled"
                break
            if deadline is not None and now >= deadline:
                stopped = "time_limit"
                break
        else:
            if last:
                stopped = "max_iterations"
        P = kern.flow(a, b, eps)
        err = kern.errors(P)
        stages.append({"eps": eps, "iterations": stage_iters, "error": float(err.max())})
        if progress is not None:
            last_report = time.perf_counter()
            progress({"iterations": iterations, "eps": eps, "error": float(err.max()),
                      "primal_cost": float(primal(P)[0]) * batch.cost_scale[0]
                      * batch.flow_scale[0], "stage_done": True})
        if stopped in ("cancelled", "time_limit"):
            break

    P = kern.flow(a, b, eps)
    err = kern.errors(P)
    flow = (P.view(batch.B, batch.m).cpu().numpy()) * batch.flow_scale[:, None]
    cs = batch.cost_scale[:, None]
    return SinkhornResult(
        row_potentials=a.view(batch.B, batch.n).cpu().numpy() * cs,
        col_potentials=b.view(batch.B, batch.n).cpu().numpy() * cs,
        flow=flow,
        marginal_error=err.cpu().numpy(),
        primal_cost=primal(P).cpu().numpy() * batch.cost_scale * batch.flow_scale,
        iterations=iterations,
        eps_schedule=[st["eps"] for st in stages],
        final_eps=eps * batch.cost_scale,
        stages=stages,
        stopped=stopped,
        wall_time=time.perf_counter() - started,
    )
