"""PolyNet (Hottung, Mahajan, Tierney, ICLR 2025) on the ReLD decoder.

PolyNet learns K complementary solution strategies in one model: the decoder's query g gets a
residual block conditioned on a strategy bit vector z (one of the K distinct binary vectors of
length ⌈log₂K⌉), g ← g + W₂·ReLU(W₁·[g; z]). Here the block sits right after ReLD's
feed-forward layer on the query (the same place ReLD adds its own residual MLP), through the
``refine`` hook of ``ReLDModel``, so nothing of ReLD's step is copied. W₂ starts at zero, so a
freshly built PolyNet carrying its ReLD parent's weights decodes exactly like the parent; the
strategies only diverge through best-of-K training.

CVRPTW (``problem="cvrptw"``, which ReLD itself does not model): customers are embedded from
(x, y, demand/capacity, earliest, latest, service), the depot from (x, y, horizon end), and the
context carries the current time beside the remaining load, all times in the same unit as the
normalized coordinates (travel time = distance). ``from_reld`` warm-starts it from a CVRP
ReLD model with the time columns zero, so at first it decodes like the CVRP parent (the
environment's masks keep it feasible) and learns to read the windows while training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from models.reld import DecoderCache, ReLDConfig, ReLDModel


@dataclass(frozen=True)
class PolyNetConfig(ReLDConfig):
    """ReLD's architecture plus the number of strategies and the block's hidden width."""

    strategies: int = 128
    poly_hidden: int = 256

    @property
    def bits(self) -> int:
        return max(1, math.ceil(math.log2(self.strategies)))


def strategy_bits(strategies: int, count: int | None = None,
                  device: torch.device | str | None = None) -> torch.Tensor:
    """(count, ⌈log₂ strategies⌉) float 0/1 vectors: row m is the binary code of strategy
    m mod ``strategies`` (more trajectories than strategies tile them cyclically)."""
    bits = max(1, math.ceil(math.log2(strategies)))
    ids = torch.arange(count if count is not None else strategies, device=device) % strategies
    powers = 2 ** torch.arange(bits - 1, -1, -1, device=device)
    return ((ids[:, None] // powers) % 2).float()


class PolyNetModel(ReLDModel):
    """A ReLD model whose decoder query passes through the strategy-conditioned block."""

    config: PolyNetConfig

    def __init__(self, config: PolyNetConfig) -> None:
        tw = config.problem == "cvrptw"
        super().__init__(replace(config, problem="cvrp") if tw else config)
        self.config = config
        d = config.dim
        if tw:
            self.embed_depot = nn.Linear(3, d)  # x, y, horizon end
            self.embed_node = nn.Linear(6, d)  # x, y, demand, earliest, latest, service
            self.context = nn.Linear(d + 2, d, bias=False)  # last node, load, time
            self.identity_extra = nn.Linear(2, d, bias=False)  # W_idt · (load, time)
        self.poly = nn.Sequential(nn.Linear(d + config.bits, config.poly_hidden), nn.ReLU(),
                                  nn.Linear(config.poly_hidden, d))
        nn.init.zeros_(self.poly[2].weight)
        nn.init.zeros_(self.poly[2].bias)

    @classmethod
    def from_reld(cls, parent: ReLDModel, strategies: int = 128, poly_hidden: int = 256,
                  problem: str | None = None) -> PolyNetModel:
        """A PolyNet carrying ``parent``'s weights and a fresh, zero-output block.

        ``problem="cvrptw"`` from a CVRP parent: the parent's input layers are copied into
        the wider ones, the columns for the time features start at zero."""
        base = parent.config
        problem = problem or base.problem
        if problem != base.problem and (problem, base.problem) != ("cvrptw", "cvrp"):
            raise ValueError(f"cannot warm-start a {problem} PolyNet from a {base.problem} model")
        config = PolyNetConfig(problem=problem, dim=base.dim, layers=base.layers,
                               heads=base.heads, hidden=base.hidden, clip=base.clip,
                               strategies=strategies, poly_hidden=poly_hidden)
        model = cls(config)
        state = parent.state_dict()
        if problem == "cvrptw":
            own = model.state_dict()
            for name in ("embed_depot.weight", "embed_node.weight", "context.weight",
                         "identity_extra.weight"):
                wide = torch.zeros_like(own[name])
                wide[:, :state[name].shape[1]] = state[name]
                state[name] = wide
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all(k.startswith("poly.") for k in missing), missing
        return model.to(next(parent.parameters()).device)

    def single_strategy(self, strategy: int) -> PolyNetModel:
        """A one-strategy copy (K=1) that decodes exactly as strategy ``strategy`` does here.

        With z fixed, W₁·[g; z] + b₁ = W₁ᵍ·g + (b₁ + W₁ᶻ·z): the strategy folds into the
        block's bias, leaving a plain residual layer on the query. This is the
        single-strategy model of PolyNet's ablation: the ``reld`` solver's CVRPTW model starts
        from it (ReLD itself has no time windows)."""
        K = self.config.strategies
        if not 0 <= strategy < K:
            raise ValueError(f"strategy {strategy} is not in 0..{K - 1}")
        config = replace(self.config, strategies=1)
        single = type(self)(config).to(next(self.parameters()).device)
        state = {k: v.clone() for k, v in self.state_dict().items()}
        d = self.config.dim
        first = state["poly.0.weight"]
        z = strategy_bits(K, device=first.device)[strategy]
        state["poly.0.bias"] = state["poly.0.bias"] + first[:, d:] @ z
        weight = torch.zeros(first.shape[0], d + config.bits, dtype=first.dtype,
                             device=first.device)
        weight[:, :d] = first[:, :d]
        state["poly.0.weight"] = weight
        single.load_state_dict(state)
        return single.train(self.training)

    def encode(self, coords: torch.Tensor, demand: torch.Tensor | None = None,
               times: torch.Tensor | None = None,
               pad: torch.Tensor | None = None) -> DecoderCache:
        """As ReLD's; CVRPTW also needs ``times`` (B, N, 3): earliest, latest and service
        time of every node (the depot's latest is the horizon end)."""
        if self.config.problem != "cvrptw":
            return super().encode(coords, demand, pad)
        assert demand is not None and times is not None
        depot = self.embed_depot(torch.cat([coords[:, :1], times[:, :1, 1:2]], dim=-1))
        rest = self.embed_node(torch.cat([coords[:, 1:], demand[:, 1:, None], times[:, 1:]],
                                         dim=-1))
        return self.encode_embedded(torch.cat([depot, rest], dim=1), pad)

    def refine(self, g: torch.Tensor, strategy: torch.Tensor | None) -> torch.Tensor:
        """g + MLP([g; z]); ``strategy`` is (M, bits) or (B, M, bits) for g (B, M, d).

        Without a strategy the block is skipped (the parent's decoder)."""
        if strategy is None:
            return g
        z = strategy.to(g.dtype)
        if z.dim() == 2:
            z = z[None]
        z = z.expand(g.shape[0], *z.shape[1:])
        return g + self.poly(torch.cat([g, z], dim=-1))
