"""SIL: a decoder-only Transformer whose attention runs through a few representative tokens.

LEHD-style models re-run full self-attention over every unvisited node at each decoding step
(quadratic per step). SIL keeps the decoding formulation but lets R representative tokens
(one map of the destination node, R-1 maps of the current node) attend to the candidates and
the candidates attend back to them, so one step costs O(R·m) for m candidates. There is no
encoder: a linear embedding of each node feeds the decoder directly.

TSP head: one logit per candidate. CVRP head: two logits per candidate, "go there directly"
and "go there via the depot", with the remaining capacity concatenated to the destination and
current-node embeddings before their maps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from models.layers import FeedForward, MultiHeadAttention


@dataclass(frozen=True)
class SILConfig:
    problem: str = "tsp"
    dim: int = 128
    layers: int = 6
    heads: int = 8
    hidden: int = 512
    reps: int = 16

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def node_features(self) -> int:
        """(x, y) for TSP; (x, y, demand/capacity) for CVRP."""
        return 2 if self.problem == "tsp" else 3


class CrossModule(nn.Module):
    """Representatives read the candidates, then the candidates read the representatives."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.att_rep = MultiHeadAttention(dim, heads)
        self.ff_rep = FeedForward(dim, hidden)
        self.att_cand = MultiHeadAttention(dim, heads)
        self.ff_cand = FeedForward(dim, hidden)

    def forward(self, rep: torch.Tensor, cand: torch.Tensor,
                kv_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        both = torch.cat([rep, cand], dim=1)
        rep = rep + self.att_rep(rep, both, kv_mask)
        rep = rep + self.ff_rep(rep)
        cand = cand + self.att_cand(cand, rep)
        cand = cand + self.ff_cand(cand)
        return rep, cand


class SILModel(nn.Module):
    def __init__(self, config: SILConfig) -> None:
        super().__init__()
        if config.problem not in ("tsp", "cvrp"):
            raise ValueError(f"SIL solves tsp or cvrp, not {config.problem!r}")
        if config.reps < 2:
            raise ValueError("SIL needs at least two representative tokens")
        self.config = config
        d = config.dim
        context = d + (1 if config.problem == "cvrp" else 0)
        self.embed = nn.Linear(config.node_features, d)
        self.first_map = nn.Linear(context, d)
        self.last_maps = nn.Linear(context, d * (config.reps - 1))
        self.blocks = nn.ModuleList(
            CrossModule(d, config.heads, config.hidden) for _ in range(config.layers))
        self.head = nn.Linear(d, 1 if config.problem == "tsp" else 2)

    def embed_nodes(self, features: torch.Tensor) -> torch.Tensor:
        """(B, n, features) -> (B, n, dim)."""
        return self.embed(features)

    def forward(self, first: torch.Tensor, last: torch.Tensor, cand: torch.Tensor,
                capacity: torch.Tensor | None = None,
                pad: torch.Tensor | None = None) -> torch.Tensor:
        """Logits over the candidates for the next node.

        first, last: (B, dim) embeddings of the destination and current node; cand: (B, m, dim);
        capacity: (B,) remaining capacity / C (CVRP); pad: (B, m) True where a candidate slot is
        padding. Returns (B, m) for TSP, (B, m, 2) for CVRP ([direct, via depot]); padded
        slots get -inf.
        """
        if self.config.problem == "cvrp":
            if capacity is None:
                raise ValueError("a CVRP step needs the remaining capacity")
            cap = capacity.to(first.dtype).unsqueeze(-1)
            first = torch.cat([first, cap], dim=-1)
            last = torch.cat([last, cap], dim=-1)
        b = first.shape[0]
        rep = torch.cat([self.first_map(first).unsqueeze(1),
                         self.last_maps(last).view(b, self.config.reps - 1, -1)], dim=1)
        kv_mask = None
        if pad is not None:
            keep = torch.cat([torch.ones(b, rep.shape[1], dtype=torch.bool, device=pad.device),
                              ~pad], dim=1)
            kv_mask = keep[:, None, None, :]
        x = cand
        for block in self.blocks:
            rep, x = block(rep, x, kv_mask)
        logits = self.head(x)
        if self.config.problem == "tsp":
            logits = logits.squeeze(-1)
        if pad is not None:
            fill = pad if logits.dim() == 2 else pad.unsqueeze(-1)
            logits = logits.masked_fill(fill, float("-inf"))
        return logits
