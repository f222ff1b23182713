"""Options of the flow solvers, kept free of torch so that importing them stays cheap."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SinkhornSettings:
    """The ε schedule and stopping rules (ε relative to the largest |cost|)."""

    eps_start: float = 1.0
    eps_end: float = 1e-3
    eps_decay: float = 0.5
    #: L1 imbalance (fraction of the total supply) that ends an intermediate stage …
    stage_tol: float = 1e-3
    #: … and the last stage.
    tol: float = 1e-5
    max_stage_iterations: int = 5000
    check_every: int = 10
    #: The paper's virtual self-flow d, as a fraction of the total supply.
    virtual_flow: float = 1e-4
    #: torch intra-op threads while iterating on the CPU (restored afterwards); None leaves
    #: torch's setting. One thread is the default because these small scatter kernels gain
    #: little from more, and on a busy machine torch's spinning threads made an iteration on
    #: 8K arcs 500× slower (113 ms instead of 0.2 ms, measured with 2 threads, load 5 on 2
    #: cores).
    cpu_threads: int | None = 1
    #: Fuse one iteration's ~35 elementwise and scatter kernels with ``torch.compile`` (a
    #: one-time compile of some seconds; pays off on large batches, where memory traffic
    #: bounds an iteration).
    compile: bool = False
    #: On CUDA, record ``check_every`` iterations as one CUDA graph and replay it: small
    #: batches are bound by kernel launches, not by the GPU (3× faster for 1,000 networks of
    #: 100 nodes on an H200, benchmarks/results/flow_gpu.md). Ignored on the CPU.
    cuda_graph: bool = True

    def __post_init__(self) -> None:
        if self.check_every < 1 or self.max_stage_iterations < 1:
            raise ValueError("check_every and max_stage_iterations must be at least 1")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise ValueError("cpu_threads must be at least 1 (or None)")

    def schedule(self) -> list[float]:
        """The ε values of the stages, from ``eps_start`` down to exactly ``eps_end``."""
        if not (0 < self.eps_end <= self.eps_start and 0 < self.eps_decay < 1):
            raise ValueError("need 0 < eps_end <= eps_start and 0 < eps_decay < 1")
        out = [self.eps_start]
        while out[-1] > self.eps_end * (1 + 1e-12):
            out.append(max(out[-1] * self.eps_decay, self.eps_end))
        return out



@dataclass(frozen=True)
class FlowOptions:
    """What a caller may ask of a flow solver beyond the Budget.

    ``tolerance`` is the relative optimality gap (certified by a dual bound) the answer may
    keep: 0 asks for a proven optimum. Exact solvers always return one.
    """

    tolerance: float = 0.0
    sinkhorn: SinkhornSettings = field(default_factory=SinkhornSettings)

    def __post_init__(self) -> None:
        if not 0.0 <= self.tolerance < 1.0:
            raise ValueError("tolerance must be in [0, 1)")
