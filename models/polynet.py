"""PolyNet (Hottung, Mahajan, Tierney, ICLR 2025) on the ReLD decoder.

PolyNet learns K complementary solution strategies in one model: the decoder's query g gets a
residual block conditioned on a strategy bit vector z (one of the K distinct binary vectors of
length ⌈log₂K⌉), g ← g + W₂·ReLU(W₁·[g; z]). Here the block sits right after ReLD's
feed-forward layer on the query (the same place ReLD adds its own residual MLP), through the
``refine`` hook of ``ReLDModel``, so nothing of ReLD's step is copied. W₂ starts at zero, so a
freshly built PolyNet carrying its ReLD parent's weights decodes exactly like the parent; the
strategies only diverge through best-of-K training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from models.reld import ReLDConfig, ReLDModel


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
        super().__init__(config)
        d = config.dim
        self.poly = nn.Sequential(nn.Linear(d + config.bits, config.poly_hidden), nn.ReLU(),
                                  nn.Linear(config.poly_hidden, d))
        nn.init.zeros_(self.poly[2].weight)
        nn.init.zeros_(self.poly[2].bias)

    @classmethod
    def from_reld(cls, parent: ReLDModel, strategies: int = 128,
                  poly_hidden: int = 256) -> PolyNetModel:
        """A PolyNet carrying ``parent``'s weights and a fresh, zero-output block."""
        base = parent.config
        config = PolyNetConfig(problem=base.problem, dim=base.dim, layers=base.layers,
                               heads=base.heads, hidden=base.hidden, clip=base.clip,
                               strategies=strategies, poly_hidden=poly_hidden)
        model = cls(config)
        missing, unexpected = model.load_state_dict(parent.state_dict(), strict=False)
        assert not unexpected and all(k.startswith("poly.") for k in missing), missing
        return model.to(next(parent.parameters()).device)

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
